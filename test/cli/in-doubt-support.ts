import { randomUUID } from 'node:crypto';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { InDoubtTarget } from '../../cli/in-doubt-records.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { createFifoQueue, createStandardQueue, localSqsClient } from '../support/sqs.js';

/** The record TTL of these tests' pipelines: the deployed default's 19 days. */
export const TTL_SECONDS = 19 * 24 * 3600;

/**
 * A pipeline's in-doubt side on the emulators, with clients of its own (to inject faults into): a
 * fresh idempotency table (with the unresolved index, as the sandbox creates it) and a FIFO queue,
 * or with `{ standard: true }` a standard one (DESIGN §5.1).
 */
export async function inDoubtPipeline(
  options: { standard?: boolean } = {},
): Promise<InDoubtTarget & { close: () => void }> {
  const dynamodb = localDynamoClient();
  const sqs = localSqsClient();
  const idempotencyTableName = await createTable(dynamodb, 'in-doubt');
  const queue = await (options.standard ? createStandardQueue(sqs) : createFifoQueue(sqs));
  return {
    dynamodb,
    sqs,
    resources: { idempotencyTableName, queueUrl: queue.url, idempotencyTtlSeconds: String(TTL_SECONDS) },
    close: () => {
      dynamodb.destroy();
      sqs.destroy();
    },
  };
}

/** A kept envelope as the consumer receives it, published at `publishedAt`. */
export function envelope(key: string, groupId: string, publishedAt = new Date().toISOString()): string {
  return JSON.stringify({ type: 'SendNotification', groupId, key, payload: { n: 1 }, publishedAt });
}

/**
 * Writes a record parked IN_DOUBT as the idempotency core parks it (DESIGN §3): its error, its message
 * kept, in the unresolved index, no expiry while unresolved. `fields` override any of that.
 */
export async function park(
  target: InDoubtTarget,
  key: string,
  fields: Partial<IdempotencyRecord> = {},
): Promise<string> {
  const id = `notifications#${key}-${randomUUID().slice(0, 6)}`;
  const documents = DynamoDBDocumentClient.from(target.dynamodb, {
    marshallOptions: { removeUndefinedValues: true },
  });
  await documents.send(
    new PutCommand({
      TableName: target.resources.idempotencyTableName,
      Item: {
        id,
        status: 'IN_DOUBT',
        unresolved: 'IN_DOUBT',
        payloadHash: 'hash',
        updatedAt: Date.now(),
        attempts: 1,
        error: { name: 'OutcomeUnknownError', message: 'POST /send failed after the request was sent' },
        message: { body: envelope(key, `group-${key}`), groupId: `group-${key}` },
        ...fields,
      },
    }),
  );
  return id;
}
