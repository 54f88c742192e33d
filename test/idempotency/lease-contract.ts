import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  IdempotencyConflictError,
  IdempotencyInProgressError,
  type IdempotencyObserver,
  IdempotencyRejectedError,
  LeaseIdempotency,
  type LeaseIdempotencyOptions,
  NonRetryableError,
  OutcomeUnknownError,
  ResultTooLargeError,
} from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { type IdempotencyRecord, MAX_KEPT_MESSAGE_BYTES } from '../../lambdas/idempotency/record.js';
import { lambdaContext } from '../support/lambda-context.js';

// The lease-mode contract (DESIGN §3, §4, §4.1), whatever keeps the records: lease.test.ts runs it
// on DynamoDB Local, valkey-store.test.ts on a real redis-server. What is about one store's
// requests (DynamoDB's PutItem then UpdateItem, Valkey's scripts) stays in that store's file.

/** One store under test: a fresh keyspace per test, and what the contract reads of it. */
export interface StoreHarness {
  /** A store on this test's records, judged by `now`. */
  store(options: { now: () => number; ttlSeconds: number }): LeaseStore;
  /** The record as stored, read outside the counts. */
  read(id: string): Promise<IdempotencyRecord | undefined>;
  /** Round trips to the store since the last reset: requests (DynamoDB) or scripts (Valkey). */
  roundTrips(): number;
  resetRoundTrips(): void;
  /** Reads of a record (`store.read`) since the harness was made: the core reads only to settle an unstarted lease. */
  reads(): number;
  close(): Promise<void> | void;
}

/** A clock the tests move by hand, so leases and records expire without waiting. */
export function manualClock(start = Date.now()) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

export function recordingObserver() {
  const events: { event: string; id: string }[] = [];
  const observer: IdempotencyObserver = {
    completionWriteFailed: (id) => events.push({ event: 'completionWriteFailed', id }),
    leaseLost: (id) => events.push({ event: 'leaseLost', id }),
    inDoubt: (id) => events.push({ event: 'inDoubt', id }),
    failureWriteFailed: (id) => events.push({ event: 'failureWriteFailed', id }),
    resultNotStored: (id) => events.push({ event: 'resultNotStored', id }),
  };
  return { events, observer };
}

/**
 * `store` with one method replaced: `replacement` gets the original (bound to the store, whose
 * private fields a proxy's `this` would not reach) and the call's arguments.
 */
