import { randomUUID } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import type { Redis } from 'iovalkey';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startTcpFaultProxy, type TcpFaultProxy } from '../../harness/tcp-fault-proxy.js';
import { startValkey, type ValkeyServer } from '../../harness/valkey-server.js';
import {
  fifoBatch,
  leaseOperation,
  NonRetryableError,
  processFifoBatch,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import {
  IdempotencyConfigurationError,
  LeaseIdempotency,
  type LeaseIdempotencyOptions,
  OncelyConfigurationError,
  TransactionalIdempotency,
  TransactionalStoreError,
} from '../../lambdas/idempotency/index.js';
import type { Lease } from '../../lambdas/idempotency/lease-store.js';
import {
  deadLetterLogId,
  deadLetterMarkId,
  type IdempotencyRecord,
} from '../../lambdas/idempotency/record.js';
import { VALKEY_SCRIPTS } from '../../lambdas/idempotency/valkey-scripts.js';
import {
  VALKEY_KEY_GRACE_MS,
  ValkeyIdempotencyStore,
  type ValkeyScriptClient,
} from '../../lambdas/idempotency/valkey-store.js';
import { lambdaContext } from '../support/lambda-context.js';
import { countScripts } from '../support/valkey.js';
import { clockSkewContract } from './clock-skew-contract.js';
import { historyContract } from './history-contract.js';
import { leaseContract, manualClock, recordingObserver, type StoreHarness } from './lease-contract.js';

// The Valkey store against a real redis-server of this file's own: the lease-mode contract
// (lease-contract.ts), then what is Valkey's own — one script a step, the NOSCRIPT fallback, a
// reply lost after the script applied, and each state's TTL.

let server: ValkeyServer;
let admin: Redis;

beforeAll(async () => {
  server = await startValkey();
  admin = server.client();
  // Loaded as a server that has served a store holds them: each step is then one EVALSHA. The
  // NOSCRIPT fallback has its own test.
  for (const script of Object.values(VALKEY_SCRIPTS)) await admin.script('LOAD', script.source);
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** Each test's records under a prefix of their own, so no test sees another's. */
const freshPrefix = () => `t-${randomUUID().slice(0, 8)}:`;

/** A harness on a fresh prefix, counting this test's scripts. */
async function valkeyHarness(): Promise<StoreHarness> {
  const client = server.client();
  const scripts = countScripts(client);
  const keyPrefix = freshPrefix();
  return {
    store: (options) => new ValkeyIdempotencyStore({ client: scripts.client, keyPrefix, ...options }),
    read: async (id) => {
      const raw = await admin.get(`${keyPrefix}${id}`);
      return raw === null ? undefined : JSON.parse(raw);
    },
    roundTrips: () => scripts.total(),
    resetRoundTrips: () => scripts.reset(),
    reads: () => scripts.calls.filter((call) => call.sha === VALKEY_SCRIPTS.read.sha).length,
    close: () => client.disconnect(),
  };
}

leaseContract('Valkey', valkeyHarness);
historyContract('Valkey', valkeyHarness);
clockSkewContract('Valkey', valkeyHarness);

/** A store on a fresh prefix through `client`, its clock by hand, records living an hour. */
function valkeyStore(client: ValkeyScriptClient, clock = manualClock()) {
  const keyPrefix = freshPrefix();
  const store = new ValkeyIdempotencyStore({ client, keyPrefix, now: clock.now, ttlSeconds: 3600 });
  const read = async (id: string): Promise<IdempotencyRecord | undefined> => {
    const raw = await admin.get(`${keyPrefix}${id}`);
    return raw === null ? undefined : JSON.parse(raw);
  };
  return { store, clock, keyPrefix, read };
}

/** The server's count of the scripts clients sent it (EVALSHA and EVAL; the calls inside them not). */
async function scriptCalls(): Promise<number> {
  const stats = await admin.info('commandstats');
  return [...stats.matchAll(/^cmdstat_(evalsha|eval):calls=(\d+)/gm)].reduce(
    (sum, match) => sum + Number(match[2]),
    0,
  );
}

/** Takes a lease on `key` (at-least-once), failing the test if it is not acquired. */
async function acquired(
  store: ValkeyIdempotencyStore,
  key: string,
  options: Partial<Parameters<ValkeyIdempotencyStore['acquire']>[0]> = {},
): Promise<Lease> {
  const result = await store.acquire({
    id: `mail#${key}`,
    payloadHash: 'h',
    leaseMs: 1_000,
    takeOverExpiredLease: true,
    ...options,
  });
  if (!result.acquired) throw new Error(`not acquired: ${JSON.stringify(result.existing)}`);
  return result.lease;
}

describe('Valkey: one round trip a step', () => {
  let client: Redis;
  beforeEach(() => {
    client = server.client();
  });
  afterEach(() => client.disconnect());

  it('sends each step as one EVALSHA, and the server counts one script for it', async () => {
    const scripts = countScripts(client);
    const { store, clock } = valkeyStore(scripts.client);
    const error = { name: 'Error', message: 'boom' };
    const steps: [string, () => Promise<unknown>][] = [];
    const lease = await acquired(store, 'a');
    const ahead = await acquired(store, 'b', { unstarted: true, takeOverExpiredLease: false });
    const doubtful = await acquired(store, 'c');
    const given = await acquired(store, 'd');
    const failing = await acquired(store, 'e');
    const rejected = await acquired(store, 'f');
    await acquired(store, 'g', { unstarted: true, takeOverExpiredLease: false });
    steps.push(
      [
        'acquire',
        () => store.acquire({ id: 'mail#z', payloadHash: 'h', leaseMs: 1_000, takeOverExpiredLease: false }),
      ],
      ['read', () => store.read('mail#a')],
      ['markStarted', () => store.markStarted(ahead)],
      ['countRun', () => store.countRun(ahead)],
      ['complete', () => store.complete(lease, { result: '"ok"' })],
      ['fail', () => store.fail(failing, error, 'm-1')],
      ['reject', () => store.reject(rejected, error)],
      ['markInDoubt', () => store.markInDoubt(doubtful, error, { body: 'b', groupId: 'g' })],
      ['release', () => store.release(given)],
      ['keepUntil', () => store.keepUntil('mail#a', Math.floor(clock.now() / 1000) + 7200)],
      ['claimDeadLetter', () => store.claimDeadLetter('m-1', 60_000)],
      ['markDeadLettered', () => store.markDeadLettered('m-1')],
      ['releaseDeadLetterClaim', () => store.releaseDeadLetterClaim('m-1', 'other')],
      ['logDeadLetter', () => store.logDeadLetter('mail#e', 'm-1', error)],
    );
    for (const [name, step] of steps) {
      scripts.reset();
      const before = await scriptCalls();
      await step();
      expect([name, scripts.calls.map((call) => call.command)]).toEqual([name, ['evalsha']]);
      expect([name, (await scriptCalls()) - before]).toEqual([name, 1]);
    }
    // The steps of an expired lease: a park, a claimed report, an unstarted lease given back.
    clock.advance(1_001);
    const parkable = await store.read('mail#g');
    const fencedRecord = (await store.read('mail#b')) as IdempotencyRecord;
    for (const [name, step] of [
      ['releaseUnstarted', () => store.releaseUnstarted(parkable as IdempotencyRecord)],
      ['parkExpiredLease', () => store.parkExpiredLease(fencedRecord, error, { fence: true })],
      ['claimInDoubtReport', () => store.claimInDoubtReport('mail#b', { body: 'b', groupId: 'g' })],
    ] as const) {
      scripts.reset();
      const before = await scriptCalls();
      expect(await step()).toBe(true);
      expect([name, scripts.total(), (await scriptCalls()) - before]).toEqual([name, 1, 1]);
    }
  });

  it('after SCRIPT FLUSH (a restart, a failover) loads the script by EVAL once, then EVALSHA again', async () => {
    const scripts = countScripts(client);
    const { store, read } = valkeyStore(scripts.client);
    await admin.script('FLUSH');
    const lease = await acquired(store, 'k1');
    expect(scripts.calls.map((call) => call.command)).toEqual(['evalsha', 'eval']);
    scripts.reset();
    expect(await store.complete(lease, { result: '"sent"' })).toBe(true);
    expect(scripts.calls.map((call) => call.command)).toEqual(['evalsha', 'eval']);
    scripts.reset();
    await store.acquire({ id: 'mail#k2', payloadHash: 'h', leaseMs: 1_000, takeOverExpiredLease: true });
    expect(scripts.calls.map((call) => call.command)).toEqual(['evalsha']);
    expect(await read('mail#k1')).toMatchObject({ status: 'COMPLETED', result: '"sent"' });
  });
});

describe('Valkey: replies lost after the script applied', () => {
  let proxy: TcpFaultProxy;
  let viaProxy: Redis | undefined;
  beforeEach(async () => {
    proxy = await startTcpFaultProxy(server.port);
  });
  afterEach(async () => {
    viaProxy?.disconnect();
    await proxy.close();
  });

  /**
   * Lease mode through the proxy. `resend`: the client sends a command again after a reconnect (its
   * default); without, it fails the command at once (`maxRetriesPerRequest: 0`: with resending off
   * alone, iovalkey drops the command and its promise never settles).
   */
  function leaseViaProxy(resend: boolean, options: Partial<LeaseIdempotencyOptions> = {}) {
    viaProxy = server.client({
      port: proxy.port,
      ...(resend ? {} : { maxRetriesPerRequest: 0 }),
      // Reconnect at once: the test waits for the reconnect, not for a back-off.
      retryStrategy: () => 0,
    });
    const made = valkeyStore(viaProxy);
    const idempotency = new LeaseIdempotency({
      store: made.store,
      namespace: 'mail',
      mode: 'at-most-once',
      cache: false,
      observer: recordingObserver().observer,
      ...options,
    });
    return { ...made, idempotency };
  }

  const scriptOf = (sha: string) => (request: string) => request.includes(sha);

  it('an acquire sent again by the client finds its own lease: the effect runs once, nothing is parked', async () => {
    const { idempotency, read } = leaseViaProxy(true);
    const lost = proxy.loseReplies(scriptOf(VALKEY_SCRIPTS.acquire.sha));
    let runs = 0;
    expect(await idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs)).toEqual({
      status: 'executed',
      result: 1,
      recorded: true,
    });
    expect(lost.lost()).toBe(1);
    const record = await read('mail#k1');
    expect(record).toMatchObject({ status: 'COMPLETED', attempts: 1 });
    expect(record?.history?.map((entry) => entry.s)).toEqual(['IN_PROGRESS', 'COMPLETED']);
  });

  it('a completion sent again finds its own write: recorded, and one history entry', async () => {
    const { idempotency, read } = leaseViaProxy(true);
    const lost = proxy.loseReplies(scriptOf(VALKEY_SCRIPTS.outcome.sha));
    expect(await idempotency.run({ key: 'k1', payload: 1 }, async () => 'sent')).toMatchObject({
      recorded: true,
    });
    expect(lost.lost()).toBe(1);
    expect((await read('mail#k1'))?.history?.map((entry) => entry.s)).toEqual(['IN_PROGRESS', 'COMPLETED']);
  });

  it('a park sent again is recognised by its report token: reported once', async () => {
    const { idempotency, clock, store } = leaseViaProxy(true, { leaseMs: 1_000 });
    const { events, observer } = recordingObserver();
    await idempotency.start({ key: 'k1', payload: 1 });
    clock.advance(1_001);
    const lost = proxy.loseReplies(scriptOf(VALKEY_SCRIPTS.park.sha));
    const redelivery = new LeaseIdempotency({
      store,
      namespace: 'mail',
      mode: 'at-most-once',
      cache: false,
      observer,
    });
    expect((await redelivery.start({ key: 'k1', payload: 1 })).status).toBe('in-doubt');
    expect(lost.lost()).toBe(1);
    expect(events).toEqual([{ event: 'inDoubt', id: 'mail#k1' }]);
  });

  it('a client that does not resend: a lost acquire surfaces: the store gives the lease back, the next delivery runs', async () => {
    const { idempotency, read } = leaseViaProxy(false);
    proxy.loseReplies(scriptOf(VALKEY_SCRIPTS.acquire.sha));
    let runs = 0;
    await expect(idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs)).rejects.toThrow();
    expect(runs).toBe(0);
    expect(await read('mail#k1')).toBeUndefined();
    expect(await idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs)).toMatchObject({
      status: 'executed',
    });
    expect(runs).toBe(1);
  });

  it('a client that does not resend: a lost completion is tried again by the lease core, which finds it written', async () => {
    const { idempotency, read } = leaseViaProxy(false);
    const lost = proxy.loseReplies(scriptOf(VALKEY_SCRIPTS.outcome.sha));
    expect(await idempotency.run({ key: 'k1', payload: 1 }, async () => 'sent')).toMatchObject({
      recorded: true,
    });
    expect(lost.lost()).toBe(1);
    expect(await read('mail#k1')).toMatchObject({ status: 'COMPLETED', result: '"sent"' });
  });
});

