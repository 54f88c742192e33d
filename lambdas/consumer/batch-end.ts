import type { RemainingTime } from '../idempotency/lease.js';
import type { ConsumerLogger } from './telemetry.js';

/** How the end of a batch runs its requests (`runUntilDeadline`). */
export interface BatchEnd {
  /** Requests at once: the batch's own bound (records, or groups, at once), for the same sockets. */
  concurrency: number;
  lambdaContext: RemainingTime;
  /** The batch's logger, for what concerns many records at once. */
  logger: ConsumerLogger;
}

/**
 * Kept back from the invocation's deadline when the end of a batch stops: for the response to
 * reach Lambda. Past the deadline Lambda drops the whole response, and SQS then redelivers every
 * record of the batch, the acknowledged ones too.
 */
export const RESPONSE_MARGIN_MS = 250;

/**
 * The end of a batch (DESIGN §5.1): the requests its unacknowledged records need, at most
 * `end.concurrency` at once — a batch of 10,000 failed records would otherwise queue 10,000
 * requests behind the SDK's sockets at once — and only until {@link RESPONSE_MARGIN_MS} before the
 * invocation's deadline, so that its time stays within what the deadline rule kept back. Then it
 * returns the items it never started, for the caller to count; one still running is left to finish
 * (`signal` aborts then; each request of the end is safe to apply late). `run` must not throw.
 */
export async function runUntilDeadline<T>(
  items: readonly T[],
  { concurrency, lambdaContext }: BatchEnd,
  run: (item: T, signal: AbortSignal) => Promise<void>,
): Promise<T[]> {
  const stop = AbortSignal.timeout(
    Math.max(0, lambdaContext.getRemainingTimeInMillis() - RESPONSE_MARGIN_MS),
  );
  const pending = [...items];
  const worker = async () => {
    while (!stop.aborted && pending.length > 0) await run(pending.shift() as T, stop);
  };
  const workers = Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
  const stopped = new Promise((resolve) => stop.addEventListener('abort', resolve, { once: true }));
  await Promise.race([workers, stopped]);
  return pending;
}
