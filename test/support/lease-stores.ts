import { createHash, randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Redis } from 'iovalkey';
import { afterAll, beforeAll, inject } from 'vitest';
import type { StoredError } from '../../lambdas/idempotency/errors.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import type { IdempotencyRecord, KeptMessage } from '../../lambdas/idempotency/record.js';
import { VALKEY_SCRIPTS } from '../../lambdas/idempotency/valkey-scripts.js';
import { ValkeyIdempotencyStore, type ValkeyScriptClient } from '../../lambdas/idempotency/valkey-store.js';
import { countRequests } from '../../sandbox/request-counter.js';
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
  /**
   * A store on the block's records whose round trips are counted, for the tests that assert the
   * store's own requests: DynamoDB's by operation (`PutItem`, each SDK attempt), Valkey's by script
   * (`acquire`, `outcome`: each EVALSHA or EVAL the server answered).
   */
  countedStore(options?: { now?: () => number; ttlSeconds?: number }): CountedStore;
}

/** A store and its round trips so far (see {@link LeaseRecords.countedStore}). */
export interface CountedStore {
  readonly store: LeaseStore;
  requests(): Record<string, number>;
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
    countedStore: (options) => opened.countedStore(options),
  };
}

async function dynamoDbRecords() {
  const client: DynamoDBClient = localDynamoClient();
  const tableName = await createTable(client, 'lease-records');
  // A client of its own for each counted store, so that it counts its store's requests only.
  const counted: DynamoDBClient[] = [];
  return {
    store: (options = {}) => new DynamoDBIdempotencyStore({ client, tableName, ...options }),
    read: (id: string) => readItem(tableName, id),
    countedStore: (options = {}): CountedStore => {
      const own = localDynamoClient();
      counted.push(own);
      const requests = countRequests(own);
      return {
        store: new DynamoDBIdempotencyStore({ client: own, tableName, ...options }),
        requests: () => ({ ...requests.counts }),
      };
    },
    close: () => {
      client.destroy();
      for (const own of counted) own.destroy();
    },
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
    countedStore: (options = {}): CountedStore => {
      const counts: Record<string, number> = {};
      const count = (name: string) => (counts[name] = (counts[name] ?? 0) + 1);
      const counted: ValkeyScriptClient = {
        // An EVALSHA the server answers NOSCRIPT (the run's first of that script) is not counted: the
        // EVAL the store sends then is the step's round trip, so the counts do not hang on which test ran first.
        evalsha: async (sha, ...args) => {
          const reply = await client.evalsha(sha, ...args);
          count(SCRIPT_NAMES.get(sha) ?? sha);
          return reply;
        },
        eval: async (source, ...args) => {
          const reply = await client.eval(source, ...args);
          count(SCRIPT_NAMES.get(sha1(String(source))) ?? 'eval');
          return reply;
        },
      };
      return {
        store: new ValkeyIdempotencyStore({ client: counted, keyPrefix, ...options }),
        requests: () => ({ ...counts }),
      };
    },
    close: () => {
      client.disconnect();
      reader.disconnect();
    },
  };
}

/** Each Valkey script's name by its hash. */
const SCRIPT_NAMES = new Map(Object.values(VALKEY_SCRIPTS).map((script) => [script.sha, script.name]));
const sha1 = (source: string) => createHash('sha1').update(source).digest('hex');

/**
 * Parks a fresh lease on `id` IN_DOUBT, as at-most-once does when its effect's outcome is unknown:
 * keeping `message` when given (what `--as retry` sends back).
 */
export async function parkInDoubt(
  store: LeaseStore,
  id: string,
  options: { payloadHash?: string; error?: StoredError; message?: KeptMessage } = {},
): Promise<void> {
  const acquired = await store.acquire({
    id,
    payloadHash: options.payloadHash ?? 'h',
    leaseMs: 60_000,
    takeOverExpiredLease: false,
  });
  if (!acquired.acquired) throw new Error(`${id}: not acquired`);
  const error = options.error ?? { name: 'OutcomeUnknownError', message: 'timed out' };
  await store.markInDoubt(acquired.lease, error, options.message);
}