describe("Valkey: each state's lifetime", () => {
  let client: Redis;
  beforeEach(() => {
    client = server.client();
  });
  afterEach(() => client.disconnect());

  /** When the server deletes the key, epoch ms; -1 if never. */
  const expiryOf = async (key: string) => Number(await admin.call('PEXPIRETIME', key));
  const keyExpiry = (expiresAtSec: number) => expiresAtSec * 1000 + VALKEY_KEY_GRACE_MS;

  it('IN_PROGRESS, COMPLETED, FAILED and REJECTED live the TTL from their acquire plus the grace; IN_DOUBT never expires', async () => {
    const { store, keyPrefix, read } = valkeyStore(client);
    const error = { name: 'Error', message: 'boom' };
    for (const [key, outcome] of [
      ['done', (lease: Lease) => store.complete(lease, { result: '1' })],
      ['failed', (lease: Lease) => store.fail(lease, error)],
      ['rejected', (lease: Lease) => store.reject(lease, error)],
    ] as const) {
      const lease = await acquired(store, key);
      expect(await expiryOf(`${keyPrefix}mail#${key}`)).toBe(keyExpiry(lease.recordExpiresAt));
      await outcome(lease);
      const record = await read(`mail#${key}`);
      expect(record?.expiresAt).toBe(lease.recordExpiresAt);
      expect(await expiryOf(`${keyPrefix}mail#${key}`)).toBe(keyExpiry(lease.recordExpiresAt));
      expect(Number(await admin.pttl(`${keyPrefix}mail#${key}`))).toBeGreaterThan(3600 * 1000);
    }
    const doubtful = await acquired(store, 'doubt');
    await store.markInDoubt(doubtful, error);
    expect(await admin.pttl(`${keyPrefix}mail#doubt`)).toBe(-1);
    expect((await read('mail#doubt'))?.expiresAt).toBeUndefined();
  });

  it("keepUntil moves the key's expiry with the record's, never shortening or reviving one", async () => {
    const { store, keyPrefix, clock } = valkeyStore(client);
    const lease = await acquired(store, 'k');
    await store.complete(lease, {});
    const until = lease.recordExpiresAt + 86_400;
    expect(await store.keepUntil('mail#k', until)).toBe(true);
    expect(await expiryOf(`${keyPrefix}mail#k`)).toBe(keyExpiry(until));
    expect(await store.keepUntil('mail#k', until - 10)).toBe(false);
    clock.advance((until - Math.floor(clock.now() / 1000)) * 1000);
    expect(await store.keepUntil('mail#k', until + 10)).toBe(false); // dead by the store's clock
  });

  it('a DLQ mark and a dead-letter log live the TTL', async () => {
    const { store, keyPrefix, clock } = valkeyStore(client);
    const ttlEnd = Math.floor(clock.now() / 1000) + 3600;
    expect(await store.claimDeadLetter('m-1', 60_000)).toMatchObject({ status: 'claimed' });
    await store.markDeadLettered('m-1');
    await store.logDeadLetter('mail#x', 'm-1', { name: 'Error', message: 'x' });
    expect(await expiryOf(`${keyPrefix}${deadLetterMarkId('m-1')}`)).toBe(keyExpiry(ttlEnd));
    expect(await expiryOf(`${keyPrefix}${deadLetterLogId('mail#x')}`)).toBe(keyExpiry(ttlEnd));
    expect(await store.claimDeadLetter('m-1', 60_000)).toEqual({ status: 'sent' });
  });
});

