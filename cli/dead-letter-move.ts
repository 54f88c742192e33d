import {
  DeleteMessageBatchCommand,
  type Message,
  type MessageAttributeValue,
  SendMessageBatchCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { sqsMessageBytes } from '../lambdas/common/message-size.js';
import { groupingFor, isFifoQueueUrl } from '../lambdas/common/queue-type.js';
import { awsTraceHeaderOf } from '../lambdas/common/trace-context.js';
import { chunkByCountAndBytes, chunkOnePerGroup, MAX_BATCH_ENTRIES } from '../lambdas/publisher/batching.js';
import { describeGroup, groupOf } from './dead-letter-sweep.js';
import { RedriveInterruptedError } from './operations-errors.js';

/** SQS's limit on a batch's messages together, bodies and attributes: 1 MiB, as one message (docs/capacity.md). */
const BATCH_BYTES = 1024 * 1024;

export interface MovedBatch {
  /** DLQ message ids of the messages moved: sent to the queue, then deleted from the DLQ. */
  deleted: ReadonlySet<string>;
  /** The queue message ids they were sent as. */
  sentIds: string[];
}

/**
 * Sends `messages` (at most 10, in the order the DLQ handed them out) to the queue with
 * SendMessageBatch, one message of a group per call on a FIFO queue (`bySize`), then deletes them
 * from the DLQ with DeleteMessageBatch. The calls go one after the other.
 *
 * A message is deleted only once it is on the queue, and only if every earlier message of its group
 * is too: so a failure leaves each group's rest in the DLQ, in order. A message sent whose delete
 * failed, or whose send was applied but its answer lost, is in both queues: the consumer drops the
 * second copy by its key, and SQS drops a re-send within 5 minutes (the deduplication id names the
 * DLQ message). Any failure then stops the redrive with RedriveInterruptedError.
 *
 * To a standard queue (DESIGN §5.1) a message goes without a deduplication id, which SQS refuses
 * there, and with its group only when it has one (a fair queue's tenant key); with no order to
 * keep, every message sent is deleted. A re-send is then a second copy, for the consumer to drop.
 */
export async function moveInOrder(
  sqs: SQSClient,
  queues: { queueUrl: string; dlqUrl: string },
  messages: Message[],
  movedSoFar: number,
  attributesOf: (message: Message) => Record<string, MessageAttributeValue>,
): Promise<MovedBatch> {
  const sent = new Map<string, string>();
  let failure: { message: Message; cause: unknown } | undefined;
  for (const part of bySize(messages, queues.queueUrl, attributesOf)) {
    try {
      const { Successful = [], Failed = [] } = await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queues.queueUrl,
          Entries: part.map(({ entry }) => entry),
        }),
      );
      for (const { Id, MessageId } of Successful)
        sent.set(String(part[Number(Id)]?.message.MessageId), String(MessageId));
      const [first] = Failed.map(({ Id, Code, Message: reason }) => ({
        message: part[Number(Id)]?.message as Message,
        cause: new Error(`${Code}: ${reason}`),
      })).sort((a, b) => messages.indexOf(a.message) - messages.indexOf(b.message));
      failure = first;
    } catch (cause) {
      failure = { message: part[0]?.message as Message, cause };
    }
    if (failure) break;
  }
  const deletable = isFifoQueueUrl(queues.queueUrl)
    ? inOrderPrefix(messages, sent)
    : messages.filter((message) => sent.has(String(message.MessageId)));
  const deletes = await deleteAll(sqs, queues.dlqUrl, deletable);
  const deleted = new Set(
    deletable.map((message) => String(message.MessageId)).filter((id) => !deletes.notDeleted.has(id)),
  );
  const deleteFailure = deletes.failure;
  const stop = failure
    ? { ...failure, step: 'sending' }
    : deleteFailure
      ? { ...deleteFailure, step: 'deleting' }
      : undefined;
  if (stop) {
    const moved = movedSoFar + deleted.size;
    const sentOnly = sent.size - deleted.size;
    const alsoSent = sentOnly > 0 ? `, and sending ${sentOnly} more that may still be in the DLQ` : '';
    throw new RedriveInterruptedError(
      `The redrive stopped after moving ${moved} messages${alsoSent}: ${stop.step} message ${stop.message.MessageId} (` +
        `${describeGroup(groupOf(stop.message))}) failed (${String(stop.cause)}). What was not moved is still in the DLQ, each group ` +
        'in order: run `oncely dlq redrive` again (a message moved twice is recognised by its key).',
      { cause: stop.cause },
    );
  }
  return { deleted, sentIds: [...sent.values()] };
}

/** The sent messages no unsent message of their group comes before. */
function inOrderPrefix(messages: Message[], sent: Map<string, string>): Message[] {
  const broken = new Set<string>();
  return messages.filter((message) => {
    const group = groupOf(message);
    if (!sent.has(String(message.MessageId))) broken.add(group);
    return !broken.has(group);
  });
}

/**
 * Deletes from the DLQ: the ids of the messages not deleted (all of them when the call failed:
 * perhaps deleted, and then harmless to send again), and the first failure, if any.
 */
async function deleteAll(
  sqs: SQSClient,
  dlqUrl: string,
  messages: Message[],
): Promise<{ notDeleted: ReadonlySet<string>; failure?: { message: Message; cause: unknown } }> {
  if (messages.length === 0) return { notDeleted: new Set() };
  try {
    const { Failed = [] } = await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: dlqUrl,
        Entries: messages.map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
    const failed = Failed.map(({ Id, Code, Message: reason }) => ({
      message: messages[Number(Id)] as Message,
      cause: new Error(`${Code}: ${reason}`),
    }));
    return {
      notDeleted: new Set(failed.map(({ message }) => String(message.MessageId))),
      failure: failed[0],
    };
  } catch (cause) {
    return {
      notDeleted: new Set(messages.map((message) => String(message.MessageId))),
      failure: { message: messages[0] as Message, cause },
    };
  }
}

/**
 * The messages as batch entries, cut into batches within SQS's size limit. To a FIFO queue a batch
 * carries at most one message of each group (`chunkOnePerGroup`, as the publisher sends): SQS may
 * fail an earlier message of a group and accept a later one in the same call, and nothing could
 * then put the earlier one first again. To a standard queue, in order, as many as fit.
 */
function bySize(
  messages: Message[],
  queueUrl: string,
  attributesOf: (message: Message) => Record<string, MessageAttributeValue>,
): { message: Message; entry: SendMessageBatchRequestEntry }[][] {
  const items = messages.map((message) => {
    const attributes = attributesOf(message);
    return {
      message,
      attributes,
      groupId: groupOf(message),
      bytes: sqsMessageBytes(message.Body ?? '', attributes),
    };
  });
  const limits = { maxEntries: MAX_BATCH_ENTRIES, maxBytes: BATCH_BYTES };
  const batches = isFifoQueueUrl(queueUrl)
    ? chunkOnePerGroup(items, limits)
    : chunkByCountAndBytes(items, limits);
  return batches.map((batch) =>
    batch.map(({ message, attributes, groupId }, index) => ({
      message,
      entry: {
        Id: String(index),
        MessageBody: message.Body,
        ...groupingFor(queueUrl, groupId, `redriven-${message.MessageId}`),
        MessageAttributes: attributes,
        // The producer's X-Ray context goes back with it (DESIGN §6), as SQS's own redrive keeps it.
        ...awsTraceHeaderOf(message.Attributes?.AWSTraceHeader),
      },
    })),
  );
}
