import type { RemainingTime } from '../idempotency/lease.js';

/** The least time a record is started with, when the container has not yet seen a slower record. */
export const MIN_RECORD_TIME_RESERVE_MS = 1_000;

/** How many of the container's latest records the learnt reserve looks at. */
const RECENT_RECORDS = 20;

/**
 * The deadline rule (DESIGN §5): a record is not started when the invocation's remaining time is
 * below what one record's work and its record write need — so that no at-most-once effect is cut off
 * by the timeout into IN_DOUBT. By default that need is learnt: twice the 90th percentile of the
 * container's last 20 records, at least {@link MIN_RECORD_TIME_RESERVE_MS}, and never more than
 * half of what the batch started with — one slow outlier (a cold connection) must not make batches
 * defer their records until SQS dead-letters them. The first record of a batch always starts.
 */
export class DeadlineGuard {
  readonly #recent: number[] = [];

  /** @param fixedReserveMs a fixed reserve instead of the learnt one. */
  constructor(private readonly fixedReserveMs?: number) {}

  /** The reserve for a batch that started with `budgetMs` left. */
  reserveMs(budgetMs: number): number {
    if (this.fixedReserveMs !== undefined) return this.fixedReserveMs;
    const sorted = [...this.#recent].sort((a, b) => a - b);
    const p90 = sorted[Math.ceil(sorted.length * 0.9) - 1] ?? 0;
    return Math.min(Math.max(MIN_RECORD_TIME_RESERVE_MS, 2 * p90), budgetMs / 2);
  }

  /** Whether a record may start now, in a batch that started with `budgetMs` left. */
  allowsStart(context: RemainingTime, budgetMs: number, firstOfBatch: boolean): boolean {
    if (firstOfBatch && this.fixedReserveMs === undefined) return true;
    return context.getRemainingTimeInMillis() >= this.reserveMs(budgetMs);
  }

  /** Learns from a record that finished (however it ended) after `durationMs`. */
  recordFinished(durationMs: number): void {
    this.#recent.push(durationMs);
    if (this.#recent.length > RECENT_RECORDS) this.#recent.shift();
  }
}
