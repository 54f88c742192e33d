import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import type { InvocationResult } from './lambda-context.js';
import type { LocalEventSource } from './provision.js';
import { failedMessageIds, toSqsRecord } from './sqs-event.js';

/** What happened to one batch, for progress reports and tests. */
export interface BatchReport {
  received: number;
  deleted: number;
  /** Left on the queue: reported failures, or the whole batch after a function error. */
  retained: number;
  functionError?: string;
}

export interface PollerOptions {
  sqs: SQSClient;
  source: LocalEventSource;
  region: string;
  invoke: (event: SQSEvent) => Promise<InvocationResult>;
  onBatch?: (report: BatchReport) => void;
  /** Long-poll wait per receive; short, so that stop() is quick. */
  waitTimeSeconds?: number;
}

/**
 * Runs an SQS event source mapping locally with Lambda's rules: up to `maxConcurrency` pollers,
 * batches of up to `batchSize`, records deleted only after the function succeeded; with
 * ReportBatchItemFailures only the reported records stay, and a response naming a record that is
 * not in the batch fails the whole batch. A function error leaves the whole batch to come back
 * after the visibility timeout. FIFO order is the queue's: a group is blocked while in flight.
 */
export function startEventSourcePoller(options: PollerOptions): { stop: () => Promise<void> } {
  let running = true;
  const loops = Array.from({ length: options.source.maxConcurrency }, async () => {
    while (running) {
      try {
        await pollOnce(options);
      } catch (error) {
        if (running)
          console.error(`[oncely sandbox] polling ${options.source.queue.name} failed: ${String(error)}`);
      }
    }
  });
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

async function pollOnce(options: PollerOptions): Promise<void> {
  const { sqs, source } = options;
  const { Messages = [] } = await sqs.send(
    new ReceiveMessageCommand({
      QueueUrl: source.queue.url,
      MaxNumberOfMessages: source.batchSize,
      WaitTimeSeconds: options.waitTimeSeconds ?? 1,
      AttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  if (Messages.length === 0) return;
  const event: SQSEvent = {
    Records: Messages.map((message) => toSqsRecord(message, source.queue.arn, options.region)),
  };
  const outcome = await options.invoke(event);
  // Without ReportBatchItemFailures, a successful invocation succeeded for every record.
  const failed = !outcome.ok
    ? 'all'
    : source.reportBatchItemFailures
      ? failedMessageIds(outcome.result, event)
      : new Set<string>();
  const done = failed === 'all' ? [] : Messages.filter((message) => !failed.has(String(message.MessageId)));
  for (let i = 0; i < done.length; i += 10) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: source.queue.url,
        Entries: done.slice(i, i + 10).map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
  options.onBatch?.({
    received: Messages.length,
    deleted: done.length,
    retained: Messages.length - done.length,
    functionError: outcome.ok ? undefined : `${outcome.error.errorType}: ${outcome.error.errorMessage}`,
  });
}