describe('Valkey: the unresolved index', () => {
  it("lists an IN_DOUBT record in its reason's sorted set, scored by updatedAt, parked either way", async () => {
    const client = server.client();
    try {
      const { store, clock } = valkeyStore(client);
      const error = { name: 'OutcomeUnknownError', message: 'timed out' };
      const marked = await acquired(store, 'marked');
      await store.markInDoubt(marked, error);
      const expired = await acquired(store, 'expired');
      clock.advance(1_001);
      expect(await store.parkExpiredLease((await store.read(expired.id)) as IdempotencyRecord, error)).toBe(
        true,
      );
      const listed = await admin.zrange(store.unresolvedKey('IN_DOUBT'), 0, -1, 'WITHSCORES');
      expect(listed).toEqual([
        'mail#marked',
        String(clock.now() - 1_001),
        'mail#expired',
        String(clock.now()),
      ]);
      expect(await admin.zcard(store.unresolvedKey('RETRY_PENDING'))).toBe(0);
    } finally {
      client.disconnect();
    }
  });

  it("counts each reason's records in one script, for the monitor: none, then those parked", async () => {
    const client = server.client();
    const scripts = countScripts(client);
    try {
      const { store } = valkeyStore(scripts.client);
      expect(await store.countUnresolved()).toEqual({ inDoubt: 0, retryPending: 0 });
      const error = { name: 'OutcomeUnknownError', message: 'timed out' };
      for (const key of ['one', 'two']) await store.markInDoubt(await acquired(store, key), error);
      await acquired(store, 'completed').then((lease) => store.complete(lease, {}));
      scripts.reset();
      expect(await store.countUnresolved()).toEqual({ inDoubt: 2, retryPending: 0 });
      expect(scripts.total()).toBe(1);
    } finally {
      client.disconnect();
    }
  });
});

