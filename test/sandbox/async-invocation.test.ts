import { describe, expect, it } from 'vitest';
import { invokeAsynchronously } from '../../sandbox/async-invocation.js';
import { limitConcurrency } from '../../sandbox/function-concurrency.js';
import type { InvocationResult, LocalInvoker } from '../../sandbox/lambda-context.js';

/** A function that holds each invocation until released, recording the request ids it ran. */
function heldFunction() {
  const ran: string[] = [];
  const releases: (() => void)[] = [];
  const invoker: LocalInvoker = {
    async invoke(_event, awsRequestId = '') {
      ran.push(awsRequestId);
      await new Promise<void>((release) => releases.push(release));
      return { ok: true, result: null };
    },
  };
  return {
    invoker,
    ran,
    releaseAll: () => {
      for (const release of releases.splice(0)) release();
    },
  };
}

describe('asynchronous invocations under reserved concurrency', () => {
  it('runs a throttled event later rather than dropping it, without counting the throttle as a retry', async () => {
    const held = heldFunction();
    const limited = limitConcurrency(held.invoker, 1);
    const signal = new AbortController().signal;
    const attempts: { id: string; number: number; ok: boolean }[] = [];
    const run = (awsRequestId: string) =>
      invokeAsynchronously({
        awsRequestId,
        invoke: (id) => limited.invoke({}, id),
        config: { maximumRetryAttempts: 0, maximumEventAgeSeconds: 60 },
        signal,
        onAttempt: (result: InvocationResult, attempt) =>
          attempts.push({ id: attempt.awsRequestId, number: attempt.number, ok: result.ok }),
      });
    const first = run('first');
    const second = run('second');
    // The second is throttled while the first holds the one slot; once the slot is free, it runs.
    await expect.poll(() => held.ran, { timeout: 1_000 }).toEqual(['first']);
    held.releaseAll();
    await first;
    await expect.poll(() => held.ran, { timeout: 60_000 }).toEqual(['first', 'second']);
    held.releaseAll();
    await second;
    expect(attempts).toEqual([
      { id: 'first', number: 1, ok: true },
      { id: 'second', number: 1, ok: true },
    ]);
  });

  it('discards a throttled event once it would pass its maximum age, as Lambda does', async () => {
    const throttledForever = limitConcurrency({ invoke: async () => ({ ok: true, result: null }) }, 0);
    const attempts: number[] = [];
    await invokeAsynchronously({
      invoke: (id) => throttledForever.invoke({}, id),
      // Younger than the first backoff (1 s): given up without waiting.
      config: { maximumRetryAttempts: 2, maximumEventAgeSeconds: 0 },
      signal: new AbortController().signal,
      onAttempt: (_result, attempt) => attempts.push(attempt.number),
    });
    expect(attempts).toEqual([]);
  });
});
