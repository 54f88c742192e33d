import { backoffDelayMs } from '../common/backoff.js';

/** SQS's longest visibility timeout, 12 hours: what `ChangeMessageVisibility` accepts at most, counted from the receive (`visibilityLimitMs`). */
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

/**
 * The visibility of a record that should come back soon (its key in flight elsewhere, or not
 * started): up to `soonSeconds` on its first delivery, jittered. It too doubles with each further
 * delivery, up to `maxSeconds`: a key held for minutes (a slow effect, or a lease whose invocation
 * died and must expire first) would otherwise bring its copy back every second or two, and SQS's
 * `maxReceiveCount` would dead-letter it; doubling, a copy returns 10 to 13 times (by the jitter)
 * while an original holds its key for 15 minutes, with the defaults.
 */
export function soonDelaySeconds(
  receiveCount: number,
  delays: RetryDelays,
  random: () => number = Math.random,
): number {
  return jittered(Math.max(1, receiveCount), delays.soonSeconds, delays.maxSeconds, random);
}

function jittered(retry: number, baseSeconds: number, maxSeconds: number, random: () => number): number {
  const policy = { maxAttempts: Number.POSITIVE_INFINITY, baseDelayMs: baseSeconds, maxDelayMs: maxSeconds };
  // Rounded, not up: up, every draw of a first `soonSeconds` (1–2 s) was 2, and copies failed together came back together.
  return Math.max(1, Math.min(MAX_VISIBILITY_SECONDS, Math.round(backoffDelayMs(retry, policy, random))));
}

/**
 * How long before a batch began its records' latest receive may have been: Lambda's longest
 * batching window (5 minutes), and as long again for the invocation to start (a cold start's init,
 * the event source's retries of a throttled invoke).
 */
export const RECEIVE_BEFORE_BATCH_MS = 600_000;

/** Kept back from SQS's 12 hours for the clocks of Lambda and SQS, which are not one clock. */
const CLOCK_MARGIN_MS = 60_000;

/**
 * The time (epoch ms) past which SQS refuses to keep a record invisible: `ChangeMessageVisibility`
 * cannot take a message beyond 12 hours after the receive that handed it over (the latest one: a
 * receive gives a new receipt handle, and the 12 hours count afresh). The event has only the first
 * receive (`ApproximateFirstReceiveTimestamp`): on a first delivery that is the one; on a later
 * delivery the latest was after it, and at most {@link RECEIVE_BEFORE_BATCH_MS} before the batch
 * began. The earliest the receive can have been, so that a change within the limit is never refused.
 */
export function visibilityLimitMs(
  attributes: { ApproximateReceiveCount: string; ApproximateFirstReceiveTimestamp: string },
  batchStartedMs: number,
): number {
  const firstReceiveMs = Number(attributes.ApproximateFirstReceiveTimestamp);
  const known = Number.isFinite(firstReceiveMs);
  const receivedMs =
    known && Number(attributes.ApproximateReceiveCount) <= 1
      ? firstReceiveMs
      : Math.max(known ? firstReceiveMs : 0, batchStartedMs - RECEIVE_BEFORE_BATCH_MS);
  return receivedMs + MAX_VISIBILITY_SECONDS * 1_000 - CLOCK_MARGIN_MS;
}

/** `seconds` of visibility from `nowMs`, cut at `limitMs`: whole seconds, at least 1, as the delays. */
export function cappedVisibilitySeconds(seconds: number, limitMs: number, nowMs: number): number {
  return Math.max(1, Math.min(seconds, Math.floor((limitMs - nowMs) / 1_000)));
}
