import { createHash, randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { Redis } from 'iovalkey';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import {
  CONSUMER_METRICS,
  type ConsumerOperation,
  type FifoBatchOptions,
  fifoBatch,
  leaseOperation,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import {
  DynamoDBIdempotencyStore,
  type IdempotencyMode,
  LeaseIdempotency,
} from '../../lambdas/idempotency/index.js';
import type { Lease, LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { VALKEY_SCRIPTS } from '../../lambdas/idempotency/valkey-scripts.js';
import { ValkeyIdempotencyStore, type ValkeyScriptClient } from '../../lambdas/idempotency/valkey-store.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import {
  LEASE_STORES,
  type LeaseRecords,
  type LeaseStoreName,
  leaseRecords,
} from '../support/lease-stores.js';
import { isAcquire, loseAnswers } from '../support/sdk-middleware.js';
import { type FifoQueue, named, publish } from '../support/sqs.js';
import { type Poll, pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { type StoreStep, steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Issue 13: a group's lease-mode records take their leases together, and each record's completion
// is written while the next record runs (at-least-once) or names the next record, which starts it
// (at-most-once) — keeping DESIGN §3–§5: fencing, order, a failure stopping its group with its
// unused leases given back, the deadline, no acknowledgement without a record. Against the SQS
// emulator, the records in DynamoDB Local or Valkey; each test owns its queues, keys and store,
// faulted at its steps (test/support/store-steps.ts) whichever store is under it.

const world = consumerTestWorld('pipeline-idem', 'pipeline-business');
let sqs: SQSClient;
let idempotencyTable: string;
let businessTable: string;
beforeAll(() => {
  ({ sqs } = world);
  [idempotencyTable, businessTable] = world.tables as [string, string];
});

/**
 * A queue and its DLQ. Tests that wait for a redelivery take a 1 s visibility timeout; the others a
 * long one, so that a batch slowed by the other tests still deletes what it acknowledged.
 */
const queuePair = (visibilityTimeoutSeconds = 30) => world.queuePair({ visibilityTimeoutSeconds });

/** A store clock that tests move forward, to expire leases. */
function movableClock() {
  let offsetMs = 0;
  return { now: () => Date.now() + offsetMs, advance: (ms: number) => (offsetMs += ms) };
}

/** The name a test gave a message ("A1"), from a record id `namespace#A1-1a2b3c4d`. */
const nameOf = (id: string) => id.slice(id.indexOf('#') + 1).split('-')[0] as string;

/**
 * A lease-mode operation whose effect logs `effect <name>` to `timeline` and may fail; `ran` lists
 * the names it ran, in order.
 */
function loggingOperation(
  mode: IdempotencyMode,
  timeline: string[] = [],
  options: { fail?: (name: string, runs: number) => void; onRun?: (ran: string[]) => void } = {},
) {
  const ran: string[] = [];
  const operation = leaseOperation({
    namespace: `pipe-${randomUUID().slice(0, 8)}`,
    mode,
    payload: z.object({ name: z.string() }),
    run: ({ payload: { name } }) => {
      ran.push(name);
      timeline.push(`effect ${name}`);
      options.fail?.(name, ran.filter((other) => other === name).length);
      options.onRun?.(ran);
      return name;
    },
  });
  return { ran, operation, idOf: (message: { key: string }) => `${operation.namespace}#${message.key}` };
}

/** A store on `records` whose steps a test watches and faults, its round trips counted (`requests`). */
function steppedRecords(records: LeaseRecords, now?: () => number) {
  const counted = records.countedStore({ now });
  return { ...steppedStore(counted.store), requests: counted.requests };
}
type Steps = ReturnType<typeof steppedRecords>;

/** How many calls of each step the store was asked for. */
function stepCounts(steps: Steps): Partial<Record<StoreStep, number>> {
  const counts: Partial<Record<StoreStep, number>> = {};
  for (const { step } of steps.calls) counts[step] = (counts[step] ?? 0) + 1;
  return counts;
}

/** The round trips one store sends for what a test asserts of both: DynamoDB's requests, Valkey's scripts. */
const ofStore = <T>(name: LeaseStoreName, each: Record<LeaseStoreName, T>): T => each[name];

/** The lease a completion starts with its own write (at-most-once: the next record's), if any. */
const startedBy = (args: unknown[]) => args[2] as Lease | undefined;

/**
 * Logs the steps of `steps` to `timeline`: `acquire <name>` when an acquire is asked for, `started
 * <name>` when a write that marks a lease started (its start mark, or the completion before it) is answered.
 */
function watchSteps(steps: Steps, timeline: string[]): void {
  const all = () => true;
  steps.watch('acquire', all, { before: (call) => timeline.push(`acquire ${nameOf(call.id)}`) });
  steps.watch('markStarted', all, {
    after: (call, marked) => {
      if (marked === true) timeline.push(`started ${nameOf(call.id)}`);
    },
  });
  steps.watch('complete', (call) => startedBy(call.args) !== undefined, {
    after: (call, written) => {
      const next = startedBy(call.args);
      if (written === true && next) timeline.push(`started ${nameOf(next.id)}`);
    },
  });
}

function consumer(
  operations: Record<string, ConsumerOperation>,
  dlqUrl: string,
  store: LeaseStore,
  batch: Partial<FifoBatchOptions> = {},
) {
  const metrics = metricsRecorder();
  const handler = middy<SQSEvent, SQSBatchResponse>().use(
    fifoBatch({
      store,
      operations,
      deadLetterQueue: { client: sqs, queueUrl: dlqUrl },
      logger: silentLogger(),
      metrics,
      ...batch,
    }),
  );
  return { handler, metrics, store };
}

/** Publishes messages `<group>1` … `<group>count` in order; returns them with their message ids. */
async function publishGroup(queue: FifoQueue, group: string, count: number) {
  const messages = Array.from({ length: count }, (_, index) => named(group, `${group}${index + 1}`));
  const ids: string[] = [];
  for (const message of messages) ids.push(await publish(sqs, queue.url, message));
  return { messages, ids };
}

/** Polls are done once every message of `ids` was deleted (acknowledged) by one of them. */
const allDeleted = (ids: readonly string[]) => (polls: Poll[]) =>
  ids.every((id) => polls.some((poll) => poll.deleted.includes(id)));

const failureIds = (response: SQSBatchResponse | undefined) =>
  response?.batchItemFailures.map((failure) => failure.itemIdentifier);

describe.concurrent.each(LEASE_STORES)(
  'lease mode: a group’s records pipelined (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it('at-least-once: takes the group’s leases together and runs each effect while the completions before it are unanswered', async () => {
      const { queue, dlq } = await queuePair();
      const steps = steppedRecords(records);
      const timeline: string[] = [];
      // Every completion is answered only once all ten effects ran: a group that waited for one
      // before its next effect would never finish.
      let allRan!: () => void;
      steps.holdAnswers('complete', () => true, new Promise<void>((resolve) => (allRan = resolve)));
      watchSteps(steps, timeline);
      const { ran, operation, idOf } = loggingOperation('at-least-once', timeline, {
        onRun: (names) => names.length === 10 && allRan(),
      });
      const { handler } = consumer({ Named: operation }, dlq.url, steps.store);
      const { messages, ids } = await publishGroup(queue, 'A', 10);

      const poll = await pollOnce(sqs, queue, handler);
      expect(poll.records).toHaveLength(10);
      expect(failureIds(poll.response)).toEqual([]);
      expect(poll.deleted).toEqual(ids);
      expect(ran).toEqual(messages.map((message) => message.payload.name));
      // Two steps per record, as before: the lease and the completion; one round trip each (on
      // DynamoDB a put, the record being new, and an update).
      expect(stepCounts(steps)).toEqual({ acquire: 10, complete: 10 });
      expect(steps.requests()).toEqual(
        ofStore(storeName, {
          DynamoDB: { PutItem: 10, UpdateItem: 10 },
          Valkey: { acquire: 10, outcome: 10 },
        }),
      );
      // Every lease was asked for before the first effect ran.
      const firstEffect = timeline.indexOf('effect A1');
      expect(timeline.slice(0, firstEffect).filter((event) => event.startsWith('acquire'))).toHaveLength(10);
      for (const message of messages) {
        expect(await records.read(idOf(message))).toMatchObject({ status: 'COMPLETED' });
      }
    });

    it('at-most-once: starts each later effect only once the completion before it, which starts it, is answered', async () => {
      const { queue, dlq } = await queuePair();
      const steps = steppedRecords(records);
      const timeline: string[] = [];
      watchSteps(steps, timeline);
      const { ran, operation, idOf } = loggingOperation('at-most-once', timeline);
      const { handler } = consumer({ Named: operation }, dlq.url, steps.store);
      const { messages, ids } = await publishGroup(queue, 'A', 10);

      const poll = await pollOnce(sqs, queue, handler);
      expect(poll.deleted).toEqual(ids);
      expect(ran).toEqual(messages.map((message) => message.payload.name));
      // 10 leases and 10 completions, 9 of them starting the next record: as many writes as at-least-once.
      expect(stepCounts(steps)).toEqual({ acquire: 10, complete: 10 });
      expect(steps.count('complete', (call) => startedBy(call.args) !== undefined)).toBe(9);
      expect(steps.requests()).toEqual(
        ofStore(storeName, {
          DynamoDB: { PutItem: 10, UpdateItem: 10 },
          Valkey: { acquire: 10, outcome: 10 },
        }),
      );
      const firstEffect = timeline.indexOf('effect A1');
      expect(timeline.slice(0, firstEffect).filter((event) => event.startsWith('acquire'))).toHaveLength(10);
      for (const { payload } of messages.slice(1)) {
        expect(timeline.indexOf(`started ${payload.name}`)).toBeGreaterThan(-1);
        expect(timeline.indexOf(`started ${payload.name}`)).toBeLessThan(
          timeline.indexOf(`effect ${payload.name}`),
        );
      }
      for (const message of messages) {
        const record = await records.read(idOf(message));
        expect(record).toMatchObject({ status: 'COMPLETED' });
        expect(record?.unstarted).toBeUndefined();
      }
    });

    it('a failure stops the group and gives back the leases taken ahead; the group comes back in order', async () => {
      const { queue, dlq } = await queuePair(1);
      const steps = steppedRecords(records);
      const { ran, operation, idOf } = loggingOperation('at-most-once', [], {
        fail: (name, runs) => {
          if (name === 'A2' && runs === 1) throw new Error('the gateway answered 503');
        },
      });
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store);
      const { messages, ids } = await publishGroup(queue, 'A', 4);

      const first = await pollOnce(sqs, queue, handler);
      expect(failureIds(first.response)).toEqual(ids.slice(1));
      expect(ran).toEqual(['A1', 'A2']);
      expect(await records.read(idOf(messages[1] as { key: string }))).toMatchObject({
        status: 'FAILED',
      });
      for (const message of messages.slice(2)) expect(await records.read(idOf(message))).toBeUndefined();
      // A3's and A4's leases given back, one round trip each.
      const givenBack = steps.calls
        .filter((call) => call.step === 'releaseWithRetries')
        .map((call) => call.id);
      expect(givenBack.sort()).toEqual(messages.slice(2).map(idOf).sort());
      expect(steps.requests()[ofStore(storeName, { DynamoDB: 'DeleteItem', Valkey: 'release' })]).toBe(2);
      expect(metrics.counts[CONSUMER_METRICS.skipped]).toBe(2);

      await pollUntil(sqs, queue, handler, allDeleted(ids.slice(1)));
      expect(ran).toEqual(['A1', 'A2', 'A2', 'A3', 'A4']);
      expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBeUndefined();
    });

    it('a lease another invocation holds fails its record at its turn; the records before it run, the leases after it are given back', async () => {
      const { queue, dlq } = await queuePair();
      const { ran, operation, idOf } = loggingOperation('at-least-once');
      const { handler, metrics, store } = consumer({ Named: operation }, dlq.url, records.store());
      const { messages, ids } = await publishGroup(queue, 'A', 4);
      // Another invocation holds A3's key right now.
      const elsewhere = new LeaseIdempotency({
        store,
        namespace: operation.namespace,
        mode: 'at-least-once',
      });
      const a3 = messages[2] as (typeof messages)[number];
      const held = await elsewhere.start({ key: a3.key, payload: { type: a3.type, payload: a3.payload } });
      expect(held.status).toBe('acquired');

      const poll = await pollOnce(sqs, queue, handler);
      expect(failureIds(poll.response)).toEqual(ids.slice(2));
      expect(ran).toEqual(['A1', 'A2']);
      expect(metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);
      expect(await records.read(idOf(a3))).toMatchObject({ status: 'IN_PROGRESS' });
      expect(await records.read(idOf(messages[3] as { key: string }))).toBeUndefined();
    });

    it('the deadline: a record that may not start gives back its lease and those after it, unmarked', async () => {
      const { queue, dlq } = await queuePair(1);
      const steps = steppedRecords(records);
      let remaining = 30_000;
      const { ran, operation, idOf } = loggingOperation('at-most-once', [], {
        onRun: () => {
          remaining = 4_000; // after A1, below the reserve
        },
      });
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store, {
        recordTimeReserveMs: 5_000,
      });
      const { messages, ids } = await publishGroup(queue, 'A', 3);
      const context: Context = { ...lambdaContext(), getRemainingTimeInMillis: () => remaining };

      const first = await pollOnce(sqs, queue, handler, { context });
      expect(failureIds(first.response)).toEqual(ids.slice(1));
      expect(ran).toEqual(['A1']);
      expect(metrics.counts[CONSUMER_METRICS.deferredAtDeadline]).toBe(2);
      // A1's completion went alone: A2 could not be marked started. A2 and A3 go back to SQS, so
      // each also asks its record (given back: none) to outlive its dedup horizon (DESIGN §2).
      expect(stepCounts(steps)).toEqual({ acquire: 3, complete: 1, releaseWithRetries: 2, keepUntil: 2 });
      expect(steps.count('complete', (call) => startedBy(call.args) !== undefined)).toBe(0);
      expect(steps.requests()).toEqual(
        ofStore(storeName, {
          DynamoDB: { PutItem: 3, UpdateItem: 3, DeleteItem: 2 },
          Valkey: { acquire: 3, outcome: 1, release: 2, keepUntil: 2 },
        }),
      );
      for (const message of messages.slice(1)) expect(await records.read(idOf(message))).toBeUndefined();

      remaining = 30_000;
      await pollUntil(sqs, queue, handler, allDeleted(ids.slice(1)), {
        context: { ...lambdaContext(), getRemainingTimeInMillis: () => 30_000 },
      });
      expect(ran).toEqual(['A1', 'A2', 'A3']);
      expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBeUndefined();
    });

    it('at-least-once: a completion that cannot be written fails its record and holds back the records run after it; their redelivery is a duplicate', async () => {
      const { queue, dlq } = await queuePair(1);
      const clock = movableClock();
      const steps = steppedRecords(records, clock.now);
      // A1's completion is asked for only once all four effects ran, and then fails: the records
      // after it ran while it was being written, as they do when the write's retries take their time.
      let allRan!: () => void;
      const ranAll = new Promise<void>((resolve) => (allRan = resolve));
      const { ran, operation, idOf } = loggingOperation('at-least-once', [], {
        onRun: (names) => names.length === 4 && allRan(),
      });
      const { messages, ids } = await publishGroup(queue, 'A', 4);
      const a1 = idOf(messages[0] as { key: string });
      // Held, then failed: the faults of one step apply in the order they were added.
      steps.hold('complete', (call) => call.id === a1, ranAll);
      const outage = steps.fail('complete', (call) => call.id === a1);
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store);

      const first = await pollOnce(sqs, queue, handler);
      expect(failureIds(first.response)).toEqual(ids);
      expect(ran).toEqual(['A1', 'A2', 'A3', 'A4']);
      expect(outage.failures).toBeGreaterThan(0);
      expect(metrics.counts[CONSUMER_METRICS.completionWriteFailed]).toBe(1);
      expect(metrics.counts[CONSUMER_METRICS.heldBack]).toBe(3);
      expect(await records.read(a1)).toMatchObject({ status: 'IN_PROGRESS' });
      for (const message of messages.slice(1)) {
        expect(await records.read(idOf(message))).toMatchObject({ status: 'COMPLETED' });
      }

      outage.stop();
      clock.advance(60_000); // past A1's lease
      await pollUntil(sqs, queue, handler, allDeleted(ids));
      // At-least-once re-runs the effect whose completion went unrecorded; the others ran once.
      expect(ran).toEqual(['A1', 'A2', 'A3', 'A4', 'A1']);
      expect(metrics.counts[CONSUMER_METRICS.duplicate]).toBe(3);
    });

    it('at-most-once: a completion that starts the next lease and cannot be written fails its record; the next leases go back unmarked and run once', async () => {
      const { queue, dlq } = await queuePair(1);
      const clock = movableClock();
      const steps = steppedRecords(records, clock.now);
      const { ran, operation, idOf } = loggingOperation('at-most-once');
      const outage = steps.fail('complete', (call) => startedBy(call.args) !== undefined);
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store);
      const { messages, ids } = await publishGroup(queue, 'A', 3);

      const first = await pollOnce(sqs, queue, handler);
      expect(failureIds(first.response)).toEqual(ids);
      expect(ran).toEqual(['A1']);
      expect(outage.failures).toBe(3);
      expect(await records.read(idOf(messages[0] as { key: string }))).toMatchObject({
        status: 'IN_PROGRESS',
      });
      for (const message of messages.slice(1)) expect(await records.read(idOf(message))).toBeUndefined();

      outage.stop();
      clock.advance(60_000);
      await pollUntil(sqs, queue, handler, allDeleted(ids));
      // A1's effect ran and its record could not say so: in doubt. A2 and A3 never started: run once.
      expect(ran).toEqual(['A1', 'A2', 'A3']);
      expect(await records.read(idOf(messages[0] as { key: string }))).toMatchObject({
        status: 'IN_DOUBT',
      });
      expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBe(1);
    });

    it('takes one lease per key: a message that comes twice in its group runs once, the second copy a duplicate', async () => {
      const { queue, dlq } = await queuePair();
      const { ran, operation } = loggingOperation('at-most-once');
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, records.store());
      const message = named('A', 'A1');
      const ids = [
        await publish(sqs, queue.url, message),
        await publish(sqs, queue.url, named('A', 'A2')),
        await publish(sqs, queue.url, message, randomUUID()), // the same message after SQS's window
      ];

      const poll = await pollOnce(sqs, queue, handler);
      expect(failureIds(poll.response)).toEqual([]);
      expect(poll.deleted).toEqual(ids);
      expect(ran).toEqual(['A1', 'A2']);
      expect(metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
    });
  },
);

