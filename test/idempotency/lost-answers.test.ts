import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dynamoDbClientVia } from '../../chaos/sdk-clients.js';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import type { ChaosRequest, Fault } from '../../harness/faults.js';
import {
  DynamoDBIdempotencyStore,
  type IdempotencyObserver,
  LeaseIdempotency,
  type LeaseIdempotencyOptions,
  OutcomeUnknownError,
  RecordNotWrittenError,
  TransactionalIdempotency,
} from '../../lambdas/idempotency/index.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { failRequests, isAcquire, loseAnswers, setsStatus } from '../support/sdk-middleware.js';

// DESIGN §3 and §11: a request applied with its answer lost (the SDK retries it) must be recognised
// as this call's own, never taken for somebody else's work; a record write that keeps failing must
// never let the message be acknowledged.

let client: DynamoDBClient;
let table: string;
let requests: ReturnType<typeof countRequests>;
let now = Date.now();

beforeAll(async () => {
  const setup = localDynamoClient();
  table = await createTable(setup, 'lost-answers');
  setup.destroy();
});

beforeEach(() => {
  client?.destroy();
  client = localDynamoClient();
  requests = countRequests(client);
  now = Date.now();
});

afterAll(() => client.destroy());

const silent: IdempotencyObserver = {
  completionWriteFailed: () => undefined,
  leaseLost: () => undefined,
  inDoubt: () => undefined,
  failureWriteFailed: () => undefined,
  resultNotStored: () => undefined,
};

function lease(options: Partial<LeaseIdempotencyOptions> = {}) {
  const store = new DynamoDBIdempotencyStore({ client, tableName: table, now: () => now });
  return new LeaseIdempotency({
    store,
    namespace: 'lost',
    mode: 'at-most-once',
    observer: silent,
    ...options,
  });
}

const key = () => `k-${Math.random().toString(36).slice(2)}`;

describe('answers lost after the request was applied', () => {
  it('an acquire that creates its record, retried by the SDK, recognises its own lease: the effect runs, nothing is parked', async () => {
    const k = key();
    const lost = loseAnswers(client, (operation, input) => isAcquire(operation, input, 'put'));
    let runs = 0;
    const outcome = await lease({ leaseMs: 60_000 }).run({ key: k, payload: 1 }, async () => ++runs);
    expect(lost.lost).toBe(1);
    expect(outcome).toEqual({ status: 'executed', result: 1, recorded: true });
    expect(requests.counts).toMatchObject({ PutItem: 2, UpdateItem: 1 }); // the put, its retry, complete
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ status: 'COMPLETED', attempts: 1 });
  });

  it('an acquire that takes a FAILED record, retried by the SDK, recognises its own lease and counts one attempt', async () => {
    const k = key();
    const idempotency = lease({ mode: 'at-least-once', leaseMs: 60_000 });
    await expect(
      idempotency.run({ key: k, payload: 1 }, async () => {
        throw new Error('gateway 503');
      }),
    ).rejects.toThrow('gateway 503');
    const lost = loseAnswers(client, (operation, input) => isAcquire(operation, input, 'update'));
    const outcome = await idempotency.run({ key: k, payload: 1 }, async ({ attempt }) => attempt);
    expect(lost.lost).toBe(1);
    expect(outcome).toEqual({ status: 'executed', result: 2, recorded: true });
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
  });

  it('a completion retried by the SDK recognises its own earlier write as done, not as a lost lease', async () => {
    const k = key();
    const lost = loseAnswers(
      client,
      (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'COMPLETED'),
    );
    const outcome = await lease().run({ key: k, payload: 1 }, async () => 'sent');
    expect(lost.lost).toBe(1);
    expect(outcome).toEqual({ status: 'executed', result: 'sent', recorded: true });
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ status: 'COMPLETED', result: '"sent"' });
  });

  it('an IN_DOUBT write retried by the SDK is recognised as its own, and parks the record once', async () => {
    const k = key();
    loseAnswers(client, (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'IN_DOUBT'));
    const outcome = await lease().run({ key: k, payload: 1 }, async () => {
      throw new OutcomeUnknownError('timed out after sending');
    });
    expect(outcome.status).toBe('in-doubt');
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ status: 'IN_DOUBT', unresolved: 'IN_DOUBT' });
  });

  it('a transaction retried by the SDK is applied once and reported as executed', async () => {
    const k = key();
    const counter = `counter-${k}`;
    loseAnswers(client, (operation) => operation === 'TransactWriteItems');
    const store = new DynamoDBIdempotencyStore({ client, tableName: table });
    const ledger = new TransactionalIdempotency({ store, namespace: 'lost-tx', cache: false });
    const outcome = await ledger.run({ key: k, payload: 1 }, () => ({
      writes: [
        {
          Update: {
            TableName: table,
            Key: { id: counter },
            UpdateExpression: 'ADD n :one',
            ExpressionAttributeValues: { ':one': 1 },
          },
        },
      ],
    }));
    expect(outcome.status).toBe('executed');
    expect(requests.counts.TransactWriteItems).toBe(2);
    expect(await readItem<{ n: number }>(table, counter)).toMatchObject({ n: 1 });
  });
});

