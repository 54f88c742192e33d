import { createHash, createHmac } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SignatureV4 } from '@smithy/signature-v4';
import type { ClusterNode, ClusterOptions, RedisOptions } from 'iovalkey';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { ConsumerSetup, provideValkeyDefaultStore } from '../../lambdas/consumer/consumer-setup.js';
import {
  CONSUMER_ENVIRONMENT,
  readConsumerEnvironment,
  SERVERLESS_KEY_PREFIX,
} from '../../lambdas/consumer/environment.js';
import { fifoBatch, leaseOperation, transactionalOperation } from '../../lambdas/consumer/index.js';
// What the construct injects into a consumer's bundle with leaseRecords: 'valkey'.
import { serverlessValkeyStore } from '../../lambdas/consumer/serverless-valkey-store.js';
// Provides the default store, as the construct's inject does in a 'valkey' consumer's bundle.
import '../../lambdas/consumer/valkey-default-store.js';
import { type ClusterClass, elastiCacheValkeyClient } from '../../lambdas/consumer/valkey-client.js';
import { elastiCacheIamToken } from '../../lambdas/idempotency/elasticache-iam-token.js';
import { TransactionalStoreError } from '../../lambdas/idempotency/errors.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/store.js';
import { ValkeyIdempotencyStore } from '../../lambdas/idempotency/valkey-store.js';

// Issue 46, part 3: a consumer the construct deploys with `leaseRecords: 'valkey'` keeps its lease
// records in ElastiCache Serverless (IAM token, TLS, `{oncely}` keys) and its transactional ones
// in the table; a consumer given only a Valkey store and a transactional operation is refused.

const credentials = {
  accessKeyId: 'AKIDEXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
  sessionToken: 'session/token+=',
};
const NOW = Date.UTC(2026, 10, 30, 1, 2, 3);

