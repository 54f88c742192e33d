import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyInProgressError, LeaseIdempotency } from '../../lambdas/idempotency/index.js';
import type { StoreHarness } from './lease-contract.js';

// DESIGN §3, §11: a lease is judged by the next invocation's clock, and `leaseMarginMs` (2 s) is
// the skew between two consumers' clocks it tolerates. At its owner's deadline, a consumer whose
// clock is up to the margin ahead still finds the lease held; one further ahead takes it over
// while the owner may still be writing its outcome. Whatever keeps the records: each store passes
// its clock into its conditions (Valkey's scripts too, never the server's TIME).

const REMAINING_MS = 5_000;

/** The clock-skew contract, run against the stores `makeHarness` makes. */
export function clockSkewContract(storeName: string, makeHarness: () => Promise<StoreHarness>): void {
  let harness: StoreHarness;
  beforeAll(async () => {
    harness = await makeHarness();
  });
  afterAll(() => harness.close());

  /**
   * Two at-most-once consumers on one store, the second's clock `skewMs` ahead of the first's. The
   * first takes the lease with 5 s of its invocation left; the world's clock then moves to that
   * invocation's deadline, and the second tries the same key.
   */
  async function secondAtFirstsDeadline(skewMs: number) {
    let worldMs = Date.now();
    const consumer = (offsetMs: number) =>
      new LeaseIdempotency({
        store: harness.store({ now: () => worldMs + offsetMs, ttlSeconds: 3600 }),
        namespace: 'skew',
        mode: 'at-most-once',
        cache: false,
      });
    const [first, second] = [consumer(0), consumer(skewMs)];
    const input = { key: `k-${skewMs}-${Math.random()}`, payload: { n: 1 } };
    const taken = await first.start({ ...input, context: { getRemainingTimeInMillis: () => REMAINING_MS } });
    if (taken.status !== 'acquired') throw new Error(`the first consumer got ${taken.status}`);
    expect(taken.lease.expiresAt).toBe(worldMs + REMAINING_MS + 2_000);
    worldMs += REMAINING_MS; // the first invocation's deadline: it may still be writing its outcome
    return second.start({ ...input, context: { getRemainingTimeInMillis: () => 30_000 } }).then(
      (start) => start.status,
      (error: unknown) => (error instanceof IdempotencyInProgressError ? 'held elsewhere' : error),
    );
  }

  describe(`${storeName}: a lease judged by another consumer’s clock`, () => {
    it('holds at its owner’s deadline against a clock up to the 2 s margin ahead', async () => {
      expect(await secondAtFirstsDeadline(1_999)).toBe('held elsewhere');
    });

    it('is taken as expired by a clock more than the margin ahead: the bound is the margin', async () => {
      // At-most-once parks the expired lease: its effect may be running still, under its owner.
      expect(await secondAtFirstsDeadline(2_001)).toBe('in-doubt');
    });
  });
}
