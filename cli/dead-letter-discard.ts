import { createHash } from 'node:crypto';
import {
  DeleteItemCommand,
  type DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, type Message, type SQSClient } from '@aws-sdk/client-sqs';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../lambdas/common/envelope.js';
import { DLQ_ATTRIBUTES } from '../lambdas/consumer/dead-letter-queue.js';
import type { PipelineResources } from '../lib/constructs/pipeline-outputs.js';
import { changeVisibility, groupOf, sweepDeadLetters } from './dead-letter-sweep.js';
import { DiscardInterruptedError } from './operations-errors.js';

/** The idempotency table item that records a discarded DLQ message. */
export const DISCARDED_ID_PREFIX = 'oncely/discarded#';

export interface DiscardedDeadLetter {
  messageId: string;
  groupId: string;
  key?: string;
  /** The id of its record in the idempotency table. */
  recordId: string;
}

export interface DiscardResult {
  discarded: DiscardedDeadLetter[];
  /** Ids not in the DLQ whose discard record exists: discarded before (a repeat, or another operator). */
  alreadyDiscarded: string[];
  /**
   * Ids neither found in the DLQ nor discarded before: in flight elsewhere (see `hidden`), behind
   * other messages of their group, redriven, gone with the DLQ's retention, or never there.
   */
  notFound: string[];
  /** Messages in flight elsewhere (another operator's redrive or listing) when the search ended. */
  hidden: number;
}

export interface DiscardOptions {
  /**
   * How long to look for the messages while others hold some in flight.
   * @default 60_000
   */
  timeoutMs?: number;
}

/** A body longer than this is kept cut in its record (with its length and hash): a DynamoDB item holds 400 KB. */
const KEPT_BODY_BYTES = 350_000;
export const DEFAULT_DISCARD_TIMEOUT_MS = 60_000;
const DISCARD_VISIBILITY_TIMEOUT_SECONDS = 60;

/**
 * Deletes these DLQ messages for good: the ones a redrive leaves in place because they are past the
 * dedup horizon, or any other an operator decided never to run. Each is first recorded in the
 * idempotency table (`oncely/discarded#<message id>`: its body, group, key, the DLQ's reason and the
 * operator's), then deleted: a run killed in between leaves the message and its record, and a
 * second run writes the same record again and deletes it. A message is found by receiving, so it
 * must be among the first 10 of its group (a message left in place by a redrive is at its head).
 */
export async function discardDeadLetters(
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  resources: Pick<PipelineResources, 'dlqUrl' | 'idempotencyTableName'>,
  messageIds: readonly string[],
  reason: string,
  options: DiscardOptions = {},
): Promise<DiscardResult> {
  const wanted = new Set(messageIds);
  const discarded: DiscardedDeadLetter[] = [];
  const sweep = await sweepDeadLetters(clients.sqs, resources.dlqUrl, {
    deadline: Date.now() + (options.timeoutMs ?? DEFAULT_DISCARD_TIMEOUT_MS),
    visibilitySeconds: DISCARD_VISIBILITY_TIMEOUT_SECONDS,
    done: () => discarded.length === wanted.size,
    handle: async (messages) => {
      const received = messages.filter((message) => wanted.has(String(message.MessageId)));
      if (received.length === 0) return new Set();
      for (const message of received) {
        await clients.dynamodb.send(
          new PutItemCommand({ TableName: resources.idempotencyTableName, Item: recordOf(message, reason) }),
        );
      }
      const chosen = await stillHeld(clients, resources, received);
      if (chosen.length === 0) return new Set();
      const { Failed = [] } = await clients.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: resources.dlqUrl,
          Entries: chosen.map((message, index) => ({
            Id: String(index),
            ReceiptHandle: message.ReceiptHandle,
          })),
        }),
      );
      if (Failed.length > 0) {
        throw new DiscardInterruptedError(
          `Deleting ${Failed.length} recorded messages from the DLQ failed (${Failed[0]?.Code}: ${Failed[0]?.Message}). ` +
            'Their records are written: run `oncely dlq discard` again with the same ids.',
        );
      }
      for (const message of chosen) discarded.push(discardedOf(message));
      return new Set(chosen.map((message) => String(message.MessageId)));
    },
  });
  const found = new Set(discarded.map((message) => message.messageId));
  const missing = messageIds.filter((id) => !found.has(id));
  // Not in the DLQ does not mean discarded: only a record says so.
  const recorded = await Promise.all(missing.map((id) => hasDiscardRecord(clients.dynamodb, resources, id)));
  return {
    discarded,
    alreadyDiscarded: missing.filter((_, i) => recorded[i]),
    notFound: missing.filter((_, i) => !recorded[i]),
    hidden: sweep.hidden,
  };
}

