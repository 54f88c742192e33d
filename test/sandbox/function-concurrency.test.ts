import { describe, expect, it } from 'vitest';
import { FunctionThrottledError, limitConcurrency } from '../../sandbox/function-concurrency.js';
import type { InvocationResult, LocalInvoker } from '../../sandbox/lambda-context.js';

/** An invoker whose invocations end when the test says, each with the outcome it is given. */
function heldInvoker() {
  const pending: ((outcome: InvocationResult | Error) => void)[] = [];
  const invoker: LocalInvoker = {
    invoke: () =>
      new Promise<InvocationResult>((resolve, reject) => {
        pending.push((outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome)));
      }),
  };
  return { invoker, pending };
}

describe('a function’s reserved concurrency', () => {
  it('throttles an invocation past it, and frees a slot when one ends, whatever its end', async () => {
    const { invoker, pending } = heldInvoker();
    const limited = limitConcurrency(invoker, 2);
    const first = limited.invoke({});
    const second = limited.invoke({});
    await expect(limited.invoke({})).rejects.toBeInstanceOf(FunctionThrottledError);

    // A function error or timeout (an outcome), or an invoker that fails (a rejection): either frees it.
    pending[0]?.({ ok: false, error: { errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out' } });
    await first;
    const third = limited.invoke({});
    pending[1]?.(new Error('the worker could not start'));
    await expect(second).rejects.toThrow('the worker could not start');
    const fourth = limited.invoke({});
    await expect(limited.invoke({})).rejects.toMatchObject({
      message: 'Rate Exceeded.',
      reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
    });
    pending[2]?.({ ok: true, result: 3 });
    pending[3]?.({ ok: true, result: 4 });
    await expect(Promise.all([third, fourth])).resolves.toEqual([
      { ok: true, result: 3 },
      { ok: true, result: 4 },
    ]);
  });

  it('throttles every invocation at 0, and none without a reservation', async () => {
    const { invoker, pending } = heldInvoker();
    await expect(limitConcurrency(invoker, 0).invoke({})).rejects.toBeInstanceOf(FunctionThrottledError);
    expect(pending).toHaveLength(0);
    expect(limitConcurrency(invoker, undefined)).toBe(invoker);
  });
});