export function withMethod<K extends keyof LeaseStore>(
  store: LeaseStore,
  name: K,
  // biome-ignore lint/suspicious/noExplicitAny: the method's own signature, whatever it is
  replacement: (original: (...args: any[]) => any, ...args: any[]) => unknown,
): LeaseStore {
  return new Proxy(store, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (property === name) return (...args: unknown[]) => replacement(value.bind(target), ...args);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The contract, run against the store `harness` makes for each test. */
export function leaseContract(storeName: string, makeHarness: () => Promise<StoreHarness>): void {
  let harness: StoreHarness;
  let clock: ReturnType<typeof manualClock>;
  let store: LeaseStore;
  /** Reads a test expects: the core reads only to decide an unstarted lease's fate. */
  let readsExpected: number;

  beforeEach(async () => {
    harness = await makeHarness();
    clock = manualClock();
    store = harness.store({ now: clock.now, ttlSeconds: 3600 });
    readsExpected = 0;
  });

  afterEach(async () => {
    // The core never reads before it writes; only an unstarted lease after another record needs a read.
    expect(harness.reads()).toBe(readsExpected);
    await harness.close();
  });

  function lease(options: Partial<LeaseIdempotencyOptions> = {}) {
    return new LeaseIdempotency({
      store,
      namespace: 'mail',
      mode: 'at-least-once',
      cache: false,
      ...options,
    });
  }

  describe(`${storeName}: lease mode: first delivery and duplicates`, () => {
    it('costs two round trips for a first delivery, and one failed acquire for a duplicate', async () => {
      const idempotency = lease();
      let runs = 0;
      const effect = async () => ({ sent: ++runs });

      const first = await idempotency.run({ key: 'k1', payload: { to: 'a@example.com' } }, effect);
      expect(first).toEqual({ status: 'executed', result: { sent: 1 }, recorded: true });
      expect(harness.roundTrips()).toBe(2);

      harness.resetRoundTrips();
      const again = await idempotency.run({ key: 'k1', payload: { to: 'a@example.com' } }, effect);
      expect(again).toEqual({ status: 'duplicate', result: { sent: 1 }, fromCache: false });
      expect(harness.roundTrips()).toBe(1);
      expect(runs).toBe(1);

      const record = await harness.read('mail#k1');
      expect(record).toMatchObject({ status: 'COMPLETED', result: '{"sent":1}', attempts: 1 });
      expect(record?.leaseExpiresAt).toBeUndefined();
    });

    it('answers hot duplicates from the in-memory cache with no request at all', async () => {
      const idempotency = lease({ cache: undefined });
      await idempotency.run({ key: 'k1', payload: 1 }, async () => 'done');
      harness.resetRoundTrips();
      const again = await idempotency.run({ key: 'k1', payload: 1 }, async () => 'again');
      expect(again).toEqual({ status: 'duplicate', result: 'done', fromCache: true });
      expect(harness.roundTrips()).toBe(0);
      await expect(idempotency.run({ key: 'k1', payload: 2 }, async () => 'x')).rejects.toThrow(
        IdempotencyConflictError,
      );
      expect(harness.roundTrips()).toBe(0);
    });

    it('replays an undefined result as a duplicate', async () => {
      const idempotency = lease();
      await idempotency.run({ key: 'k1', payload: 1 }, async () => undefined);
      const again = await idempotency.run({ key: 'k1', payload: 1 }, async () => 'should not run');
      expect(again).toEqual({ status: 'duplicate', result: undefined, fromCache: false });
    });

    it('runs the effect exactly once for 20 concurrent calls with one key', async () => {
      const idempotency = lease();
      let runs = 0;
      let settledOthers = 0;
      let releaseEffect: () => void = () => undefined;
      const othersDone = new Promise<void>((resolve) => (releaseEffect = resolve));

      const calls = Array.from({ length: 20 }, () =>
        idempotency
          .run({ key: 'hot', payload: { n: 1 } }, async () => {
            runs++;
            // Hold the lease until every other call has been answered, bounded in case none are.
            await Promise.race([othersDone, new Promise((resolve) => setTimeout(resolve, 5_000))]);
            return 'effect';
          })
          .finally(() => {
            if (++settledOthers === 19) releaseEffect();
          }),
      );
      const outcomes = await Promise.allSettled(calls);

      expect(runs).toBe(1);
      const executed = outcomes.filter((o) => o.status === 'fulfilled' && o.value.status === 'executed');
      expect(executed).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') expect(outcome.reason).toBeInstanceOf(IdempotencyInProgressError);
        else expect(outcome.value).toMatchObject({ result: 'effect' });
      }
      expect(await harness.read('mail#hot')).toMatchObject({ status: 'COMPLETED' });
    });

    it('sizes the lease from the Lambda context: remaining time plus the margin', async () => {
      const idempotency = lease({ leaseMarginMs: 1_000 });
      const start = await idempotency.start({ key: 'k1', payload: 1, context: lambdaContext(40_000) });
      expect(start.status).toBe('acquired');
      const record = await harness.read('mail#k1');
      expect(record?.leaseExpiresAt).toBe(clock.now() + 41_000);
    });
  });

  describe(`${storeName}: lease expiry`, () => {
    it('at-least-once: takes an expired lease over and runs the effect again', async () => {
      const idempotency = lease({ leaseMs: 1_000 });
      const crashed = await idempotency.start({ key: 'k1', payload: 1 });
      expect(crashed.status).toBe('acquired');

      await expect(idempotency.run({ key: 'k1', payload: 1 }, async () => 'x')).rejects.toThrow(
        IdempotencyInProgressError,
      );
      clock.advance(1_001);
      const taken = await idempotency.run({ key: 'k1', payload: 1 }, async ({ attempt }) => attempt);
      expect(taken).toEqual({ status: 'executed', result: 2, recorded: true });
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'COMPLETED', attempts: 2 });
    });

    it('at-most-once: parks an expired lease as IN_DOUBT and does not run the effect', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000, observer });
      await idempotency.start({ key: 'k1', payload: 1 });
      clock.advance(1_001);

      let runs = 0;
      const outcome = await idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs);
      expect(outcome.status).toBe('in-doubt');
      expect(runs).toBe(0);
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'IN_DOUBT' });
      expect(events).toEqual([{ event: 'inDoubt', id: 'mail#k1' }]);

      // It stays parked: later deliveries neither run it nor fail.
      const later = await idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs);
      expect(later.status).toBe('in-doubt');
      expect(runs).toBe(0);
    });

    it('at-most-once: two copies that find one expired lease report it IN_DOUBT once', async () => {
      const { events, observer } = recordingObserver();
      await lease({ mode: 'at-most-once', leaseMs: 1_000 }).start({ key: 'k1', payload: 1 });
      clock.advance(1_001);
      const first = lease({ mode: 'at-most-once', observer });
      // The second copy read the expired lease; the first copy parks it before the second's park.
      const racing = withMethod(store, 'parkExpiredLease', async (park, ...args) => {
        expect((await first.run({ key: 'k1', payload: 1 }, async () => 'ran')).status).toBe('in-doubt');
        return park(...args);
      });
      const second = lease({ mode: 'at-most-once', observer, store: racing });

      expect((await second.run({ key: 'k1', payload: 1 }, async () => 'ran')).status).toBe('in-doubt');
      expect(events).toEqual([{ event: 'inDoubt', id: 'mail#k1' }]);
    });

    it('refuses the expired owner’s late completion (fencing) and changes nothing', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ leaseMs: 1_000, observer });
      const first = await idempotency.start({ key: 'k1', payload: 1 });
      if (first.status !== 'acquired') throw new Error('expected the first owner to acquire');
      clock.advance(1_001);
      const second = await idempotency.start({ key: 'k1', payload: 1 });
      if (second.status !== 'acquired') throw new Error('expected the takeover to acquire');

      expect(await idempotency.recordCompletion(first.lease, 'late')).toBe('lease-lost');
      expect(await idempotency.recordFailure(first.lease, new Error('late'))).toBe('failed');
      expect(events.map((e) => e.event)).toEqual(['leaseLost', 'leaseLost']);
      expect(await harness.read('mail#k1')).toMatchObject({
        status: 'IN_PROGRESS',
        leaseToken: second.lease.token,
      });

      expect(await idempotency.recordCompletion(second.lease, 'new owner')).toBe('recorded');
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'COMPLETED', result: '"new owner"' });
    });
  });

  describe(`${storeName}: failures, rejections, conflicts and expiry`, () => {
    it('records FAILED and lets the next delivery run again', async () => {
      const idempotency = lease();
      await expect(
        idempotency.run({ key: 'k1', payload: 1 }, async () => {
          throw new Error('gateway 503');
        }),
      ).rejects.toThrow('gateway 503');
      expect(await harness.read('mail#k1')).toMatchObject({
        status: 'FAILED',
        attempts: 1,
        error: { name: 'Error', message: 'gateway 503' },
      });

      const retried = await idempotency.run({ key: 'k1', payload: 1 }, async ({ attempt }) => attempt);
      expect(retried).toEqual({ status: 'executed', result: 2, recorded: true });
    });

    it('records REJECTED and replays the same error to duplicates without running', async () => {
      const idempotency = lease();
      await expect(
        idempotency.run({ key: 'k1', payload: 1 }, async () => {
          throw new NonRetryableError('unknown recipient');
        }),
      ).rejects.toThrow(NonRetryableError);

      let runs = 0;
      const replay = idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs);
      await expect(replay).rejects.toThrow(IdempotencyRejectedError);
      await expect(replay).rejects.toThrow(/NonRetryableError: unknown recipient/);
      expect(runs).toBe(0);
    });

    it('reports the same key with a different payload as a conflict', async () => {
      const idempotency = lease();
      await idempotency.run({ key: 'k1', payload: { amount: 10 } }, async () => 'ok');
      await expect(idempotency.run({ key: 'k1', payload: { amount: 11 } }, async () => 'x')).rejects.toThrow(
        IdempotencyConflictError,
      );
      // A FAILED record is only re-acquirable with the same payload, too.
      await expect(
        idempotency.run({ key: 'k2', payload: 1 }, async () => {
          throw new Error('boom');
        }),
      ).rejects.toThrow('boom');
      await expect(idempotency.run({ key: 'k2', payload: 2 }, async () => 'x')).rejects.toThrow(
        IdempotencyConflictError,
      );
    });

    it('treats a record past expiresAt as absent, before TTL has deleted it', async () => {
      const idempotency = lease();
      await idempotency.run({ key: 'k1', payload: 1 }, async () => 'first');
      clock.advance(3_600_000);
      const again = await idempotency.run({ key: 'k1', payload: 2 }, async () => 'second life');
      expect(again).toEqual({ status: 'executed', result: 'second life', recorded: true });
    });

    it('keeps the other namespace apart', async () => {
      await lease().run({ key: 'k1', payload: 1 }, async () => 'mail');
      const other = new LeaseIdempotency({ store, namespace: 'sms', mode: 'at-least-once', cache: false });
      expect(await other.run({ key: 'k1', payload: 2 }, async () => 'sms')).toMatchObject({
        status: 'executed',
      });
    });
  });

  describe(`${storeName}: unknown outcomes and unrecordable completions`, () => {
    it('at-most-once: an OutcomeUnknownError records IN_DOUBT and acknowledges', async () => {
      const idempotency = lease({ mode: 'at-most-once' });
      const outcome = await idempotency.run({ key: 'k1', payload: 1 }, async () => {
        throw new OutcomeUnknownError('timed out after the request was sent');
      });
      expect(outcome).toEqual({
        status: 'in-doubt',
        reason: { name: 'OutcomeUnknownError', message: 'timed out after the request was sent' },
      });
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'IN_DOUBT' });
    });

    it('at-most-once: an IN_DOUBT record keeps the message it was given, at no extra request', async () => {
      const message = { body: '{"type":"SendNotification"}', groupId: 'ada' };
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      await idempotency.run({ key: 'unknown', payload: 1, message }, async () => {
        throw new OutcomeUnknownError('timed out');
      });
      expect(harness.roundTrips()).toBe(2);
      expect(await harness.read('mail#unknown')).toMatchObject({ status: 'IN_DOUBT', message });

      // The other way in: a later delivery parks an expired lease, with the message it carries.
      await idempotency.start({ key: 'expired', payload: 1 });
      clock.advance(1_001);
      harness.resetRoundTrips();
      const parked = await idempotency.start({ key: 'expired', payload: 1, message });
      expect(parked.status).toBe('in-doubt');
      expect(harness.roundTrips()).toBe(2);
      expect(await harness.read('mail#expired')).toMatchObject({ status: 'IN_DOUBT', message });
    });

    it('at-most-once: a message too large for the record is not kept, and the record is still IN_DOUBT', async () => {
      const message = { body: 'x'.repeat(MAX_KEPT_MESSAGE_BYTES + 1), groupId: 'ada' };
      const idempotency = lease({ mode: 'at-most-once' });
      await idempotency.run({ key: 'k1', payload: 1, message }, async () => {
        throw new OutcomeUnknownError('timed out');
      });
      const record = await harness.read('mail#k1');
      expect(record).toMatchObject({ status: 'IN_DOUBT' });
      expect(record?.message).toBeUndefined();
    });

    it('at-least-once: an OutcomeUnknownError is a retryable failure', async () => {
      const idempotency = lease();
      await expect(
        idempotency.run({ key: 'k1', payload: 1 }, async () => {
          throw new OutcomeUnknownError('timed out');
        }),
      ).rejects.toThrow(OutcomeUnknownError);
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'FAILED' });
    });

    it('reports an unrecorded completion when the write keeps failing after the effect, and leaves the lease to expire', async () => {
      const { events, observer } = recordingObserver();
      const outage = { failures: 0 };
      const failing = withMethod(store, 'complete', async () => {
        outage.failures++;
        throw new Error('injected failure');
      });
      const idempotency = lease({ observer, store: failing });

      let runs = 0;
      const outcome = await idempotency.run({ key: 'k1', payload: 1 }, async () => ++runs);
      expect(outcome).toEqual({ status: 'executed', result: 1, recorded: false });
      expect(outage.failures).toBe(3); // retried inside the invocation before giving up
      expect(events).toEqual([{ event: 'completionWriteFailed', id: 'mail#k1' }]);
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'IN_PROGRESS' });
    });

    it('records a too-large result as done (never a failure), and tells duplicates that want it why it is gone', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ observer });
      const huge = 'x'.repeat(400 * 1024);
      let runs = 0;
      const run = () =>
        idempotency.run({ key: 'k1', payload: 1 }, async () => {
          runs++;
          return huge;
        });
      expect(await run()).toEqual({ status: 'executed', result: huge, recorded: true });
      expect(events).toEqual([{ event: 'resultNotStored', id: 'mail#k1' }]);
      // A duplicate is recognised as done; a caller that wants its result learns why there is none.
      const duplicate = await idempotency.start({ key: 'k1', payload: 1 });
      expect(duplicate).toMatchObject({ status: 'duplicate', resultBytes: huge.length + 2 });
      await expect(run()).rejects.toThrow(ResultTooLargeError);
      await expect(run()).rejects.toThrow(/exceeds the 358400-byte limit/);
      expect(runs).toBe(1);
      expect(await harness.read('mail#k1')).toMatchObject({
        status: 'COMPLETED',
        resultBytes: huge.length + 2,
      });
    });
  });

  describe(`${storeName}: leases taken ahead of their turn (the later records of a FIFO group)`, () => {
    /** The group's first record, acquired at its turn, and the next one's lease taken ahead after it. */
    async function firstAndNext(idempotency: LeaseIdempotency) {
      const first = await idempotency.start({ key: 'k1', payload: 1 });
      const next = await idempotency.startAhead({ key: 'k2', payload: 2 }, { after: 'mail#k1' });
      if (first.status !== 'acquired' || next.status !== 'acquired') throw new Error('expected both leases');
      return { first: first.lease, next: next.lease };
    }

    it('at-most-once: marks the lease unstarted, and once it expired takes it over instead of parking it', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000, observer });
      const ahead = await idempotency.startAhead({ key: 'k2', payload: 1 });
      expect(ahead).toMatchObject({ status: 'acquired', awaitingStart: true });
      expect(harness.roundTrips()).toBe(1);
      expect(await harness.read('mail#k2')).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });

      // The invocation dies before the record's turn; the redelivery finds the lease expired.
      clock.advance(1_001);
      const taken = await idempotency.run({ key: 'k2', payload: 1 }, async ({ attempt }) => attempt);
      expect(taken).toEqual({ status: 'executed', result: 2, recorded: true });
      const record = await harness.read('mail#k2');
      expect(record).toMatchObject({ status: 'COMPLETED', attempts: 2 });
      expect(record?.unstarted).toBeUndefined();
      expect(events).toEqual([]);
    });

    it('at-most-once: once marked started, an expired lease is parked IN_DOUBT like any other', async () => {
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      const ahead = await idempotency.startAhead({ key: 'k2', payload: 1 });
      if (ahead.status !== 'acquired') throw new Error('expected the lease');
      harness.resetRoundTrips();
      expect(await idempotency.markStarted(ahead.lease)).toBe(true);
      expect(harness.roundTrips()).toBe(1);
      expect((await harness.read('mail#k2'))?.unstarted).toBeUndefined();

      clock.advance(1_001); // dies inside the effect
      let runs = 0;
      const redelivery = await idempotency.run({ key: 'k2', payload: 1 }, async () => ++runs);
      expect(redelivery.status).toBe('in-doubt');
      expect(runs).toBe(0);
    });

    it('at-least-once: a lease taken ahead carries no mark, since any expired lease is taken over', async () => {
      const ahead = await lease().startAhead({ key: 'k2', payload: 1 }, { after: 'mail#k1' });
      expect(ahead).toMatchObject({ status: 'acquired', awaitingStart: false });
      const record = await harness.read('mail#k2');
      expect(record?.unstarted).toBeUndefined();
      expect(record?.after).toBeUndefined();
    });

    it('completes a record and starts the next one in one UpdateItem: the completion names it', async () => {
      const idempotency = lease({ mode: 'at-most-once', cache: undefined });
      const { first, next } = await firstAndNext(idempotency);
      expect(await harness.read('mail#k2')).toMatchObject({ unstarted: true, after: 'mail#k1' });
      harness.resetRoundTrips();

      const written = await idempotency.recordCompletion(first, 'sent', next);
      expect(written).toEqual({ completion: 'recorded', next: 'started' });
      expect(harness.roundTrips()).toBe(1);
      expect(await harness.read('mail#k1')).toMatchObject({
        status: 'COMPLETED',
        result: '"sent"',
        startedNext: { id: 'mail#k2', token: next.token },
      });
      // Remembered as any completion: a hot duplicate needs no request.
      harness.resetRoundTrips();
      expect(await idempotency.start({ key: 'k1', payload: 1 })).toMatchObject({ fromCache: true });
      expect(harness.roundTrips()).toBe(0);
    });

    it('parks the next lease IN_DOUBT when the completion that started it was written, its effect perhaps run', async () => {
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      const { first, next } = await firstAndNext(idempotency);
      await idempotency.recordCompletion(first, 'sent', next);
      clock.advance(1_001); // dies before (or inside) the next effect
      harness.resetRoundTrips();
      readsExpected = 1;

      let runs = 0;
      const redelivery = await idempotency.run({ key: 'k2', payload: 2 }, async () => ++runs);
      expect(redelivery.status).toBe('in-doubt');
      expect(runs).toBe(0);
      expect(harness.roundTrips()).toBe(3);
      expect(await harness.read('mail#k2')).toMatchObject({ status: 'IN_DOUBT' });
    });

    it('takes the next lease over when the record before it never completed: only that one is IN_DOUBT', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000, observer });
      await firstAndNext(idempotency);
      clock.advance(1_001); // dies inside the first effect
      readsExpected = 1;

      const redelivered = lease({ mode: 'at-most-once', observer });
      expect((await redelivered.run({ key: 'k1', payload: 1 }, async () => 'again')).status).toBe('in-doubt');
      const next = await redelivered.run({ key: 'k2', payload: 2 }, async ({ attempt }) => attempt);
      expect(next).toEqual({ status: 'executed', result: 2, recorded: true });
      expect(events).toEqual([{ event: 'inDoubt', id: 'mail#k1' }]);
    });

    it('fences a record left in progress by a dead owner before taking over the lease after it', async () => {
      const { events, observer } = recordingObserver();
      const owner = lease({ mode: 'at-most-once', leaseMs: 1_000, observer });
      const { first, next } = await firstAndNext(owner);
      clock.advance(1_001);
      readsExpected = 1;

      // The first record's message is gone (its DLQ); the next one comes alone.
      const redelivery = await lease({ mode: 'at-most-once', observer }).run(
        { key: 'k2', payload: 2 },
        async () => 'sent',
      );
      expect(redelivery.status).toBe('executed');
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'IN_DOUBT' });
      // The owner wakes up: its completion can no longer start the lease it lost.
      expect(await owner.recordCompletion(first, 'late', next)).toEqual({
        completion: 'lease-lost',
        next: 'not-started',
      });
      // Parked by another record's delivery, which has not its message: that delivery reports nothing.
      expect(events).toEqual([{ event: 'leaseLost', id: 'mail#k1' }]);
    });

    it('reports a record another record fenced once, at its own later delivery, which keeps its message', async () => {
      const owner = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      await firstAndNext(owner);
      clock.advance(1_001);
      readsExpected = 1;
      const { events, observer } = recordingObserver();
      await lease({ mode: 'at-most-once', observer }).run({ key: 'k2', payload: 2 }, async () => 'sent');
      expect(events).toEqual([]);

      // Its own message back (redriven from the DLQ, say), twice: reported once, with that message.
      const message = { body: '{"key":"k1"}', groupId: 'g' };
      const redelivered = lease({ mode: 'at-most-once', observer });
      for (const _ of [1, 2]) {
        const outcome = await redelivered.run({ key: 'k1', payload: 1, message }, async () => 'again');
        expect(outcome.status).toBe('in-doubt');
      }
      expect(events).toEqual([{ event: 'inDoubt', id: 'mail#k1' }]);
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'IN_DOUBT', message });
    });

    it('follows unstarted leases back to the started one: parks it, gives back the others, takes over the last', async () => {
      const owner = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      await owner.start({ key: 'k1', payload: 1 });
      await owner.startAhead({ key: 'k2', payload: 2 }, { after: 'mail#k1' });
      await owner.startAhead({ key: 'k3', payload: 3 }, { after: 'mail#k2' });
      clock.advance(1_001);
      readsExpected = 2;

      const redelivery = await lease({ mode: 'at-most-once' }).run(
        { key: 'k3', payload: 3 },
        async () => 'sent',
      );
      expect(redelivery.status).toBe('executed');
      expect(await harness.read('mail#k1')).toMatchObject({ status: 'IN_DOUBT' });
      expect(await harness.read('mail#k2')).toBeUndefined(); // never started: its delivery runs it afresh
    });

    it('waits for an owner whose lease on the record before still runs: its completion may start the next', async () => {
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      await lease({ mode: 'at-most-once', leaseMs: 5_000 }).start({ key: 'k1', payload: 1 });
      await idempotency.startAhead({ key: 'k2', payload: 2 }, { after: 'mail#k1' });
      clock.advance(1_001);
      readsExpected = 1;

      await expect(idempotency.start({ key: 'k2', payload: 2 })).rejects.toThrow(IdempotencyInProgressError);
      expect(await harness.read('mail#k2')).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });
    });

    it('defers, when taken ahead, an expired lease whose fate hangs on the record before it', async () => {
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      await firstAndNext(idempotency);
      clock.advance(1_001);
      harness.resetRoundTrips();
      expect(await idempotency.startAhead({ key: 'k2', payload: 2 }, { after: 'mail#k1' })).toEqual({
        status: 'deferred',
      });
      expect(harness.roundTrips()).toBe(1);
    });

    it('takes over the lease after a record this invocation holds: its completion starts nothing unknown', async () => {
      const owner = lease({ mode: 'at-most-once', leaseMs: 1_000 });
      await owner.start({ key: 'k0', payload: 0 });
      await owner.startAhead({ key: 'k1', payload: 1 }, { after: 'mail#k0' });
      await owner.startAhead({ key: 'k2', payload: 2 }, { after: 'mail#k1' });
      clock.advance(1_001);
      readsExpected = 3;

      const redelivered = lease({ mode: 'at-most-once' });
      expect((await redelivered.start({ key: 'k0', payload: 0 })).status).toBe('in-doubt');
      const k1 = await redelivered.start({ key: 'k1', payload: 1 });
      if (k1.status !== 'acquired') throw new Error('expected the lease');
      // Not known to be this invocation's, k1 in progress could still start k2: wait for it.
      await expect(redelivered.start({ key: 'k2', payload: 2 })).rejects.toThrow(IdempotencyInProgressError);
      const held = (id: string) => (id === k1.lease.id ? k1.lease.token : undefined);
      expect(await redelivered.start({ key: 'k2', payload: 2 }, { held })).toMatchObject({
        status: 'acquired',
        awaitingStart: false,
      });
    });

    it('when its own lease was lost, writes nothing and leaves the next lease to be marked on its own', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000, observer });
      const { first, next } = await firstAndNext(idempotency);
      clock.advance(1_001);
      expect((await lease({ mode: 'at-most-once' }).start({ key: 'k1', payload: 1 })).status).toBe(
        'in-doubt',
      );

      const written = await idempotency.recordCompletion(first, 'late', next);
      expect(written).toEqual({ completion: 'lease-lost', next: 'not-started' });
      expect(events).toEqual([{ event: 'leaseLost', id: 'mail#k1' }]);
      expect(await harness.read('mail#k2')).toMatchObject({ status: 'IN_PROGRESS', unstarted: true });
      expect(await idempotency.markStarted(next)).toBe(true);
    });

    it('refuses and reports a start mark on a lease that was taken over', async () => {
      const { events, observer } = recordingObserver();
      const idempotency = lease({ mode: 'at-most-once', leaseMs: 1_000, observer });
      const ahead = await idempotency.startAhead({ key: 'k2', payload: 1 });
      if (ahead.status !== 'acquired') throw new Error('expected the lease');
      clock.advance(1_001);
      await lease({ mode: 'at-most-once' }).start({ key: 'k2', payload: 1 });

      expect(await idempotency.markStarted(ahead.lease)).toBe(false);
      expect(events).toEqual([{ event: 'leaseLost', id: 'mail#k2' }]);
    });
  });
}
