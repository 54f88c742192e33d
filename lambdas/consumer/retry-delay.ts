import { backoffDelayMs } from '../common/backoff.js';

/** SQS's longest visibility timeout, 12 hours: what `ChangeMessageVisibility` accepts at most. */
export const MAX_VISIBILITY_SECONDS = 43_200;

/** How soon a standard queue's records come back (DESIGN §5.1), in seconds. */
export interface RetryDelays {
  /** The delay's ceiling after a record's first failed delivery; it doubles with each further one. */
  baseSeconds: number;
  /** The ceiling's cap. */
  maxSeconds: number;
  /** The ceiling for a record whose key another invocation holds, or one not started at the deadline. */
  soonSeconds: number;
}

export const DEFAULT_RETRY_DELAYS: RetryDelays = { baseSeconds: 5, maxSeconds: 300, soonSeconds: 2 };

/**
 * The visibility a record that failed on its `receiveCount`-th delivery is given: exponential in
 * its receives (on a standard queue nothing holds a record back behind another, so they count its
 * own deliveries), capped, with equal jitter so that records that failed together come back apart.
 * Whole seconds, at least 1: `ChangeMessageVisibility` takes no fraction, and 0 would bring it
 * back at once.
 */
export function retryDelaySeconds(
  receiveCount: number,
  delays: RetryDelays,
  random: () => number = Math.random,
): number {
  return jittered(Math.max(1, receiveCount), delays.baseSeconds, delays.maxSeconds, random);
}

/** The visibility of a record that should come back soon: up to `soonSeconds`, jittered, at least 1. */
export function soonDelaySeconds(delays: RetryDelays, random: () => number = Math.random): number {
  return jittered(1, delays.soonSeconds, delays.soonSeconds, random);
}

function jittered(retry: number, baseSeconds: number, maxSeconds: number, random: () => number): number {
  const policy = { maxAttempts: Number.POSITIVE_INFINITY, baseDelayMs: baseSeconds, maxDelayMs: maxSeconds };
  return Math.max(1, Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(backoffDelayMs(retry, policy, random))));
}
