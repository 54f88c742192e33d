import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll } from 'vitest';
import { createTable, localDynamoClient } from './dynamodb.js';
import { createQueueWithDlq, deleteQueues, type FifoQueue, localSqsClient } from './sqs.js';

/** The emulators as one consumer test file uses them: set before its first test runs. */
export interface ConsumerTestWorld {
  dynamodb: DynamoDBClient;
  sqs: SQSClient;
  /** The file's tables, one per prefix given, in that order. */
  tables: string[];
  /** A queue and its DLQ of the test's own (visibility timeout 3 s, so a busy machine's slow run still ends within it, and 5 receives unless told). */
  queuePair(options?: {
    visibilityTimeoutSeconds?: number;
    maxReceiveCount?: number;
  }): Promise<{ queue: FifoQueue; dlq: FifoQueue }>;
  /** Queues the test made itself, to be deleted with the others. */
  own(...queues: FifoQueue[]): void;
}

/**
 * Registers the hooks of a consumer test file against the SQS emulator and DynamoDB Local: before
 * its tests, a client of each and a table per prefix; after them, every queue it handed out
 * deleted and the clients closed. Each test takes queues of its own, so the tests may run at once.
 */
export function consumerTestWorld(...tablePrefixes: string[]): ConsumerTestWorld {
  const queues: FifoQueue[] = [];
  const world: ConsumerTestWorld = {
    dynamodb: undefined as unknown as DynamoDBClient,
    sqs: undefined as unknown as SQSClient,
    tables: [],
    async queuePair({ visibilityTimeoutSeconds = 3, maxReceiveCount = 5 } = {}) {
      const pair = await createQueueWithDlq(world.sqs, { visibilityTimeoutSeconds, maxReceiveCount });
      queues.push(pair.queue, pair.dlq);
      return pair;
    },
    own: (...owned) => queues.push(...owned),
  };
  beforeAll(async () => {
    world.dynamodb = localDynamoClient();
    world.sqs = localSqsClient();
    world.tables = await Promise.all(tablePrefixes.map((prefix) => createTable(world.dynamodb, prefix)));
  });
  afterAll(async () => {
    await deleteQueues(world.sqs, queues);
    world.sqs.destroy();
    world.dynamodb.destroy();
  });
  return world;
}