// The SDK's own retries and transactional mode: DynamoDB's.
describe.concurrent('lease mode on DynamoDB: a group’s records pipelined', () => {
  // The SDK sends an applied write again after its answer was lost, and the store finds its own
  // token: a retry below the store's steps (a step whose answer is lost reaches the consumer as a
  // store failure). Valkey's counterpart, iovalkey's resend, is in the describe after this one.
  it('answers lost after the new requests were applied change nothing: each effect once, every record COMPLETED', async () => {
    const { queue, dlq } = await queuePair();
    const client = localDynamoClient();
    const { ran, operation, idOf } = loggingOperation('at-most-once');
    // The first answer of each such request is lost; the SDK's retry of it gets its answer.
    const once = () => {
      const seen = new Set<string>();
      return (input: Record<string, unknown>) => {
        const request = JSON.stringify(input);
        if (seen.has(request)) return false;
        seen.add(request);
        return true;
      };
    };
    const [firstAcquire, firstStart, firstChained] = [once(), once(), once()];
    const acquiresLost = loseAnswers(
      client,
      (name, input) => isAcquire(name, input) && firstAcquire(input),
      100,
    );
    const startsLost = loseAnswers(
      client,
      (name, input) =>
        name === 'UpdateItem' &&
        String(input.UpdateExpression).includes('REMOVE unstarted') &&
        firstStart(input),
      100,
    );
    const chainedLost = loseAnswers(
      client,
      (name, input) => name === 'UpdateItem' && startsNext(input) && firstChained(input),
      100,
    );
    const { handler } = consumer({ Named: operation }, dlq.url, dynamoDbStore(client));
    // A0 has no operation and goes to the DLQ: A1's lease, taken ahead, is then marked started on its own.
    await publish(sqs, queue.url, named('A', 'A0', 'NoSuchType'));
    const { messages } = await publishGroup(queue, 'A', 3);

    const poll = await pollOnce(sqs, queue, handler);
    expect(failureIds(poll.response)).toEqual([]);
    expect(ran).toEqual(['A1', 'A2', 'A3']);
    expect(acquiresLost.lost).toBe(3);
    expect(startsLost.lost).toBe(1);
    expect(chainedLost.lost).toBe(2);
    for (const message of messages) {
      expect(await readItem(idempotencyTable, idOf(message))).toMatchObject({ status: 'COMPLETED' });
    }
    client.destroy();
  });

  // Transactional mode keeps its records in DynamoDB only (its point is one DynamoDB transaction).
  it('keeps the order of a group that mixes transactional, at-least-once and at-most-once records', async () => {
    const { queue, dlq } = await queuePair();
    const client = localDynamoClient();
    const order: string[] = [];
    const atLeastOnce = loggingOperation('at-least-once', order);
    const atMostOnce = loggingOperation('at-most-once', order);
    const transactional = transactionalOperation({
      namespace: `pipe-tx-${randomUUID().slice(0, 8)}`,
      payload: z.object({ name: z.string() }),
      plan: ({ key, payload: { name } }) => {
        order.push(`effect ${name}`);
        return { writes: [{ Put: { TableName: businessTable, Item: { id: key } } }] };
      },
    });
    const { handler } = consumer(
      { Tx: transactional, Least: atLeastOnce.operation, Most: atMostOnce.operation },
      dlq.url,
      dynamoDbStore(client),
    );
    const kinds = ['Tx', 'Least', 'Most', 'Most', 'Tx', 'Least', 'Most'];
    const ids: string[] = [];
    for (const [index, type] of kinds.entries())
      ids.push(await publish(sqs, queue.url, named('A', `A${index + 1}`, type)));
    const startedByCompletion: string[] = [];
    client.middlewareStack.add(
      (next) => async (args) => {
        const started = (args.input as Record<string, unknown>).ExpressionAttributeValues as
          | { ':startedNext'?: { M?: { id?: { S?: string } } } }
          | undefined;
        const id = started?.[':startedNext']?.M?.id?.S;
        if (id) startedByCompletion.push(nameOf(id));
        return next(args);
      },
      { step: 'build', name: 'startedByCompletion' },
    );

    const poll = await pollOnce(sqs, queue, handler);
    expect(failureIds(poll.response)).toEqual([]);
    expect(poll.deleted).toEqual(ids);
    expect(order).toEqual(kinds.map((_, index) => `effect A${index + 1}`));
    // Only an at-most-once record's completion starts the next lease (A4 after A3); A3 and A7,
    // after an at-least-once record, are marked started on their own.
    expect(startedByCompletion).toEqual(['A4']);
    client.destroy();
  });
});

