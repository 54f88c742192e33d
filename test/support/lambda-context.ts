import type { Context } from 'aws-lambda';

/** A Lambda context for handlers run in tests; the lease is sized from its remaining time. */
export function lambdaContext(remainingMs = 30_000): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'test-function',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:test-function',
    memoryLimitInMB: '256',
    awsRequestId: crypto.randomUUID(),
    logGroupName: '/aws/lambda/test-function',
    logStreamName: 'test',
    getRemainingTimeInMillis: () => remainingMs,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
