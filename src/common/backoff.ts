/** How a caller retries: attempts in all (the first one included) and the waits between them. */
export interface RetryPolicy {
  maxAttempts: number;
  /** The wait before the first retry; it doubles with every further retry, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
}

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