// iovalkey sends a command again after its reply was lost with its connection (its
// autoResendUnfulfilledCommands), and the store's scripts find their own token: Valkey's
// counterpart of the SDK's retry above, below the store's steps too.
describe.concurrent('lease mode on Valkey: a group’s records pipelined', () => {
  let client: Redis;
  let reader: Redis;
  beforeAll(() => {
    const port = inject('valkeyPort');
    if (!port)
      throw new Error(
        "no valkeyPort: this file needs the run's redis-server (test/support/global-setup.ts).",
      );
    client = new Redis({ host: '127.0.0.1', port });
    reader = new Redis({ host: '127.0.0.1', port });
  });
  afterAll(() => {
    client.disconnect();
    reader.disconnect();
  });

  /**
   * A client that sends each script `resend` picks twice, as iovalkey does after a reconnect: the
   * first is applied and its reply lost, the second's reply is the one the store gets. (EVALSHA, or
   * the EVAL of a script the server did not have yet.)
   */
  function resending(resend: (script: string, args: Record<string, unknown>) => boolean) {
    const lost: Record<string, number> = {};
    const twice = async (
      name: string | undefined,
      rest: (string | number)[],
      send: () => Promise<unknown>,
    ) => {
      if (name && resend(name, JSON.parse(String(rest.at(-1))) as Record<string, unknown>)) {
        await send();
        lost[name] = (lost[name] ?? 0) + 1;
      }
      return send();
    };
    const scriptNamed = (sha: string) =>
      Object.values(VALKEY_SCRIPTS).find((script) => script.sha === sha)?.name;
    const resent: ValkeyScriptClient = {
      evalsha: (sha, numkeys, ...rest) =>
        twice(scriptNamed(sha), rest, () => client.evalsha(sha, numkeys, ...rest)),
      eval: (source, numkeys, ...rest) =>
        twice(scriptNamed(createHash('sha1').update(source).digest('hex')), rest, () =>
          client.eval(source, numkeys, ...rest),
        ),
    };
    return { client: resent, lost };
  }

  it('answers lost after the new scripts were applied change nothing: each effect once, every record COMPLETED', async () => {
    const { queue, dlq } = await queuePair();
    const keyPrefix = `t-${randomUUID().slice(0, 8)}:`;
    const { ran, operation, idOf } = loggingOperation('at-most-once');
    const scripts = resending(
      (script, args) =>
        script === 'acquire' ||
        (script === 'touch' && (args.unset as string[]).includes('unstarted')) ||
        (script === 'outcome' && (args.set as { startedNext?: unknown }).startedNext !== undefined),
    );
    const store = new ValkeyIdempotencyStore({ client: scripts.client, keyPrefix });
    const { handler } = consumer({ Named: operation }, dlq.url, store);
    // A0 has no operation and goes to the DLQ: A1's lease, taken ahead, is then marked started on its own.
    await publish(sqs, queue.url, named('A', 'A0', 'NoSuchType'));
    const { messages } = await publishGroup(queue, 'A', 3);

    const poll = await pollOnce(sqs, queue, handler);
    expect(failureIds(poll.response)).toEqual([]);
    expect(ran).toEqual(['A1', 'A2', 'A3']);
    // Three acquires, A1's start mark, the two completions that start A2 and A3.
    expect(scripts.lost).toEqual({ acquire: 3, touch: 1, outcome: 2 });
    for (const message of messages) {
      const raw = await reader.get(`${keyPrefix}${idOf(message)}`);
      expect(raw === null ? undefined : JSON.parse(raw)).toMatchObject({ status: 'COMPLETED' });
    }
  });
});