describe('record writes that keep failing', () => {
  it('an IN_DOUBT write that keeps failing throws, so the message is not acknowledged; the redelivery parks it', async () => {
    const k = key();
    const outage = failRequests(
      client,
      (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'IN_DOUBT'),
    );
    const idempotency = lease({ leaseMs: 1_000 });
    const run = idempotency.run({ key: k, payload: 1, message: { body: 'b', groupId: 'g' } }, async () => {
      throw new OutcomeUnknownError('timed out after sending');
    });
    await expect(run).rejects.toThrow(RecordNotWrittenError);
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ status: 'IN_PROGRESS', attempts: 1 });

    outage.stop();
    now += 1_001; // the lease expired: the redelivery finds it and parks it, with the message
    let runs = 0;
    const redelivery = await idempotency.run(
      { key: k, payload: 1, message: { body: 'b', groupId: 'g' } },
      async () => ++runs,
    );
    expect(redelivery.status).toBe('in-doubt');
    expect(runs).toBe(0);
    const record = await readItem(table, `lost#${k}`);
    expect(record).toMatchObject({
      status: 'IN_DOUBT',
      unresolved: 'IN_DOUBT',
      attempts: 1,
      message: { body: 'b' },
    });
    // Parking removes the record's expiry, so it cannot expire unresolved behind the alarm.
    expect(record).not.toHaveProperty('expiresAt');
  });

  it('counts attempts from the acquire, so a crash after acquiring still shows in the record', async () => {
    const k = key();
    const idempotency = lease({ mode: 'at-least-once', leaseMs: 1_000 });
    await idempotency.start({ key: k, payload: 1 }); // the invocation dies here
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ status: 'IN_PROGRESS', attempts: 1 });
    now += 1_001;
    const takeover = await idempotency.start({ key: k, payload: 1 });
    expect(takeover).toMatchObject({ status: 'acquired', lease: { attempt: 2 } });
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ attempts: 2 });
  });
});

/** The write that lets the effect of a lease taken ahead start. */
const isStartMark = (input: Record<string, unknown>) =>
  String(input.UpdateExpression).includes('REMOVE unstarted');

