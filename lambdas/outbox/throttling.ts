import { setTimeout as sleep } from 'node:timers/promises';
import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { backoffDelayMs, type RetryPolicy } from '../common/backoff.js';

/**
 * A throttled transaction (DESIGN §9.1). DynamoDB does not answer a `TransactWriteItems` whose item
 * is over its partition's (or its index partition's) capacity with a throttling exception, which the
 * SDK would retry: it cancels it, naming `ThrottlingError` (on-demand) or `ProvisionedThroughputExceeded`
 * (provisioned) as the item's reason and `None` for the others (API_TransactWriteItems). The SDK
 * does not retry a cancellation, so the outbox does, for its own transactions.
 */
const THROTTLING_REASONS = new Set([
  'ThrottlingError',
  'ProvisionedThroughputExceeded',
  'RequestLimitExceeded',
]);

/** Whether DynamoDB canceled the transaction for throttling alone (no failed condition, no conflict). */
export function canceledForThrottling(error: unknown): boolean {
  if (!(error instanceof TransactionCanceledException)) return false;
  const codes = (error.CancellationReasons ?? [])
    .map((reason) => reason.Code ?? 'None')
    .filter((code) => code !== 'None');
  return codes.length > 0 && codes.every((code) => THROTTLING_REASONS.has(code));
}

/**
 * 6 tries over about 1.5–3 s: a partition's capacity is counted per second, so a write throttled by
 * a burst finds room within a second or two; a partition throttled for longer is over its rate, and
 * the caller hears of it.
 */
export const THROTTLED_TRANSACTION_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 100,
  maxDelayMs: 2_000,
};

/**
 * Runs `send` (a transaction) again while DynamoDB cancels it for throttling, with backoff, up to
 * `policy.maxAttempts` tries in all; any other error, or the last throttling, is thrown. A canceled
 * transaction wrote nothing, so each call of `send` builds its transaction anew, under a token of
 * its own: AWS documents a `ClientRequestToken` for identical calls within 10 minutes, not what it
 * keeps of a canceled one, which might cancel every retry under it again.
 */
export async function retryThrottled<T>(
  send: () => Promise<T>,
  policy: RetryPolicy = THROTTLED_TRANSACTION_RETRY,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await send();
    } catch (error) {
      if (!canceledForThrottling(error) || attempt >= policy.maxAttempts) throw error;
      await sleep(backoffDelayMs(attempt, policy));
    }
  }
}
