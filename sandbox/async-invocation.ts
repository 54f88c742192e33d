import { randomUUID } from 'node:crypto';
import { FunctionThrottledError } from './function-concurrency.js';
import type { InvocationResult } from './lambda-context.js';
import { pause } from './pause.js';

/**
 * A function's error handling for asynchronous invocations: its `AWS::Lambda::EventInvokeConfig`
 * (CDK's `retryAttempts` and `maxEventAge`), else Lambda's defaults.
 */
export interface AsyncInvokeConfig {
  /** Retries after a function error, 0 to 2; Lambda's default 2. */
  maximumRetryAttempts: number;
  /** An event older than this is discarded rather than run again, 60 to 21,600; Lambda's default 6 hours. */
  maximumEventAgeSeconds: number;
}

/** https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html */
export const DEFAULT_ASYNC_INVOKE_CONFIG: AsyncInvokeConfig = {
  maximumRetryAttempts: 2,
  maximumEventAgeSeconds: 21_600,
};

/**
 * Lambda waits a minute before the first retry of a failed asynchronous invocation and two minutes
 * before the second (same page). The sandbox's `asyncRetryDelaysMs` shortens them for tests.
 */
export const AWS_ASYNC_RETRY_DELAYS_MS: readonly number[] = [60_000, 120_000];

/**
 * A throttled asynchronous invocation goes back to Lambda's queue and is tried again, up to the
 * maximum event age and without counting as a retry, after waits growing exponentially from 1 s to
 * at most 5 minutes (same page).
 */
export const AWS_THROTTLE_BACKOFF_MS = { first: 1_000, max: 300_000 } as const;

export interface AsyncInvocationOptions {
  /** The event's request id, e.g. the one `Invoke` answered with; a new one by default. */
  awsRequestId?: string;
  /** Runs the function once with the event; every attempt gets the same request id, as on AWS. */
  invoke: (awsRequestId: string) => Promise<InvocationResult>;
  config?: AsyncInvokeConfig;
  /** The wait before each retry: the first retry's, then the second's (the last one repeats). */
  retryDelaysMs?: readonly number[];
  /** Aborted when the sandbox stops: a retry not yet started never starts. */
  signal: AbortSignal;
  /** Called after each attempt (1 for the first run), saying whether another one is to follow. */
  onAttempt?: (result: InvocationResult, attempt: AsyncAttempt) => void;
}

export interface AsyncAttempt {
  /** The event's request id: the same for each of its attempts. */
  awsRequestId: string;
  /** 1 for the first run, 2 for its first retry, … */
  number: number;
  /** False once Lambda is done with the event: it succeeded, or it is given up. */
  retrying: boolean;
}

/**
 * Runs an event as Lambda runs an asynchronous invocation (an `Invoke` with `InvocationType: Event`,
 * an EventBridge rule's target): once, then after a function error (a timeout included) up to
 * `maximumRetryAttempts` more times after the documented waits, unless the event would be older
 * than `maximumEventAgeSeconds` by then. What comes of it reaches nobody but `onAttempt`, as on AWS
 * without destinations (which the sandbox does not emulate).
 */
export async function invokeAsynchronously(options: AsyncInvocationOptions): Promise<void> {
  const config = options.config ?? DEFAULT_ASYNC_INVOKE_CONFIG;
  const delays = options.retryDelaysMs ?? AWS_ASYNC_RETRY_DELAYS_MS;
  const queuedAt = Date.now();
  const awsRequestId = options.awsRequestId ?? randomUUID();
  for (let attempt = 1; ; attempt++) {
    const result = await runUnthrottled(options, awsRequestId, queuedAt, config);
    if (result === undefined) return;
    const delayMs = delays[Math.min(attempt - 1, delays.length - 1)] ?? 0;
    const retrying =
      !result.ok &&
      attempt <= config.maximumRetryAttempts &&
      // Lambda discards an event once it is older than the maximum age: it would be by the retry.
      Date.now() + delayMs - queuedAt <= config.maximumEventAgeSeconds * 1000;
    options.onAttempt?.(result, { awsRequestId, number: attempt, retrying });
    if (!retrying) return;
    await pause(delayMs, options.signal);
    if (options.signal.aborted) return;
  }
}

/**
 * One attempt, tried again while Lambda throttles it; undefined when the event grew too old
 * waiting (Lambda discards it) or the sandbox stopped.
 */
async function runUnthrottled(
  options: AsyncInvocationOptions,
  awsRequestId: string,
  queuedAt: number,
  config: AsyncInvokeConfig,
): Promise<InvocationResult | undefined> {
  for (let backoffMs: number = AWS_THROTTLE_BACKOFF_MS.first; ; ) {
    try {
      return await options.invoke(awsRequestId);
    } catch (error) {
      if (!(error instanceof FunctionThrottledError)) throw error;
    }
    if (Date.now() + backoffMs - queuedAt > config.maximumEventAgeSeconds * 1000) return undefined;
    await pause(backoffMs, options.signal);
    if (options.signal.aborted) return undefined;
    backoffMs = Math.min(backoffMs * 2, AWS_THROTTLE_BACKOFF_MS.max);
  }
}