describe('Valkey: configuration', () => {
  it('refuses a client without evalsha and eval, and a ttlSeconds that is not a positive integer', () => {
    expect(() => new ValkeyIdempotencyStore({ client: {} as never })).toThrow(IdempotencyConfigurationError);
    const client = { evalsha: async () => null, eval: async () => null };
    expect(() => new ValkeyIdempotencyStore({ client, ttlSeconds: 0 })).toThrow(/positive integer/);
    expect(() => new ValkeyIdempotencyStore({ client, keyprefix: 'x' } as never)).toThrow(
      OncelyConfigurationError,
    );
  });

  it('refuses a waitForReplicas without positive integers, or for a client without wait() and client()', () => {
    const client = {
      evalsha: async () => null,
      eval: async () => null,
      wait: async () => 1,
      client: async () => 1,
    };
    for (const waitForReplicas of [
      { replicas: 0, timeoutMs: 100 },
      { replicas: 1, timeoutMs: 0 },
      { replicas: 1.5, timeoutMs: 100 },
    ]) {
      expect(() => new ValkeyIdempotencyStore({ client, waitForReplicas })).toThrow(/positive integer/);
    }
    expect(
      () => new ValkeyIdempotencyStore({ client, waitForReplicas: { replica: 1, timeoutMs: 100 } as never }),
    ).toThrow(OncelyConfigurationError);
    const { wait: _, ...withoutWait } = client;
    const { client: __, ...withoutClientId } = client;
    for (const lacking of [withoutWait, withoutClientId]) {
      expect(
        () =>
          new ValkeyIdempotencyStore({ client: lacking, waitForReplicas: { replicas: 1, timeoutMs: 100 } }),
      ).toThrow(/wait\(\) \(WAIT\) and client\('ID'\)/);
    }
  });

  it('refuses transactional mode: in a consumer when it is made, and in TransactionalIdempotency', () => {
    const store = new ValkeyIdempotencyStore({
      client: { evalsha: async () => null, eval: async () => null },
    });
    const ledger = transactionalOperation({ namespace: 'ledger', plan: () => ({ writes: [] }) });
    expect(() => fifoBatch({ store, operations: { Booked: ledger } })).toThrow(TransactionalStoreError);
    expect(() => fifoBatch({ store, operations: { Booked: ledger } })).toThrow(/one DynamoDB transaction/);
    expect(() => new TransactionalIdempotency({ store: store as never, namespace: 'ledger' })).toThrow(
      TransactionalStoreError,
    );
  });
});

