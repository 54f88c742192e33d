import type { Context } from 'aws-lambda';

/** A function error as Lambda reports it (the payload beside `X-Amz-Function-Error: Unhandled`). */
export interface FunctionError {
  errorType: string;
  errorMessage: string;
  trace?: string[];
}

/** What one invocation returned: the handler's result, or its error as Lambda reports it. */
export type InvocationResult = { ok: true; result: unknown } | { ok: false; error: FunctionError };

/** Something that runs a function locally: in a child process (the sandbox) or in this process (tests). */
export interface LocalInvoker {
  /** `eventJson`, when given, is the event as the JSON text it arrived in (it may nest too deep to re-serialise). */
  invoke(event: unknown, awsRequestId?: string, eventJson?: string): Promise<InvocationResult>;
}

export interface ContextOptions {
  functionName: string;
  functionArn: string;
  awsRequestId: string;
  /** Epoch ms at which the invocation times out. */
  deadline: number;
  memoryMiB?: number;
  /** The container's log stream (a stream per container, as on Lambda); one per request by default. */
  logStreamName?: string;
}

/** The context Lambda's Node.js runtime passes a handler; remaining time counts down to the deadline. */
export function lambdaContext(options: ContextOptions): Context {
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: options.functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: options.functionArn,
    memoryLimitInMB: String(options.memoryMiB ?? 128),
    awsRequestId: options.awsRequestId,
    logGroupName: `/aws/lambda/${options.functionName}`,
    logStreamName: options.logStreamName ?? `local/[$LATEST]${options.awsRequestId.replaceAll('-', '')}`,
    getRemainingTimeInMillis: () => Math.max(0, options.deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/** What the Node.js runtime reports for a thrown value: it keeps no other property of an error. */
export function functionError(thrown: unknown): FunctionError {
  if (thrown instanceof Error) {
    return { errorType: thrown.name, errorMessage: thrown.message, trace: thrown.stack?.split('\n') ?? [] };
  }
  return { errorType: typeof thrown, errorMessage: String(thrown), trace: [] };
}

/** Lambda's report of an invocation that outlived its timeout. */
export function timeoutError(awsRequestId: string, timeoutMs: number): FunctionError {
  const seconds = (timeoutMs / 1000).toFixed(2);
  return {
    errorType: 'Sandbox.Timedout',
    errorMessage: `RequestId: ${awsRequestId} Error: Task timed out after ${seconds} seconds`,
  };
}
