import { dedupHorizonStartMs, isPastDedupHorizon } from '../lambdas/common/dedup-horizon.js';
import { RetryPastHorizonError } from './operations-errors.js';

/**
 * How long before the dedup horizon a retry is already refused: the re-sent message waits behind
 * what its group has queued, and the consumer judges it by the horizon when it receives it.
 */
export const RETRY_HORIZON_LOOKAHEAD_MS = 60 * 60 * 1000;

/**
 * Refuses a retry whose kept message the consumer would dead-letter as `PastDedupHorizon` (DESIGN
 * §2) without running it: the record would become FAILED and leave the list, the effect never
 * happen, and nothing say so. Says what the operator can do instead.
 */
export function refusePastHorizon(id: string, body: string, ttlSeconds: number, nowMs: number): void {
  const publishedAt = publishedAtOf(body);
  const horizon = { ttlSeconds };
  if (
    publishedAt !== undefined &&
    !isPastDedupHorizon(publishedAt, horizon, nowMs + RETRY_HORIZON_LOOKAHEAD_MS)
  ) {
    return;
  }
  const published =
    publishedAt === undefined ? 'has no readable publishedAt' : `was published at ${publishedAt}`;
  const horizonStart = new Date(
    dedupHorizonStartMs(horizon, nowMs + RETRY_HORIZON_LOOKAHEAD_MS),
  ).toISOString();
  throw new RetryPastHorizonError(
    `${id}: its message ${published}, past the dedup horizon (${horizonStart}): the consumer would dead-letter ` +
      'it as PastDedupHorizon without running it. Nothing was changed. If the effect did not happen, run ' +
      `\`oncely in-doubt resolve ${id} --as retry --republish\`: it sends the message stamped now, under the same ` +
      'key, and this record keeps that key from running twice. If it happened, resolve it `--as completed`.',
  );
}

/**
 * The kept message stamped with `publishedAt` = now, all else as kept (its key included). Safe
 * (DESIGN §2): the horizon exists because a copy may come back once its key's record expired, and
 * run again as new. Here the record of this key is alive, unresolved (it does not expire), and
 * gets a full TTL from now once the message is on the queue, so it outlives the new copy's horizon;
 * the consumer runs the copy once against it, and older copies of the key stay past the horizon.
 */
export function restamped(body: string, nowMs: number): string {
  return JSON.stringify({ ...(JSON.parse(body) as object), publishedAt: new Date(nowMs).toISOString() });
}

function publishedAtOf(body: string): string | undefined {
  try {
    const { publishedAt } = JSON.parse(body) as { publishedAt?: unknown };
    return typeof publishedAt === 'string' && Number.isFinite(Date.parse(publishedAt))
      ? publishedAt
      : undefined;
  } catch {
    return undefined;
  }
}
