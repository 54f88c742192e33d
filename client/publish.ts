import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import type { PublishMessage, PublishRequest, PublishResponse } from '../lambdas/publisher/contract';
import { publisherErrorFromFunctionError } from '../lambdas/publisher/errors';
import { backoffDelayMs, type RetryPolicy } from '../lambdas/runtime/backoff';
import { OncelyError } from '../lambdas/runtime/idempotency/errors';
import { isTransientAwsError } from '../lambdas/runtime/transient-aws-error';
import { PublisherClientConfigurationError, PublisherFunctionError, PublisherResponseError } from './errors';

/** Names the publisher function (name or ARN) when `functionName` is not given. */
export const PUBLISHER_FUNCTION_ENV = 'ONCELY_PUBLISHER_FUNCTION';

export interface PublishOptions {
  /** The publisher's function name or ARN; `ONCELY_PUBLISHER_FUNCTION` by default. */
  functionName?: string;
  /** The client to invoke with; by default one shared client configured from the environment (region, `AWS_ENDPOINT_URL_LAMBDA`…). */
  lambda?: LambdaClient;
  /**
   * The request's idempotency key; a new UUID per call by default. Give your own (derived from the
   * business operation, say) to make a publish idempotent across your own retries and restarts too.
   */
  requestId?: string;
  retry?: Partial<RetryPolicy>;
}

export interface PublishResult extends PublishResponse {
  /** The requestId every attempt of this publish carried. */
  requestId: string;
}

export const DEFAULT_CLIENT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 5_000 };

/**
 * Publishes messages through the Oncely publisher Lambda. Every attempt carries the same requestId,
 * so retrying — after a timeout, a dropped connection, throttling, a 5xx, or while another attempt
 * is still running — never sends a message twice: a repeat returns the first response.
 *
 * Resolves with one result per message (`sent`, `failed` or `blocked`). Rejects with
 * PublishValidationError or PublishConflictError (never retried), or with the last error once the
 * attempts run out: PublishInProgressError, PublisherFunctionError or the AWS SDK's own.
 */
export async function publish(
  messages: readonly PublishMessage[],
  options: PublishOptions = {},
): Promise<PublishResult> {
  const functionName = options.functionName ?? process.env[PUBLISHER_FUNCTION_ENV];
  if (!functionName) {
    throw new PublisherClientConfigurationError(
      `No publisher function to invoke: pass \`functionName\` or set ${PUBLISHER_FUNCTION_ENV} to the ` +
        "publisher's function name or ARN (an output of the Oncely stack, or the sandbox's ready file).",
    );
  }
  const lambda = options.lambda ?? sharedLambdaClient();
  const requestId = options.requestId ?? randomUUID();
  const request: PublishRequest = { requestId, messages };
  const payload = new TextEncoder().encode(JSON.stringify(request));
  const retry = { ...DEFAULT_CLIENT_RETRY, ...options.retry };

  for (let attempt = 1; ; attempt++) {
    try {
      const response = await invokeOnce(lambda, functionName, payload, messages.length);
      return { requestId, ...response };
    } catch (error) {
      if (attempt >= retry.maxAttempts || !isWorthRetrying(error)) throw error;
      await sleep(backoffDelayMs(attempt, retry));
    }
  }
}

async function invokeOnce(
  lambda: LambdaClient,
  functionName: string,
  payload: Uint8Array,
  messageCount: number,
): Promise<PublishResponse> {
  const output = await lambda.send(new InvokeCommand({ FunctionName: functionName, Payload: payload }));
  const text = output.Payload ? new TextDecoder().decode(output.Payload) : '';
  if (output.FunctionError) throw functionError(text);
  const response = parseJson(text) as Partial<PublishResponse> | undefined;
  if (!Array.isArray(response?.results) || response.results.length !== messageCount) {
    throw new PublisherResponseError(
      `${functionName} answered ${text.slice(0, 200)}, not one result per message: is it the Oncely publisher?`,
    );
  }
  return { results: response.results };
}

/** Rebuilds the publisher's own errors with their details; anything else is a PublisherFunctionError. */
function functionError(text: string): Error {
  const reported = parseJson(text) as { errorType?: unknown; errorMessage?: unknown } | undefined;
  const errorType = typeof reported?.errorType === 'string' ? reported.errorType : 'Unknown';
  const errorMessage = typeof reported?.errorMessage === 'string' ? reported.errorMessage : text;
  return (
    publisherErrorFromFunctionError(errorType, errorMessage) ??
    new PublisherFunctionError(errorType, errorMessage)
  );
}

function isWorthRetrying(error: unknown): boolean {
  return error instanceof OncelyError ? error.retryable : isTransientAwsError(error);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

let sharedLambda: LambdaClient | undefined;

function sharedLambdaClient(): LambdaClient {
  // One SDK attempt per call: publish retries itself, with the same requestId and its own backoff.
  sharedLambda ??= new LambdaClient({ maxAttempts: 1 });
  return sharedLambda;
}