describe('the requests of leases taken ahead', () => {
  /** The lease of a group's first record, and the next one's taken ahead (unstarted). */
  async function twoLeases(idempotency: LeaseIdempotency) {
    const [k1, k2] = [key(), key()];
    const first = await idempotency.start({ key: k1, payload: 1 });
    const next = await idempotency.startAhead({ key: k2, payload: 2 }, { after: `lost#${k1}` });
    if (first.status !== 'acquired' || next.status !== 'acquired') throw new Error('expected both leases');
    return { ids: [`lost#${k1}`, `lost#${k2}`] as const, keys: [k1, k2] as const, first, next };
  }

  it('an ahead acquire retried by the SDK recognises its own lease, still unstarted', async () => {
    const k = key();
    const lost = loseAnswers(client, (operation, input) => isAcquire(operation, input, 'put'));
    const ahead = await lease().startAhead({ key: k, payload: 1 });
    expect(lost.lost).toBe(1);
    expect(ahead).toMatchObject({ status: 'acquired', awaitingStart: true });
    expect(await readItem(table, `lost#${k}`)).toMatchObject({ unstarted: true, attempts: 1 });
  });

  it('a start mark retried by the SDK finds its lease still its own', async () => {
    const idempotency = lease();
    const { ids, next } = await twoLeases(idempotency);
    const lost = loseAnswers(client, (operation, input) => operation === 'UpdateItem' && isStartMark(input));
    expect(await idempotency.markStarted(next.lease)).toBe(true);
    expect(lost.lost).toBe(1);
    expect((await readItem(table, ids[1]))?.unstarted).toBeUndefined();
  });

  it('a completion that starts the next lease, retried by the SDK, finds its own write: recorded, and started', async () => {
    const idempotency = lease();
    const { ids, first, next } = await twoLeases(idempotency);
    const lost = loseAnswers(
      client,
      (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'COMPLETED'),
    );
    requests.reset();
    const written = await idempotency.recordCompletion(first.lease, 'sent', next.lease);
    expect(lost.lost).toBe(1);
    expect(written).toEqual({ completion: 'recorded', next: 'started' });
    expect(requests.counts).toEqual({ UpdateItem: 2 });
    expect(await readItem(table, ids[0])).toMatchObject({
      status: 'COMPLETED',
      result: '"sent"',
      startedNext: { id: ids[1], token: next.lease.token },
    });
  });

  it('a completion that starts the next lease and keeps failing starts nothing: the next lease is taken over after expiry', async () => {
    const idempotency = lease({ leaseMs: 1_000 });
    const { ids, keys, first, next } = await twoLeases(idempotency);
    const outage = failRequests(
      client,
      (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'COMPLETED'),
    );
    const written = await idempotency.recordCompletion(first.lease, 'sent', next.lease);
    expect(written.completion).toBeInstanceOf(RecordNotWrittenError);
    expect(written.next).toBe('not-started');
    expect(outage.failures).toBe(3); // retried inside the invocation
    expect(await readItem(table, ids[1])).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });

    outage.stop();
    now += 1_001; // the message comes back after the lease: the effect that ran is in doubt, the other one is not
    expect((await idempotency.start({ key: keys[0], payload: 1 })).status).toBe('in-doubt');
    expect(await idempotency.start({ key: keys[1], payload: 2 })).toMatchObject({
      status: 'acquired',
      lease: { attempt: 2 },
    });
  });

  it('a read of the record before an unstarted lease that fails decides nothing: the lease stays, the call throws', async () => {
    const idempotency = lease({ leaseMs: 1_000 });
    const { ids, keys } = await twoLeases(idempotency);
    now += 1_001;
    const outage = failRequests(client, (operation) => operation === 'GetItem');
    await expect(idempotency.start({ key: keys[1], payload: 2 })).rejects.toThrow('injected failure');
    expect(await readItem(table, ids[1])).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });
    expect(await readItem(table, ids[0])).toMatchObject({ status: 'IN_PROGRESS' });
    outage.stop();
    expect(await idempotency.start({ key: keys[1], payload: 2 })).toMatchObject({ status: 'acquired' });
    expect(await readItem(table, ids[0])).toMatchObject({ status: 'IN_DOUBT' });
  });

  it('a fence of the record before, retried by the SDK after its answer was lost, counts as fenced', async () => {
    const idempotency = lease({ leaseMs: 1_000 });
    const { ids, keys } = await twoLeases(idempotency);
    now += 1_001;
    const lost = loseAnswers(
      client,
      (operation, input) => operation === 'UpdateItem' && setsStatus(input, 'IN_DOUBT'),
    );
    expect(await idempotency.start({ key: keys[1], payload: 2 })).toMatchObject({ status: 'acquired' });
    expect(lost.lost).toBe(1);
    expect(await readItem(table, ids[0])).toMatchObject({ status: 'IN_DOUBT' });
  });

  it('a start mark that fails throws, and leaves the lease unstarted', async () => {
    const idempotency = lease();
    const { ids, next } = await twoLeases(idempotency);
    failRequests(client, (operation, input) => operation === 'UpdateItem' && isStartMark(input));
    await expect(idempotency.markStarted(next.lease)).rejects.toThrow('injected failure');
    expect(await readItem(table, ids[1])).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });
  });
});