/** A DynamoDB store on the file's table through `client` (its requests faulted by the test). */
const dynamoDbStore = (client: DynamoDBClient) =>
  new DynamoDBIdempotencyStore({ client, tableName: idempotencyTable });

/** Whether a marshalled request is a completion that lets the next record's lease start. */
const startsNext = (input: Record<string, unknown>) =>
  (input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[':startedNext'] !== undefined;

/**
 * An at-most-once operation whose effect logs its name to `ran` and, for the name `waitIn`, calls
 * `onWait` and then waits for `until` before it returns.
 */
function waitingOperation(waitIn: string, onWait: () => void, until: Promise<void>) {
  const ran: string[] = [];
  const operation = leaseOperation({
    namespace: `pipe-${randomUUID().slice(0, 8)}`,
    mode: 'at-most-once',
    payload: z.object({ name: z.string() }),
    run: async ({ payload: { name } }) => {
      ran.push(name);
      if (name === waitIn) {
        onWait();
        await until;
      }
      return name;
    },
  });
  return { ran, operation, idOf: (message: { key: string }) => `${operation.namespace}#${message.key}` };
}

// Issue 26, finding 3: a completion written after the group can no longer run the next record must
// not start that record's lease — if its give-back then fails too, the redelivery would park an
// effect that never ran.
describe.concurrent.each(LEASE_STORES)(
  'lease mode: no successor started once the group cannot go on (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it('a batch that fails while an at-most-once effect runs: its completion starts no next lease, whose failed give-back then leaves it to run once', async () => {
      const { queue, dlq } = await queuePair(1);
      const clock = movableClock();
      const steps = steppedRecords(records, clock.now);
      // A2's effect lets B1's acquire go and fail (throttled: the batch fails as a whole), then waits
      // until the batch has failed: B2's lease, taken ahead, is given back only then.
      let effectRuns!: () => void;
      let batchFailed!: () => void;
      const aborted = new Promise<void>((resolve) => (batchFailed = resolve));
      const { ran, operation, idOf } = waitingOperation('A2', () => effectRuns(), aborted);
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store);
      const a = await publishGroup(queue, 'A', 3);
      const b = await publishGroup(queue, 'B', 2);
      const [a3, b1, b2] = [a.messages[2], b.messages[0], b.messages[1]].map((message) =>
        idOf(message as { key: string }),
      ) as [string, string, string];
      // Held, then failed: the faults of one step apply in the order they were added.
      steps.hold('acquire', (call) => call.id === b1, new Promise<void>((resolve) => (effectRuns = resolve)));
      const throttled = steps.fail(
        'acquire',
        (call) => call.id === b1,
        () =>
          Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
            name: 'ThrottlingException',
          }),
      );
      steps.watch('releaseWithRetries', (call) => call.id === b2, { before: () => batchFailed() });
      // A3's lease cannot be given back either.
      const giveBackFails = steps.failGiveBacks((call) => call.id === a3);

      const first = await pollOnce(sqs, queue, handler);
      expect(first.records).toHaveLength(5);
      expect(first.error).toBeDefined();
      expect(throttled.failures).toBeGreaterThan(0);
      expect(giveBackFails.failures).toBeGreaterThan(0);
      expect(ran).toEqual(['A1', 'A2']);
      expect(await records.read(a3)).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });

      throttled.stop();
      giveBackFails.stop();
      clock.advance(60_000); // past every lease
      await pollUntil(sqs, queue, handler, allDeleted([...a.ids, ...b.ids]));
      // A3's effect never ran: it runs now, once, and nothing is parked.
      expect(ran.filter((name) => name.startsWith('A'))).toEqual(['A1', 'A2', 'A3']);
      expect(await records.read(a3)).toMatchObject({ status: 'COMPLETED' });
      expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBeUndefined();
    });

    it('a group stopped while an at-most-once effect runs: its completion starts no next lease, whose failed give-back then leaves it to run once', async () => {
      const { queue, dlq } = await queuePair(1);
      const clock = movableClock();
      const steps = steppedRecords(records, clock.now);
      // A1 (at-least-once) has its completion fail while A2 runs, which stops the group. A2's
      // effect waits until A1 is counted failed and the event loop has turned once more: by then
      // its verdict has reached the group.
      let stopped!: () => void;
      const groupStopped = new Promise<void>((resolve) => (stopped = resolve));
      const atMostOnce = waitingOperation('A2', () => undefined, groupStopped);
      const atLeastOnce = loggingOperation('at-least-once');
      const metrics = metricsRecorder();
      const watched: typeof metrics = {
        counts: metrics.counts,
        addMetric: (name, unit, value) => {
          metrics.addMetric(name, unit, value);
          if (name === CONSUMER_METRICS.failed) setImmediate(stopped);
        },
      };
      const { handler } = consumer(
        { Least: atLeastOnce.operation, Most: atMostOnce.operation },
        dlq.url,
        steps.store,
        { metrics: watched },
      );
      const messages = [named('A', 'A1', 'Least'), named('A', 'A2', 'Most'), named('A', 'A3', 'Most')];
      const ids: string[] = [];
      for (const message of messages) ids.push(await publish(sqs, queue.url, message));
      const a1 = atLeastOnce.idOf(messages[0] as { key: string });
      const a3 = atMostOnce.idOf(messages[2] as { key: string });
      const completionFails = steps.fail('complete', (call) => call.id === a1);
      // A3's lease cannot be given back.
      const giveBackFails = steps.failGiveBacks((call) => call.id === a3);

      const first = await pollOnce(sqs, queue, handler);
      expect(failureIds(first.response)).toEqual(ids);
      expect(metrics.counts[CONSUMER_METRICS.heldBack]).toBe(1);
      expect(completionFails.failures).toBeGreaterThan(0);
      expect(giveBackFails.failures).toBeGreaterThan(0);
      expect([...atLeastOnce.ran, ...atMostOnce.ran]).toEqual(['A1', 'A2']);
      expect(await records.read(a3)).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });

      completionFails.stop();
      giveBackFails.stop();
      clock.advance(60_000);
      await pollUntil(sqs, queue, handler, allDeleted(ids));
      expect(atMostOnce.ran).toEqual(['A2', 'A3']);
      expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBeUndefined();
    });
  },
);

