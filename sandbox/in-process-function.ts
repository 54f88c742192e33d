import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import {
  functionError,
  type InvocationResult,
  type LocalInvoker,
  lambdaContext,
  timeoutError,
} from './lambda-context.js';

export interface InProcessFunctionOptions {
  name: string;
  arn: string;
  timeoutMs: number;
  handler: (event: unknown, context: Context) => unknown;
}

/**
 * Runs a handler in this very process: for tests that build a handler around their own clients
 * (fault injection, counters). Unlike the sandbox's containers it shares this process's environment,
 * and a handler past its timeout is reported as timed out but keeps running in the background.
 */
export function inProcessFunction(options: InProcessFunctionOptions): LocalInvoker {
  return {
    async invoke(event, awsRequestId = randomUUID()): Promise<InvocationResult> {
      const context = lambdaContext({
        functionName: options.name,
        functionArn: options.arn,
        awsRequestId,
        deadline: Date.now() + options.timeoutMs,
      });
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<InvocationResult>((resolve) => {
        timer = setTimeout(
          () => resolve({ ok: false, error: timeoutError(awsRequestId, options.timeoutMs) }),
          options.timeoutMs,
        );
      });
      const ran = Promise.resolve()
        .then(() => options.handler(event, context))
        .then(
          (result): InvocationResult => ({ ok: true, result }),
          (thrown: unknown): InvocationResult => ({ ok: false, error: functionError(thrown) }),
        );
      try {
        return await Promise.race([ran, timedOut]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
