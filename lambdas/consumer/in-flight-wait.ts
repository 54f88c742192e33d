import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelayMs, type RetryPolicy } from '../common/backoff.js';
import type { IdempotencyInProgressError } from '../idempotency/errors.js';
import type { RemainingTime } from '../idempotency/lease.js';
import type { LeaseStore } from '../idempotency/lease-store.js';

/**
 * The reads of a held key's record: 100 ms apart at first, doubling to 1 s, jittered. `Infinity`
 * rather than `Number.POSITIVE_INFINITY`, which esbuild cannot tell is free of side effects: it
 * would keep the object in a bundle that never waits (a FIFO consumer's).
 */
const READS: RetryPolicy = { maxAttempts: Infinity, baseDelayMs: 100, maxDelayMs: 1_000 };

/** What a wait for a key held elsewhere may use. */
export interface InFlightWait {
  store: LeaseStore;
  /** The longest it waits for one key. */
  maxWaitMs: number;
  /** The invocation: the wait ends this long before its deadline at the latest. */
  lambdaContext: RemainingTime;
  /** What the rest of the record needs once the key is free: its own run, or its answer from the record. */
  reserveMs: number;
  signal: AbortSignal;
}

/**
 * DESIGN §5.1: waits, bounded, for a key another invocation holds to leave IN_PROGRESS (settled, or
 * its lease expired), reading its record (strongly consistent) with backoff. True if it did: the
 * record's next try then answers from it (a duplicate), takes it over, or runs a failed key again.
 * False when the bound, the invocation's deadline less `reserveMs`, or the batch's failure comes
 * first, or a read fails: the record then fails and comes back soon, as without a wait. It writes
 * nothing, so a crash meanwhile leaves the record as the other invocation keeps it.
 */
export async function waitForKey(held: IdempotencyInProgressError, wait: InFlightWait): Promise<boolean> {
  const { store, maxWaitMs, lambdaContext, reserveMs, signal } = wait;
  const endsAt = Date.now() + Math.min(maxWaitMs, lambdaContext.getRemainingTimeInMillis() - reserveMs);
  for (let read = 1; ; read++) {
    const pause = backoffDelayMs(read, READS);
    if (Date.now() + pause > endsAt || signal.aborted) return false;
    await sleep(pause);
    let record: Awaited<ReturnType<LeaseStore['read']>>;
    try {
      record = await store.read(held.id);
    } catch {
      return false; // no read, no knowledge: the record comes back soon instead
    }
    if (record?.status !== 'IN_PROGRESS' || (record.leaseExpiresAt ?? 0) <= store.now()) return true;
  }
}