describe('Valkey: a FIFO consumer on it', () => {
  /** An SQS record of group `g` carrying an Oncely envelope. */
  const sqsRecord = (key: string, payload: unknown, receiveCount = 1): SQSRecord => ({
    messageId: `m-${key}`,
    receiptHandle: `r-${key}`,
    body: JSON.stringify({ type: 'Mail', key, groupId: 'g', payload, publishedAt: new Date().toISOString() }),
    attributes: {
      ApproximateReceiveCount: String(receiveCount),
      SentTimestamp: String(Date.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      MessageGroupId: 'g',
      MessageDeduplicationId: key,
      SequenceNumber: '1',
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:mail.fifo',
    awsRegion: 'us-east-1',
  });

  it('runs a group pipelined, dead-letters a poison record once, and answers its redelivery from the records', async () => {
    const client = server.client();
    try {
      const { store, read } = valkeyStore(client);
      const sent: unknown[] = [];
      const sqs = {
        send: async (command: { input: unknown }) => sent.push(command.input),
      } as unknown as SQSClient;
      const ran: string[] = [];
      const mail = leaseOperation({
        namespace: 'mail',
        mode: 'at-most-once',
        cache: false,
        run: ({ key, payload }) => {
          ran.push(key);
          if (payload === 'poison') throw new NonRetryableError('no such address');
          return `sent ${key}`;
        },
      });
      const options = {
        store,
        operations: { Mail: mail },
        deadLetterQueue: {
          client: sqs,
          queueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/mail-dlq.fifo',
        },
        telemetry: 'off' as const,
      };
      const batch = (receiveCount: number): SQSEvent => ({
        Records: [
          sqsRecord('a', 1, receiveCount),
          sqsRecord('b', 2, receiveCount),
          sqsRecord('p', 'poison', receiveCount),
          sqsRecord('c', 3, receiveCount),
        ],
      });

      expect(await processFifoBatch(batch(1), lambdaContext(), options)).toEqual({ batchItemFailures: [] });
      expect(ran).toEqual(['a', 'b', 'p', 'c']);
      expect(sent).toHaveLength(1);
      // b's lease was started by a's completion: one write between two effects (DESIGN §4.1).
      expect(await read('mail#a')).toMatchObject({ status: 'COMPLETED', startedNext: { id: 'mail#b' } });
      expect(await read('mail#p')).toMatchObject({ status: 'REJECTED' });
      expect(await read('mail#c')).toMatchObject({ status: 'COMPLETED', result: '"sent c"' });
      expect(await read(deadLetterMarkId('m-p'))).toMatchObject({ deadLetteredAt: expect.any(Number) });

      // The whole batch again (its answer was lost): nothing runs, nothing is sent again.
      expect(await processFifoBatch(batch(2), lambdaContext(), options)).toEqual({ batchItemFailures: [] });
      expect(ran).toEqual(['a', 'b', 'p', 'c']);
      expect(sent).toHaveLength(1);
    } finally {
      client.disconnect();
    }
  });
});
