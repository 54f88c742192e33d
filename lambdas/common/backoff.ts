import { setTimeout as sleep } from 'node:timers/promises';
import type { KnownKeys } from './known-keys.js';

/** How a caller retries: attempts in all (the first one included) and the waits between them. */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  /** The wait before the first retry; it doubles with every further retry, up to `maxDelayMs`. */
  baseDelayMs: number;
  /** The longest wait between two attempts. */
  maxDelayMs: number;
}

export const RETRY_POLICY_KEYS = {
  maxAttempts: true,
  baseDelayMs: true,
  maxDelayMs: true,
} satisfies KnownKeys<RetryPolicy>;

/**
 * The wait before retry number `retry` (1 for the first): exponential and capped, with "equal
 * jitter" — half of it fixed, half random — so that callers that failed together spread out.
 */
export function backoffDelayMs(
  retry: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return ceiling / 2 + random() * (ceiling / 2);
}

/** What {@link retried} came to: the value of the try that succeeded, or the last try's error. */
export type Retried<T> = { value: T; error?: undefined } | { value?: undefined; error: unknown };

/**
 * Runs `action` up to `policy.maxAttempts` times, waiting {@link backoffDelayMs} between tries;
 * the last error if every try failed. For writes that must not be given up lightly (a record after
 * its effect, a lease given back), on top of the AWS SDK's own retries.
 */
export async function retried<T>(policy: RetryPolicy, action: () => Promise<T>): Promise<Retried<T>> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { value: await action() };
    } catch (error) {
      if (attempt >= policy.maxAttempts) return { error };
      await sleep(backoffDelayMs(attempt, policy));
    }
  }
}

/** The policy of {@link retried} for record writes: 3 tries, 50 ms then 100 ms apart (with jitter). */
export const RECORD_WRITE_RETRY: RetryPolicy = { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 1_000 };

/**
 * The longest {@link retried} can take with `policy` when each try is cut off after `tryMs`: every
 * try running into its cut-off, every wait at its ceiling. What a caller keeps back for it.
 */
export function retriedWorstCaseMs(policy: RetryPolicy, tryMs: number): number {
  let waits = 0;
  for (let retry = 1; retry < policy.maxAttempts; retry++) {
    waits += Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  }
  return policy.maxAttempts * tryMs + waits;
}
