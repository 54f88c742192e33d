import { LambdaClient } from '@aws-sdk/client-lambda';
import type { Context } from 'aws-lambda';
import { inProcessFunction } from '../../sandbox/in-process-function.js';
import {
  type LambdaInvokeEndpoint,
  startLambdaInvokeEndpoint,
} from '../../sandbox/lambda-invoke-endpoint.js';
import { localAwsConfig, localFunctionArn } from '../../sandbox/local-aws-config.js';

/** The function name the client tests invoke. */
export const PUBLISHER_FUNCTION = 'oncely-publisher';

/** A function behind the sandbox's Lambda Invoke endpoint, and a client of it that does not retry. */
export interface ServedFunction {
  endpoint: LambdaInvokeEndpoint;
  lambda: LambdaClient;
  stop(): Promise<void>;
}

/**
 * Serves `handler` (the publisher, or a test's wrapper of it) as {@link PUBLISHER_FUNCTION} on a
 * local Invoke endpoint, for `publish` to call as it calls Lambda.
 */
export async function servePublisherFunction(
  handler: (event: unknown, context: Context) => unknown,
): Promise<ServedFunction> {
  const endpoint = await startLambdaInvokeEndpoint({
    functions: {
      [PUBLISHER_FUNCTION]: inProcessFunction({
        name: PUBLISHER_FUNCTION,
        arn: localFunctionArn(PUBLISHER_FUNCTION),
        timeoutMs: 10_000,
        handler,
      }),
    },
  });
  const lambda = new LambdaClient({ ...localAwsConfig(endpoint.endpoint), maxAttempts: 1 });
  return {
    endpoint,
    lambda,
    stop: async () => {
      lambda.destroy();
      await endpoint.stop();
    },
  };
}
