import { OncelyError } from '../lambdas/common/oncely-error.js';
import type { InvocationResult, LocalInvoker } from './lambda-context.js';

/**
 * Lambda throttled an invocation: the function already runs as many invocations as its reserved
 * concurrency allows. Invoke answers it as a 429 `TooManyRequestsException`; an SQS mapping leaves
 * the batch on the queue, to come back after the visibility timeout.
 */
export class FunctionThrottledError extends OncelyError {
  static override readonly errorName: string = 'FunctionThrottledError';
  readonly retryable = true;
  /** Lambda's `Reason` for it (https://docs.aws.amazon.com/lambda/latest/api/API_Invoke.html#API_Invoke_Errors). */
  readonly reason = 'ReservedFunctionConcurrentInvocationLimitExceeded';
}

/**
 * A function's invoker under its `ReservedConcurrentExecutions`: at most that many invocations at
 * once, from every source (Invoke, mappings, schedules), and a throttle beyond it rather than a
 * wait, as Lambda does (https://docs.aws.amazon.com/lambda/latest/dg/configuration-concurrency.html).
 * 0 throttles every invocation. Without a reservation, the invoker as it is.
 */
export function limitConcurrency(invoker: LocalInvoker, reserved: number | undefined): LocalInvoker {
  if (reserved === undefined) return invoker;
  let running = 0;
  return {
    async invoke(...args: Parameters<LocalInvoker['invoke']>): Promise<InvocationResult> {
      if (running >= reserved) throw new FunctionThrottledError('Rate Exceeded.');
      running++;
      try {
        return await invoker.invoke(...args);
      } finally {
        running--;
      }
    },
  };
}