// Issue 26, finding 7, and DESIGN §3's residue: an acquire that was applied but whose answer was
// lost, every retry of it failing too, leaves a lease no effect ran under. The store gives it back;
// only if every try of that fails as well does the lease stay — and then nothing durable tells it
// from a lease whose invocation crashed after its acquire, so at-most-once parks it.
describe('an acquire applied with its answer lost, the SDK giving up', () => {
  let proxy: FaultProxy;
  let viaProxy: DynamoDBClient;
  /** The fault each request of the key under test gets, by operation. */
  let faults: Partial<Record<string, Fault>> = {};
  let target = '';
  beforeAll(async () => {
    proxy = await startFaultProxy({
      service: 'dynamodb',
      upstream: emulatorEndpoint('dynamodbEndpoint'),
      plan: ({ operation, body }: ChaosRequest) =>
        ((body.Key ?? body.Item) as { id?: { S?: string } } | undefined)?.id?.S === target
          ? faults[operation]
          : undefined,
    });
    viaProxy = dynamoDbClientVia(proxy);
  });
  afterAll(async () => {
    viaProxy.destroy();
    await proxy.close();
  });

  function leaseViaProxy() {
    const store = new DynamoDBIdempotencyStore({ client: viaProxy, tableName: table, now: () => now });
    return new LeaseIdempotency({
      store,
      namespace: 'lost',
      mode: 'at-most-once',
      observer: silent,
      leaseMs: 1_000,
    });
  }

  it('gives the lease back, so the next delivery runs the effect', async () => {
    const k = key();
    target = `lost#${k}`;
    faults = { PutItem: { kind: 'lose-answer' } };
    const idempotency = leaseViaProxy();
    let runs = 0;
    await expect(idempotency.run({ key: k, payload: 1 }, async () => ++runs)).rejects.toThrow();
    expect(runs).toBe(0);
    expect(await readItem(table, target)).toBeUndefined();

    faults = {};
    now += 1_001;
    expect(await idempotency.run({ key: k, payload: 1 }, async () => ++runs)).toMatchObject({
      status: 'executed',
    });
    expect(runs).toBe(1);
  });

  it('gives back the lease its update took of a FAILED record, so the next delivery runs the effect', async () => {
    const k = key();
    target = `lost#${k}`;
    const idempotency = leaseViaProxy();
    let runs = 0;
    await expect(
      idempotency.run({ key: k, payload: 1 }, async () => {
        throw new Error('gateway 503');
      }),
    ).rejects.toThrow('gateway 503');
    faults = { UpdateItem: { kind: 'lose-answer' } };
    await expect(idempotency.run({ key: k, payload: 1 }, async () => ++runs)).rejects.toThrow();
    expect(runs).toBe(0);
    expect(await readItem(table, target)).toBeUndefined();

    faults = {};
    expect(await idempotency.run({ key: k, payload: 1 }, async () => ++runs)).toMatchObject({
      status: 'executed',
    });
    expect(runs).toBe(1);
  });

  it('leaves it when the give-back fails too: at-most-once parks it, the residue DESIGN §3 states', async () => {
    const k = key();
    target = `lost#${k}`;
    faults = { PutItem: { kind: 'lose-answer' }, DeleteItem: { kind: 'fail-before' } };
    const idempotency = leaseViaProxy();
    let runs = 0;
    await expect(idempotency.run({ key: k, payload: 1 }, async () => ++runs)).rejects.toThrow();
    expect(runs).toBe(0);
    // Started (no `unstarted`) under a token no invocation ever got back.
    const left = await readItem(table, target);
    expect(left).toMatchObject({ status: 'IN_PROGRESS', attempts: 1 });
    expect(left?.unstarted).toBeUndefined();

    faults = {};
    now += 1_001;
    expect(await idempotency.run({ key: k, payload: 1 }, async () => ++runs)).toMatchObject({
      status: 'in-doubt',
    });
    expect(runs).toBe(0);
  });
});
