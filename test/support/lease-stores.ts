import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Redis } from 'iovalkey';
import { afterAll, beforeAll, inject } from 'vitest';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { ValkeyIdempotencyStore } from '../../lambdas/idempotency/valkey-store.js';
import { createTable, localDynamoClient, readItem } from './dynamodb.js';

/**
 * The stores lease mode keeps its records in (DESIGN §3.1). A consumer suite's lease-mode tests run
 * on each: `describe.each(LEASE_STORES)`. What is one store's own (DynamoDB's requests, the SDK's
 * retries, Valkey's scripts) stays in that store's tests.
 */
export const LEASE_STORES = ['DynamoDB', 'Valkey'] as const;
export type LeaseStoreName = (typeof LEASE_STORES)[number];

/** One store's records for a describe block, set up before its first test runs. */
export interface LeaseRecords {
  readonly name: LeaseStoreName;
  /** A store on the block's records (every store made here sees the same ones). */
  store(options?: { now?: () => number; ttlSeconds?: number }): LeaseStore;
  /** A record as stored, read outside every store's counts and faults. */
  read(id: string): Promise<IdempotencyRecord | undefined>;
}

/**
 * Registers the hooks that give a describe block the records of `name`: a fresh DynamoDB Local
 * table, or a fresh key prefix on the run's redis-server (test/support/global-setup.ts). Its
 * clients are closed after the block.
 */
export function leaseRecords(name: LeaseStoreName): LeaseRecords {
  let opened: Omit<LeaseRecords, 'name'> & { close(): void };
  beforeAll(async () => {
    opened = name === 'DynamoDB' ? await dynamoDbRecords() : valkeyRecords();
  });
  afterAll(() => opened?.close());
  return {
    name,
    store: (options) => opened.store(options),
    read: (id) => opened.read(id),
  };
}

async function dynamoDbRecords() {
  const client: DynamoDBClient = localDynamoClient();
  const tableName = await createTable(client, 'lease-records');
  return {
    store: (options = {}) => new DynamoDBIdempotencyStore({ client, tableName, ...options }),
    read: (id: string) => readItem(tableName, id),
    close: () => client.destroy(),
  };
}

function valkeyRecords() {
  const port = inject('valkeyPort');
  if (!port)
    throw new Error(
      "no valkeyPort: this file needs the run's redis-server, which the fast tier does not start.",
    );
  // One client for the block's stores, one for reading: a store's scripts and a test's reads never queue behind each other.
  const client = new Redis({ host: '127.0.0.1', port });
  const reader = new Redis({ host: '127.0.0.1', port });
  const keyPrefix = `t-${randomUUID().slice(0, 8)}:`;
  return {
    store: (options = {}) => new ValkeyIdempotencyStore({ client, keyPrefix, ...options }),
    read: async (id: string) => {
      const raw = await reader.get(`${keyPrefix}${id}`);
      return raw === null ? undefined : (JSON.parse(raw) as IdempotencyRecord);
    },
    close: () => {
      client.disconnect();
      reader.disconnect();
    },
  };
}