/**
 * The messages still held under this receive's handles, their hold renewed: records written slowly
 * may outlast it, and another receive then replaces the handle — with which a delete on a standard
 * queue succeeds without deleting. The records of the others are taken back, since a record says
 * a message is discarded; those messages are found again, or reported not found.
 */
async function stillHeld(
  clients: { sqs: SQSClient; dynamodb: DynamoDBClient },
  resources: Pick<PipelineResources, 'dlqUrl' | 'idempotencyTableName'>,
  messages: Message[],
): Promise<Message[]> {
  const refused = await changeVisibility(
    clients.sqs,
    resources.dlqUrl,
    messages.map((message) => String(message.ReceiptHandle)),
    DISCARD_VISIBILITY_TIMEOUT_SECONDS,
  );
  const lost = new Set([...refused].map((index) => messages[index]));
  for (const message of lost) {
    if (!message) continue;
    await clients.dynamodb
      .send(
        new DeleteItemCommand({
          TableName: resources.idempotencyTableName,
          Key: { id: { S: `${DISCARDED_ID_PREFIX}${message.MessageId}` } },
        }),
      )
      .catch((cause: unknown) => {
        throw new DiscardInterruptedError(
          `Message ${message.MessageId} was received by another meanwhile and is still in the DLQ, but its ` +
            `record ${DISCARDED_ID_PREFIX}${message.MessageId} could not be taken back (${String(cause)}): ` +
            'run `oncely dlq discard` again with the same ids.',
          { cause },
        );
      });
  }
  return messages.filter((message) => !lost.has(message));
}

async function hasDiscardRecord(
  dynamodb: DynamoDBClient,
  resources: Pick<PipelineResources, 'idempotencyTableName'>,
  messageId: string,
): Promise<boolean> {
  const { Item } = await dynamodb.send(
    new GetItemCommand({
      TableName: resources.idempotencyTableName,
      Key: { id: { S: `${DISCARDED_ID_PREFIX}${messageId}` } },
      ProjectionExpression: 'id',
      ConsistentRead: true,
    }),
  );
  return Item !== undefined;
}

function discardedOf(message: Message): DiscardedDeadLetter {
  const key = keyOf(message.Body ?? '');
  return {
    messageId: String(message.MessageId),
    groupId: groupOf(message),
    ...(key ? { key } : {}),
    recordId: `${DISCARDED_ID_PREFIX}${message.MessageId}`,
  };
}

function recordOf(message: Message, reason: string) {
  const body = message.Body ?? '';
  const bytes = Buffer.from(body);
  const kept = bytes.length > KEPT_BODY_BYTES ? bytes.subarray(0, KEPT_BODY_BYTES).toString() : body;
  const key = keyOf(body);
  const text = (name: string) => message.MessageAttributes?.[name]?.StringValue;
  const item: Record<string, { S: string } | { N: string }> = {
    id: { S: `${DISCARDED_ID_PREFIX}${message.MessageId}` },
    groupId: { S: groupOf(message) },
    body: { S: kept },
    bodyBytes: { N: String(bytes.length) },
    bodySha256: { S: createHash('sha256').update(bytes).digest('hex') },
    reason: { S: reason },
    discardedAt: { S: new Date().toISOString() },
  };
  if (key) item.key = { S: key };
  const errorName = text(DLQ_ATTRIBUTES.errorName);
  if (errorName) item.errorName = { S: errorName };
  const errorMessage = text(DLQ_ATTRIBUTES.errorMessage);
  if (errorMessage) item.errorMessage = { S: errorMessage };
  return item;
}

function keyOf(body: string): string | undefined {
  try {
    return parseReceivedEnvelope(body).key;
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return undefined;
    throw error;
  }
}