// Issue 26, finding 4: a copy of a key right behind its original meets the original's record while
// its COMPLETED write is still being written, by this very invocation: it waits for that write and
// is a duplicate, rather than failing as "in progress" and bringing the rest of its group back one
// visibility timeout later.
describe.concurrent.each(LEASE_STORES)(
  'lease mode: a copy right behind its original (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it.each<IdempotencyMode>(['at-least-once', 'at-most-once'])(
      '%s: waits for the original’s COMPLETED write, then is a duplicate; the next record runs in the same delivery',
      async (mode) => {
        const { queue, dlq } = await queuePair();
        const steps = steppedRecords(records);
        const { ran, operation, idOf } = loggingOperation(mode);
        const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store);
        const k = named('A', 'K');
        // K's completion reaches the store a second late (its own second, from when it is asked for):
        // a copy that did not wait for it would meet K's record IN_PROGRESS.
        steps.hold(
          'complete',
          (call) => call.id === idOf(k),
          () => new Promise<void>((resolve) => setTimeout(resolve, 1_000)),
        );
        const ids = [
          await publish(sqs, queue.url, k),
          await publish(sqs, queue.url, k, randomUUID()), // the same message again, after SQS's window
          await publish(sqs, queue.url, named('A', 'L')),
        ];

        const poll = await pollOnce(sqs, queue, handler);
        expect(failureIds(poll.response)).toEqual([]);
        expect(poll.deleted).toEqual(ids);
        expect(ran).toEqual(['K', 'L']);
        expect(steps.count('complete', (call) => call.id === idOf(k))).toBe(1);
        expect(metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
        expect(metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBeUndefined();
      },
    );

    it('at-least-once: an original whose COMPLETED write fails leaves its copy unacknowledged too; the redelivery runs it once more', async () => {
      const { queue, dlq } = await queuePair(1);
      const clock = movableClock();
      const steps = steppedRecords(records, clock.now);
      const { ran, operation, idOf } = loggingOperation('at-least-once');
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, steps.store);
      const k = named('A', 'K');
      const ids = [
        await publish(sqs, queue.url, k),
        await publish(sqs, queue.url, k, randomUUID()),
        await publish(sqs, queue.url, named('A', 'L')),
      ];
      const outage = steps.fail('complete', (call) => call.id === idOf(k));

      const first = await pollOnce(sqs, queue, handler);
      expect(failureIds(first.response)).toEqual(ids);
      expect(ran).toEqual(['K']);
      expect(outage.failures).toBeGreaterThan(0);
      expect(metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBeUndefined();

      outage.stop();
      clock.advance(60_000); // past K's lease
      await pollUntil(sqs, queue, handler, allDeleted(ids));
      expect(ran).toEqual(['K', 'K', 'L']);
    });
  },
);
