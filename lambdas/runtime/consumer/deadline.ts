import type { RemainingTime } from '../idempotency';

/** The least time a record is started with, when the container has not yet seen a slower record. */
export const MIN_RECORD_TIME_RESERVE_MS = 1_000;

/**
 * The deadline rule (DESIGN §5): a record is not started when the invocation's remaining time is
 * below what one record's work and its record write need — so that no at-most-once effect is cut off
 * by the timeout into IN_DOUBT. By default that need is learnt: twice the slowest record this
 * container has finished, and at least {@link MIN_RECORD_TIME_RESERVE_MS}.
 */
export class DeadlineGuard {
  #slowestMs = 0;

  /** @param fixedReserveMs a fixed reserve instead of the learnt one. */
  constructor(private readonly fixedReserveMs?: number) {}

  get reserveMs(): number {
    return this.fixedReserveMs ?? Math.max(MIN_RECORD_TIME_RESERVE_MS, 2 * this.#slowestMs);
  }

  /** Whether a record may start now. */
  allowsStart(context: RemainingTime): boolean {
    return context.getRemainingTimeInMillis() >= this.reserveMs;
  }

  /** Learns from a record that finished (however it ended) after `durationMs`. */
  recordFinished(durationMs: number): void {
    this.#slowestMs = Math.max(this.#slowestMs, durationMs);
  }
}
