import { DEFAULT_RETRY_DELAYS, soonDelaySeconds } from '../../lambdas/consumer/retry-delay.js';
import { DEFAULT_LEASE_MARGIN_MS } from '../../lambdas/idempotency/lease.js';

/**
 * How many times, at most, a standard queue delivers a copy whose key another invocation holds for
 * its timeout, `holderTimeoutSeconds` (DESIGN §5.1): its first delivery, and each return while the key is still held,
 * with the consumer's default delays at their shortest (the jitter's low end). None of them is one
 * of the record's attempts, but each counts towards the queue's `maxReceiveCount`. A lease lasts
 * its invocation's remaining time plus the default margin, so even a holder that died frees the key
 * by then.
 */
export function heldCopyReceives(holderTimeoutSeconds: number): number {
  const holdSeconds = holderTimeoutSeconds + DEFAULT_LEASE_MARGIN_MS / 1000;
  const shortest = () => 0;
  let receives = 1;
  for (
    let waited = soonDelaySeconds(1, DEFAULT_RETRY_DELAYS, shortest);
    waited <= holdSeconds;
    waited += soonDelaySeconds(receives, DEFAULT_RETRY_DELAYS, shortest)
  ) {
    receives++;
  }
  return receives;
}
