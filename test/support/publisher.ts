import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteQueueCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, beforeEach } from 'vitest';
import { deriveMessageKey } from '../../lambdas/common/message-key.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { PublishMessage } from '../../lambdas/publisher/contract.js';
import { DEFAULT_QUEUE_MAX_MESSAGE_BYTES } from '../../lambdas/publisher/environment.js';
import { createPublisherHandler, type PublisherOptions } from '../../lambdas/publisher/handler.js';
import { createTable, localDynamoClient } from './dynamodb.js';
import { createFifoQueue, createStandardQueue, localSqsClient } from './sqs.js';

/** Retries without real waiting, so tests of retries stay fast. */
export const FAST_RETRY = { maxAttempts: 5, baseDelayMs: 1, maxDelayMs: 4 };

/**
 * The client's retries for a test that publishes through a sandbox's publisher function. Its
 * defaults wait 1.5 s at most in all; a machine busy with other work (CI) has kept the sandbox's
 * DynamoDB Local slower than the publisher's 1 s store timeout for longer than that. These wait 16
 * to 31 s. A failure that is not retryable still fails at once.
 */
export const BUSY_MACHINE_RETRY = { maxAttempts: 12, baseDelayMs: 100, maxDelayMs: 5_000 };

/**
 * `count` order messages spread over `groups` groups in a scrambled, fixed order; every other one
 * has no key, so its key is derived (DESIGN §2).
 */
export function orders(count: number, groups: number, prefix = 'order'): PublishMessage[] {
  return Array.from({ length: count }, (_, i) => ({
    type: 'OrderPlaced',
    groupId: `customer-${(i * 37 + Math.floor(i / 7)) % groups}`,
    ...(i % 2 === 0 ? { key: `${prefix}-${i}` } : {}),
    payload: { seq: i, amountCents: 100 + i },
  }));
}

/** The item at `index`, which the test knows is there. */
export function nth<T>(items: readonly T[], index: number): T {
  const item = items[index];
  if (item === undefined) throw new Error(`no item at index ${index} of ${items.length}`);
  return item;
}

export function expectedKey(message: PublishMessage): string {
  return message.key ?? deriveMessageKey(message);
}

/** The keys of one group's messages, in request order. */
export function requestedKeysOfGroup(messages: readonly PublishMessage[], groupId: string): string[] {
  return messages.filter((message) => message.groupId === groupId).map(expectedKey);
}

export interface PublisherFixture {
  sqs: SQSClient;
  dynamodb: DynamoDBClient;
  queueUrl: string;
  table: string;
  store: DynamoDBIdempotencyStore;
  /** A publisher on the fixture's queue and table; options override the test defaults. */
  publisher(options?: Partial<PublisherOptions>): ReturnType<typeof createPublisherHandler>;
}

/**
 * A fresh queue — FIFO, or standard with `{ standard: true }` — idempotency table and clients for
 * every test of the calling file.
 */
export function usePublisherFixture(options: { standard?: boolean } = {}): PublisherFixture {
  const fixture = {} as PublisherFixture;
  beforeEach(async () => {
    const sqs = localSqsClient(1);
    const dynamodb = localDynamoClient();
    const [queueUrl, table] = await Promise.all([
      (options.standard ? createStandardQueue(sqs) : createFifoQueue(sqs)).then((queue) => queue.url),
      createTable(dynamodb, 'publish'),
    ]);
    const store = new DynamoDBIdempotencyStore({ client: dynamodb, tableName: table });
    Object.assign(fixture, {
      sqs,
      dynamodb,
      queueUrl,
      table,
      store,
      publisher: (options: Partial<PublisherOptions> = {}) =>
        createPublisherHandler({
          sqs,
          queueUrl,
          maxMessageBytes: DEFAULT_QUEUE_MAX_MESSAGE_BYTES,
          store,
          retry: FAST_RETRY,
          cache: false,
          ...options,
        }),
    });
  });
  afterEach(async () => {
    await fixture.sqs.send(new DeleteQueueCommand({ QueueUrl: fixture.queueUrl }));
    fixture.sqs.destroy();
    fixture.dynamodb.destroy();
  });
  return fixture;
}
