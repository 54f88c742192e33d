import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_HISTORY_ENTRIES } from '../../lambdas/idempotency/history.js';
import { LeaseIdempotency, NonRetryableError } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { deadLetterLogId, type HistoryEntry } from '../../lambdas/idempotency/record.js';
import type { StoreHarness } from './lease-contract.js';

// DESIGN §3, the history, whatever keeps the records: each write that changes a record's status
// appends one entry in the same step, and an acquire finding the history full trims it. history.test.ts
// runs it on DynamoDB Local, valkey-store.test.ts on redis-server.

export const delivery = (messageId: string, receiveCount = 1) => ({
  messageId,
  receiveCount,
  publishedAt: '2026-11-29T10:00:00.000Z',
});
export const statuses = (history: HistoryEntry[]) => history.map((entry) => entry.s);

/** The history contract, run against the store `makeHarness` makes for each test. */
export function historyContract(storeName: string, makeHarness: () => Promise<StoreHarness>): void {
  let harness: StoreHarness;
  let now: number;
  let store: LeaseStore;

  beforeEach(async () => {
    harness = await makeHarness();
    now = Date.now();
    store = harness.store({ now: () => now, ttlSeconds: 3600 });
  });

  afterEach(() => harness.close());

  const lease = (mode: 'at-least-once' | 'at-most-once' = 'at-least-once') =>
    new LeaseIdempotency({ store, namespace: 'mail', mode, leaseMs: 60_000, cache: false });
  const historyOf = async (id: string) => (await harness.read(id))?.history ?? [];

  describe(`${storeName}: a record keeps its history`, () => {
    it('a first delivery: the lease taken for its message, then the effect applied under that lease', async () => {
      await lease().run({ key: 'k1', payload: 1, delivery: delivery('m-1') }, () => 'sent');
      const history = await historyOf('mail#k1');
      expect(history).toEqual([
        { s: 'IN_PROGRESS', t: now, l: expect.any(String), m: 'm-1', r: 1, p: '2026-11-29T10:00:00.000Z' },
        { s: 'COMPLETED', t: now, a: 1, l: history[0]?.l },
      ]);
    });

    it('a failure, its retry and the dead-lettering, each with its attempt, lease and error', async () => {
      const mail = lease();
      const boom = () => {
        throw new Error('smtp down');
      };
      await expect(mail.run({ key: 'k2', payload: 1, delivery: delivery('m-2') }, boom)).rejects.toThrow();
      now += 1_000;
      await expect(mail.run({ key: 'k2', payload: 1, delivery: delivery('m-2', 2) }, boom)).rejects.toThrow();
      const history = await historyOf('mail#k2');
      expect(statuses(history)).toEqual(['IN_PROGRESS', 'FAILED', 'IN_PROGRESS', 'FAILED']);
      expect(history.map((entry) => entry.a)).toEqual([undefined, 1, undefined, 2]);
      expect(history[1]).toMatchObject({ x: 'Error' });
      expect(history[2]).toMatchObject({ m: 'm-2', r: 2 });
      // Only the first acquire carries the publish: the others would repeat it.
      expect(history.filter((entry) => entry.p)).toHaveLength(1);
      expect(history[2]?.l).not.toBe(history[0]?.l);

      // The consumer's dead-lettering, as it writes it: the failure names the message sent to the DLQ.
      const start = await mail.start({ key: 'k2', payload: 1, delivery: delivery('m-2', 3) });
      if (start.status !== 'acquired') throw new Error(`not acquired: ${start.status}`);
      await store.fail(start.lease, { name: 'Error', message: 'smtp down' }, 'm-2');
      expect((await historyOf('mail#k2')).at(-1)).toMatchObject({ s: 'FAILED', a: 3, d: 'm-2' });
    });

    it('a rejection, and a park in doubt naming the lease that ran out', async () => {
      await expect(
        lease().run({ key: 'k3', payload: 1 }, () => {
          throw new NonRetryableError('bad address');
        }),
      ).rejects.toThrow();
      expect(statuses(await historyOf('mail#k3'))).toEqual(['IN_PROGRESS', 'REJECTED']);

      const payments = lease('at-most-once');
      const first = await payments.start({ key: 'k4', payload: 1, delivery: delivery('m-4') });
      if (first.status !== 'acquired') throw new Error('not acquired');
      now += 120_000; // its invocation died: the lease runs out
      const second = await payments.start({ key: 'k4', payload: 1, delivery: delivery('m-4', 2) });
      expect(second.status).toBe('in-doubt');
      const history = await historyOf('mail#k4');
      expect(statuses(history)).toEqual(['IN_PROGRESS', 'IN_DOUBT']);
      expect(history[1]).toMatchObject({ l: first.lease.token.slice(0, 8), x: 'LeaseExpired' });
    });

    it('a duplicate writes nothing: its record and history stay as they were', async () => {
      await lease().run({ key: 'k5', payload: 1, delivery: delivery('m-5') }, () => 'sent');
      const before = await historyOf('mail#k5');
      const again = await lease().run({ key: 'k5', payload: 1, delivery: delivery('m-5b') }, () => 'again');
      expect(again.status).toBe('duplicate');
      expect(await historyOf('mail#k5')).toEqual(before);
    });
  });

  describe(`${storeName}: the history's bound`, () => {
    it(`keeps at most ${MAX_HISTORY_ENTRIES} entries and a few more: the first, a count of those dropped, the latest`, async () => {
      const mail = lease();
      const runs = MAX_HISTORY_ENTRIES * 2;
      for (let run = 1; run <= runs; run++) {
        now += 10;
        await expect(
          mail.run({ key: 'k8', payload: 1, delivery: delivery(`m-${run}`, run) }, () => {
            throw new Error(`run ${run}`);
          }),
        ).rejects.toThrow();
      }
      const history = await historyOf('mail#k8');
      expect(history.length).toBeLessThanOrEqual(MAX_HISTORY_ENTRIES + 2);
      expect(history[0]).toMatchObject({ s: 'IN_PROGRESS', m: 'm-1', p: '2026-11-29T10:00:00.000Z' });
      const trimmed = history.filter((entry) => entry.s === 'TRIMMED');
      expect(trimmed).toHaveLength(1);
      // Every entry written is either kept or counted as dropped: 2 per run.
      const kept = history.length - 1;
      expect(kept + (trimmed[0]?.n ?? 0)).toBe(2 * runs);
      expect(history.at(-1)).toMatchObject({ s: 'FAILED', a: runs });
      expect(history.at(-2)).toMatchObject({ s: 'IN_PROGRESS', m: `m-${runs}` });
    });

    it('a dead-letter log takes entries until it is full, then none, without an error', async () => {
      for (let send = 1; send <= MAX_HISTORY_ENTRIES + 3; send++) {
        await store.logDeadLetter('ledger#t9', `m-${send}`, {
          name: 'BusinessRuleViolationError',
          message: 'no stock',
        });
      }
      const log = await historyOf(deadLetterLogId('ledger#t9'));
      expect(log).toHaveLength(MAX_HISTORY_ENTRIES);
      expect(log[0]).toEqual({ s: 'FAILED', t: now, m: 'm-1', x: 'BusinessRuleViolationError' });
      const item = await harness.read(deadLetterLogId('ledger#t9'));
      expect(item?.expiresAt).toBe(Math.floor(now / 1000) + 3600);
    });
  });
}
