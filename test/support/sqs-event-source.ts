import { DeleteMessageCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { failedMessageIds, toSqsRecord } from '../../sandbox/sqs-event.js';
import { lambdaContext } from './lambda-context.js';
import type { FifoQueue } from './sqs.js';

export type SqsBatchHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse>;

export interface PollOptions {
  /** The Lambda context of this invocation; 30 s remaining by default. */
  context?: Context;
  /** false: the invocation "dies" after the handler returned, so nothing is deleted. */
  acknowledge?: boolean;
  maxMessages?: number;
  waitTimeSeconds?: number;
}

export interface Poll {
  /** The batch as the handler got it; empty when the receive returned nothing (no invocation then). */
  records: SQSRecord[];
  response?: SQSBatchResponse;
  /** What the handler threw: the whole batch stays on the queue. */
  error?: unknown;
  /** Ids of the messages deleted after the invocation. */
  deleted: string[];
}

/**
 * One poll of Lambda's SQS event source mapping with ReportBatchItemFailures: receive a batch,
 * invoke the handler with it, then delete every record not reported in `batchItemFailures`. A
 * thrown error leaves the whole batch to come back after the visibility timeout.
 */
export async function pollOnce(
  sqs: SQSClient,
  queue: FifoQueue,
  handler: SqsBatchHandler,
  options: PollOptions = {},
): Promise<Poll> {
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: queue.url,
      MaxNumberOfMessages: options.maxMessages ?? 10,
      WaitTimeSeconds: options.waitTimeSeconds ?? 1,
      // Every system attribute, as Lambda's event carries them.
      AttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  const records = Messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION));
  if (records.length === 0) return { records, deleted: [] };

  let response: SQSBatchResponse | undefined;
  try {
    response = await handler({ Records: records }, options.context ?? lambdaContext());
  } catch (error) {
    return { records, error, deleted: [] };
  }
  if (options.acknowledge === false) return { records, response, deleted: [] };
  const failed = failedMessageIds(response, { Records: records });
  const succeeded = failed === 'all' ? [] : records.filter((record) => !failed.has(record.messageId));
  // As the event source mapping: a failed delete (e.g. a stale receipt handle) only means the message comes back.
  const deletes = await Promise.allSettled(
    succeeded.map((record) =>
      sqs.send(new DeleteMessageCommand({ QueueUrl: queue.url, ReceiptHandle: record.receiptHandle })),
    ),
  );
  const deleted = succeeded.filter((_, index) => deletes[index]?.status === 'fulfilled');
  return { records, response, deleted: deleted.map((record) => record.messageId) };
}

/**
 * Polls until `done` says so, or fails after `timeoutMs`: redeliveries come back after the
 * visibility timeout, so tests wait for a condition instead of sleeping.
 */
export async function pollUntil(
  sqs: SQSClient,
  queue: FifoQueue,
  handler: SqsBatchHandler,
  done: (polls: Poll[]) => boolean | Promise<boolean>,
  options: PollOptions & { timeoutMs?: number } = {},
): Promise<Poll[]> {
  const polls: Poll[] = [];
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  while (!(await done(polls))) {
    if (Date.now() > deadline) {
      throw new Error(
        `pollUntil: condition not met after ${polls.length} polls (${options.timeoutMs ?? 60_000} ms)`,
      );
    }
    polls.push(await pollOnce(sqs, queue, handler, options));
  }
  return polls;
}
