/**
 * The dedup horizon (DESIGN §2). An idempotency record protects its key only while it lives, and
 * SQS resets a message's retention on every DLQ redrive, so a copy can outlive any TTL. A message
 * published longer ago than the record TTL less a safety margin can no longer be told apart from
 * a new one: it is never run, but dead-lettered as `PastDedupHorizon`.
 */

/**
 * Covers clock differences between producer and consumer, and the time a first delivery took: an
 * hour, or a tenth of the TTL when that is shorter (tests run with TTLs of minutes).
 */
export const DEFAULT_DEDUP_HORIZON_MARGIN_SECONDS = 60 * 60;

/** The DLQ reason (`ErrorName`) of a message that arrived past the dedup horizon. */
export const PAST_DEDUP_HORIZON = 'PastDedupHorizon';

export interface DedupHorizon {
  /** The idempotency record's lifetime, in seconds. */
  ttlSeconds: number;
  /** Safety margin, in seconds; {@link DEFAULT_DEDUP_HORIZON_MARGIN_SECONDS} or a tenth of the TTL by default. */
  marginSeconds?: number;
}

/** Epoch ms before which a message's `publishedAt` is past the horizon. */
export function dedupHorizonStartMs(horizon: DedupHorizon, nowMs: number): number {
  const margin =
    horizon.marginSeconds ??
    Math.min(DEFAULT_DEDUP_HORIZON_MARGIN_SECONDS, Math.floor(horizon.ttlSeconds / 10));
  return nowMs - (horizon.ttlSeconds - margin) * 1000;
}

/**
 * Whether a message published at `publishedAt` (ISO-8601) is past the horizon at `nowMs`. An
 * unreadable timestamp counts as past: nothing then proves the record still protects the key.
 */
export function isPastDedupHorizon(publishedAt: string, horizon: DedupHorizon, nowMs: number): boolean {
  const published = Date.parse(publishedAt);
  return !Number.isFinite(published) || published < dedupHorizonStartMs(horizon, nowMs);
}

/**
 * The `expiresAt` (epoch seconds) a record of a message's key needs to outlive that copy's horizon:
 * its publication plus the TTL, the margin included, so the record outlives the horizon by the
 * margin as a fresh record would. Undefined for an unreadable `publishedAt` (past the horizon).
 */
export function recordLifeCoveringSec(publishedAt: string, horizon: DedupHorizon): number | undefined {
  const published = Date.parse(publishedAt);
  return Number.isFinite(published) ? Math.ceil(published / 1000) + horizon.ttlSeconds : undefined;
}