/** What the SDK's hash interface may be given, as node:crypto takes it. */
const bytes = (data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array =>
  typeof data === 'string'
    ? data
    : ArrayBuffer.isView(data)
      ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
      : new Uint8Array(data);

describe('the ElastiCache IAM token', () => {
  const token = elastiCacheIamToken({
    cacheName: 'orders-cache',
    userId: 'orders-user',
    region: 'eu-west-1',
    credentials,
    now: NOW,
  });

  it('is the presigned GET to the cache for connect as the user, serverless, 15 minutes, without http://', () => {
    expect(token).toMatch(
      new RegExp(
        '^orders-cache/\\?Action=connect&ResourceType=ServerlessCache&User=orders-user' +
          '&X-Amz-Algorithm=AWS4-HMAC-SHA256' +
          '&X-Amz-Credential=AKIDEXAMPLE%2F20261130%2Feu-west-1%2Felasticache%2Faws4_request' +
          '&X-Amz-Date=20261130T010203Z&X-Amz-Expires=900' +
          '&X-Amz-Security-Token=session%2Ftoken%2B%3D&X-Amz-SignedHeaders=host' +
          '&X-Amz-Signature=[0-9a-f]{64}$',
      ),
    );
  });

  it("is the same request the AWS SDK's SigV4 signer presigns", async () => {
    class Sha256 {
      readonly #hash;
      constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
        this.#hash = secret ? createHmac('sha256', bytes(secret)) : createHash('sha256');
      }
      update(data: string | ArrayBuffer | ArrayBufferView) {
        this.#hash.update(bytes(data));
      }
      async digest() {
        return new Uint8Array(this.#hash.digest());
      }
    }
    const signer = new SignatureV4({
      service: 'elasticache',
      region: 'eu-west-1',
      credentials,
      sha256: Sha256,
    });
    const signed = await signer.presign(
      {
        method: 'GET',
        protocol: 'http:',
        hostname: 'orders-cache',
        path: '/',
        query: { Action: 'connect', User: 'orders-user', ResourceType: 'ServerlessCache' },
        headers: { host: 'orders-cache' },
      },
      { expiresIn: 900, signingDate: new Date(NOW) },
    );
    const theirs = new URLSearchParams(
      Object.entries(signed.query ?? {}).map(([name, value]): [string, string] => [name, String(value)]),
    );
    const ours = new URLSearchParams(token.slice('orders-cache/?'.length));
    expect(Object.fromEntries(ours)).toEqual(Object.fromEntries(theirs));
  });

  it('leaves out ResourceType for a replication group, and the session token without one', () => {
    const plain = elastiCacheIamToken({
      cacheName: 'group',
      userId: 'u',
      region: 'us-east-1',
      credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret' },
      now: NOW,
      serverless: false,
    });
    expect(plain).not.toMatch(/ResourceType|X-Amz-Security-Token/);
    expect(plain).toMatch(/^group\/\?Action=connect&User=u&X-Amz-Algorithm=/);
  });
});

describe('the environment', () => {
  const valkey = ['valkeyEndpoint', 'valkeyUserId', 'valkeyCacheName'] as const;

  it('reads the cache as host and port, its user and its name', () => {
    expect(
      readConsumerEnvironment(valkey, {
        [CONSUMER_ENVIRONMENT.valkeyEndpoint]: 'orders.serverless.euw1.cache.amazonaws.com:6379',
        [CONSUMER_ENVIRONMENT.valkeyUserId]: 'orders-user',
        [CONSUMER_ENVIRONMENT.valkeyCacheName]: 'orders-cache',
      }),
    ).toEqual({
      valkeyEndpoint: { host: 'orders.serverless.euw1.cache.amazonaws.com', port: 6379 },
      valkeyUserId: 'orders-user',
      valkeyCacheName: 'orders-cache',
    });
  });

  it('reads none without an endpoint, and ignores a user and a cache name then', () => {
    expect(readConsumerEnvironment(valkey, { [CONSUMER_ENVIRONMENT.valkeyUserId]: 'u' })).toEqual({
      valkeyEndpoint: undefined,
      valkeyUserId: undefined,
      valkeyCacheName: undefined,
    });
  });

  it('names, at once, a malformed endpoint, and the user and cache an endpoint needs', () => {
    const refusal = (environment: Record<string, string>) => {
      try {
        readConsumerEnvironment(valkey, environment);
      } catch (error) {
        expect(error).toBeInstanceOf(OncelyConfigurationError);
        return (error as Error).message;
      }
      throw new Error('expected a refusal');
    };
    expect(refusal({ [CONSUMER_ENVIRONMENT.valkeyEndpoint]: 'cache:6379' })).toMatch(
      /IDEMPOTENCY_VALKEY_USER_ID is not set; IDEMPOTENCY_VALKEY_CACHE_NAME is not set/,
    );
    expect(
      refusal({
        [CONSUMER_ENVIRONMENT.valkeyEndpoint]: 'https://cache',
        [CONSUMER_ENVIRONMENT.valkeyUserId]: 'u',
        [CONSUMER_ENVIRONMENT.valkeyCacheName]: 'c',
      }),
    ).toMatch(/IDEMPOTENCY_VALKEY_ENDPOINT must be host:port, not "https:\/\/cache"/);
    expect(refusal({ [CONSUMER_ENVIRONMENT.valkeyEndpoint]: 'cache:70000' })).toMatch(/must be host:port/);
  });
});

/** A node connection as iovalkey's cluster makes it: its own copy of the options (`defaults`). */
class FakeNode extends EventEmitter {
  readonly options: RedisOptions;
  constructor(options: RedisOptions) {
    super();
    this.options = { ...options };
  }
}

/** A stand-in for iovalkey's Cluster: keeps its nodes and options, answers every script with its name. */
function fakeCluster() {
  const made: { nodes: ClusterNode[]; options: ClusterOptions; cluster: EventEmitter }[] = [];
  class FakeCluster extends EventEmitter {
    constructor(nodes: ClusterNode[], options: ClusterOptions) {
      super();
      made.push({ nodes, options, cluster: this });
    }
    async evalsha(sha: string) {
      return sha;
    }
    async eval(script: string) {
      return script;
    }
  }
  return { made, load: async () => FakeCluster as unknown as ClusterClass };
}

describe('the client of the cache', () => {
  it('connects on the first command, as a cluster client over TLS, as the user, with a token made for each connection', async () => {
    const { made, load } = fakeCluster();
    let now = NOW;
    let resolved = 0;
    const client = elastiCacheValkeyClient({
      host: 'orders.serverless.euw1.cache.amazonaws.com',
      port: 6379,
      userId: 'orders-user',
      cacheName: 'orders-cache',
      region: 'eu-west-1',
      credentials: async () => {
        resolved += 1;
        return credentials;
      },
      now: () => now,
      loadClient: load,
    });
    expect(made).toHaveLength(0);
    expect(await client.evalsha('abc', 0)).toBe('abc');
    expect(await client.eval('return 1', 0)).toBe('return 1');
    expect(made).toHaveLength(1);
    const [{ nodes, options, cluster }] = made as [(typeof made)[number]];
    expect(nodes).toEqual([{ host: 'orders.serverless.euw1.cache.amazonaws.com', port: 6379 }]);
    expect(options.redisOptions).toMatchObject({ username: 'orders-user', tls: {} });
    // The endpoint's name is kept, for TLS to check the certificate against it.
    options.dnsLookup?.('orders.serverless.euw1.cache.amazonaws.com', (error, address) => {
      expect(error).toBeNull();
      expect(address).toBe('orders.serverless.euw1.cache.amazonaws.com');
    });
    // A node made now copies a token signed now.
    const node = new FakeNode({ ...options.redisOptions });
    expect(node.options.password).toBe(
      elastiCacheIamToken({
        cacheName: 'orders-cache',
        userId: 'orders-user',
        region: 'eu-west-1',
        credentials,
        now: NOW,
      }),
    );
    cluster.emit('+node', node);
    now += 13 * 60 * 60 * 1000; // ElastiCache closed the connection at 12 hours
    node.emit('reconnecting');
    expect(node.options.password).toMatch(/X-Amz-Date=20261130T140203Z/);
    expect(resolved).toBe(2);
    // And a node made later (a slots refresh) copies a token of its own time.
    now += 60_000;
    expect({ ...options.redisOptions }.password).toMatch(/X-Amz-Date=20261130T140303Z/);
  });

  it('tries the import again on the next command after a failed one', async () => {
    const { load } = fakeCluster();
    let attempts = 0;
    const client = elastiCacheValkeyClient({
      host: 'h',
      port: 6379,
      userId: 'u',
      cacheName: 'c',
      region: 'eu-west-1',
      credentials: async () => credentials,
      loadClient: async () => {
        attempts += 1;
        if (attempts === 1) throw new Error('not installed');
        return load();
      },
    });
    await expect(client.evalsha('x', 0)).rejects.toThrow('not installed');
    expect(await client.evalsha('x', 0)).toBe('x');
  });
});

const ENVIRONMENT = {
  [CONSUMER_ENVIRONMENT.idempotencyTableName]: 'idempotency',
  [CONSUMER_ENVIRONMENT.idempotencyTtlSeconds]: '3600',
  [CONSUMER_ENVIRONMENT.dlqUrl]: 'https://sqs.eu-west-1.amazonaws.com/1/dlq.fifo',
  [CONSUMER_ENVIRONMENT.valkeyEndpoint]: 'orders.serverless.euw1.cache.amazonaws.com:6379',
  [CONSUMER_ENVIRONMENT.valkeyUserId]: 'orders-user',
  [CONSUMER_ENVIRONMENT.valkeyCacheName]: 'orders-cache',
};

const ledger = transactionalOperation({ namespace: 'ledger', plan: () => ({ writes: [] }) });
const mail = leaseOperation({ namespace: 'mail', mode: 'at-least-once', run: () => undefined });
const idleValkey = () =>
  new ValkeyIdempotencyStore({ client: { evalsha: async () => null, eval: async () => null } });

describe('a consumer of the construct with leaseRecords: valkey', () => {
  it("keeps lease records in the cache under {oncely}, and transactional ones in the environment's table", () => {
    const saved = { ...process.env };
    Object.assign(process.env, ENVIRONMENT);
    try {
      const setup = new ConsumerSetup({ operations: { Booked: ledger, Mailed: mail } }, [], {});
      const { store, transactionalStore, horizon } = setup.settings().processor;
      expect(store).toBeInstanceOf(ValkeyIdempotencyStore);
      expect((store as ValkeyIdempotencyStore).keyPrefix).toBe(SERVERLESS_KEY_PREFIX);
      expect(store.ttlSeconds).toBe(3600);
      expect(horizon.ttlSeconds).toBe(3600);
      expect(transactionalStore).toBeInstanceOf(DynamoDBIdempotencyStore);
      expect(transactionalStore?.tableName).toBe('idempotency');
    } finally {
      process.env = saved;
    }
  });

  it('refuses, naming the variable, an endpoint in a consumer bundled without the Valkey store', () => {
    const saved = { ...process.env };
    Object.assign(process.env, ENVIRONMENT);
    const provided = provideValkeyDefaultStore(undefined);
    try {
      expect(provided).toBe(serverlessValkeyStore);
      const setup = new ConsumerSetup({ operations: { Mailed: mail } }, [], {});
      expect(() => setup.settings()).toThrow(OncelyConfigurationError);
      expect(() => setup.settings()).toThrow(
        /IDEMPOTENCY_VALKEY_ENDPOINT is set, but this consumer was bundled without the Valkey store/,
      );
    } finally {
      provideValkeyDefaultStore(provided);
      process.env = saved;
    }
  });

  it('keeps everything in the table without an endpoint, as before', () => {
    const saved = { ...process.env };
    Object.assign(process.env, ENVIRONMENT);
    delete process.env[CONSUMER_ENVIRONMENT.valkeyEndpoint];
    try {
      const { store, transactionalStore } = new ConsumerSetup(
        { operations: { Mailed: mail } },
        [],
        {},
      ).settings().processor;
      expect(store).toBeInstanceOf(DynamoDBIdempotencyStore);
      expect(transactionalStore).toBe(store);
    } finally {
      process.env = saved;
    }
  });

  it('commits a transactional record on the transactional store, not on the Valkey one', async () => {
    const sent: string[] = [];
    const dynamodb = new DynamoDBClient({ region: 'eu-west-1', credentials });
    dynamodb.middlewareStack.add(
      () => async (args) => {
        sent.push((args.input as { TransactItems?: unknown }).TransactItems ? 'TransactWriteItems' : 'other');
        return { output: { $metadata: {} }, response: {} };
      },
      { step: 'initialize', name: 'capture' },
    );
    const scripts: string[] = [];
    const valkey = new ValkeyIdempotencyStore({
      client: {
        evalsha: async (sha) => {
          scripts.push(sha);
          return null;
        },
        eval: async () => null,
      },
    });
    const table = new DynamoDBIdempotencyStore({ client: dynamodb, tableName: 'idempotency' });
    const outcome = await ledger.execute(
      {
        type: 'Booked',
        key: 'k1',
        payload: {},
        messageId: 'm1',
        groupId: 'g',
        receiveCount: 1,
        publishedAt: new Date(NOW).toISOString(),
      } as never,
      { store: valkey, transactionalStore: table, telemetry: { logger: console } } as never,
    );
    expect(outcome).toBe('executed');
    expect(sent).toEqual(['TransactWriteItems']);
    expect(scripts).toEqual([]);
  });
});

describe('a consumer given a Valkey store', () => {
  it('refuses a transactional operation without a transactionalStore, naming the option', () => {
    const store = idleValkey();
    expect(() => fifoBatch({ store, operations: { Booked: ledger, Mailed: mail } })).toThrow(
      TransactionalStoreError,
    );
    expect(() => fifoBatch({ store, operations: { Booked: ledger } })).toThrow(/transactionalStore option/);
  });

  it('runs it on a transactionalStore beside, and refuses a transactionalStore that is not DynamoDB', () => {
    const store = idleValkey();
    const table = new DynamoDBIdempotencyStore({
      client: new DynamoDBClient({ region: 'eu-west-1', credentials }),
      tableName: 'idempotency',
    });
    expect(() =>
      fifoBatch({ store, transactionalStore: table, operations: { Booked: ledger, Mailed: mail } }),
    ).not.toThrow();
    expect(() =>
      fifoBatch({ store, transactionalStore: idleValkey() as never, operations: { Mailed: mail } }),
    ).toThrow(TransactionalStoreError);
  });
});
