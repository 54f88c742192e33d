import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { backoffDelayMs, RETRY_POLICY_KEYS, type RetryPolicy } from '../common/backoff.js';
import { EnvironmentReader } from '../common/environment.js';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { sha256Hex } from '../common/message-key.js';
import { producerTraceContext } from '../common/trace-capture.js';
import type { TraceContext } from '../common/trace-context.js';
import { isTransientAwsError } from '../common/transient-aws-error.js';
import { OncelyError } from '../idempotency/errors.js';
import { blockedBy } from '../publisher/blocked-reason.js';
import type {
  MessageResult,
  PublishMessage,
  PublishRequest,
  PublishResponse,
} from '../publisher/contract.js';
import {
  PublishInProgressError,
  PublishValidationError,
  publisherErrorFromFunctionError,
} from '../publisher/errors.js';
import { mayBeOnQueue } from '../publisher/ordered-sender.js';
import { PublisherInvocationError, PublisherResponseError, PublisherTimeoutError } from './errors.js';

/** Names the publisher function (name or ARN) when `functionName` is not given. */
export const PUBLISHER_FUNCTION_ENV = 'ONCELY_PUBLISHER_FUNCTION';

/** The publisher function `publish` invokes when not given one; an OncelyConfigurationError names the variable. */
function publisherFunctionFromEnvironment(): string {
  const read = new EnvironmentReader();
  const functionName = read.required(PUBLISHER_FUNCTION_ENV);
  read.check(
    'No publisher function to invoke',
    `Pass \`functionName\` or set ${PUBLISHER_FUNCTION_ENV} to the publisher's function name or ARN ` +
      "(an output of the Oncely stack, or the sandbox's ready file).",
  );
  return functionName;
}

/** How `publish` reaches the publisher and how long it keeps trying. */
export interface PublishOptions {
  /**
   * The publisher's function name or ARN.
   * @default the environment variable `ONCELY_PUBLISHER_FUNCTION`
   */
  functionName?: string;
  /**
   * The client to invoke with.
   * @default one shared client configured from the environment (region, `AWS_ENDPOINT_URL_LAMBDA`…)
   */
  lambda?: LambdaClient;
  /**
   * The request's idempotency key. Give your own (derived from the business operation, say) to make
   * a publish idempotent across your own retries and restarts too: a later `publish` with it sends
   * again what the first did not get `sent` (see `publish`). Without a `~`, which round ids use.
   * @default a new UUID per call
   */
  requestId?: string;
  /**
   * Retries of failed invocations; `PublishInProgressError` is bounded by `maxLeaseWaitMs` instead.
   * @default `{ maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 5_000 }`
   */
  retry?: Partial<RetryPolicy>;
  /**
   * How long to keep trying while another attempt holds the request (`PublishInProgressError`).
   * An attempt that died holds it until its lease expires: its invocation's remaining time plus a
   * margin, at most Lambda's 15-minute timeout; the default waits such a lease out.
   * @default 960_000 (16 minutes)
   */
  maxLeaseWaitMs?: number;
  /**
   * The most one `Invoke` may take before it is cut off and retried with the same requestId
   * (`PublisherTimeoutError` once the attempts run out): longer than the publisher's own timeout
   * (30 s), so that only a stalled call is cut off, never a slow publish. Raise it with that timeout.
   * @default 40_000
   */
  invokeTimeoutMs?: number;
  /**
   * How many rounds of re-sending the messages left `unknown` (see `publish`); 0 for none.
   * @default 3
   */
  resendUnknownRounds?: number;
  /**
   * The trace context sent with the messages (as SQS attributes: `traceparent`, `tracestate`,
   * `AWSTraceHeader`), so that a consumer's trace links to this call; `false` sends none. Invalid
   * fields are left out, never sent.
   * @default the active OpenTelemetry context as the registered propagator writes it (with
   * `@opentelemetry/api` installed and an SDK registered), and the Lambda invocation's X-Ray header
   */
  traceContext?: TraceContext | false;
}

const PUBLISH_OPTION_KEYS = {
  functionName: true,
  lambda: true,
  requestId: true,
  retry: true,
  maxLeaseWaitMs: true,
  invokeTimeoutMs: true,
  resendUnknownRounds: true,
  traceContext: true,
} satisfies KnownKeys<PublishOptions>;

/** What `publish` resolves with: one result per message, and the request's id. */
export interface PublishResult extends PublishResponse {
  /** The requestId every attempt of this publish carried; re-send rounds carry ids derived from it. */
  requestId: string;
}

export const DEFAULT_CLIENT_RETRY: RetryPolicy = { maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 5_000 };
/** Lambda's longest timeout (15 minutes) plus a minute for the lease margin and clocks. */
export const DEFAULT_MAX_LEASE_WAIT_MS = 16 * 60 * 1000;
export const DEFAULT_RESEND_UNKNOWN_ROUNDS = 3;
/** The publisher's 30 s timeout, plus 10 s for a cold start and the network. */
export const DEFAULT_INVOKE_TIMEOUT_MS = 40_000;
/** Separates a round's requestId from the caller's: the client refuses it in a caller's requestId. */
const ROUND_SEPARATOR = '~';
/** Retry this long after a lease's expiry: the publisher's clock, which set it, may be behind ours. */
const LEASE_EXPIRY_MARGIN_MS = 250;

/**
 * Publishes messages through the Oncely publisher Lambda. Every attempt carries the same requestId,
 * so retrying — after a timeout, a dropped connection, throttling, a 5xx — never sends a message
 * twice: a repeat returns the first response. While another attempt holds the request (one still
 * running, or one that died: its lease lasts until `leaseExpiresAt`) it keeps trying, up to
 * `maxLeaseWaitMs`.
 *
 * Messages whose result is `unknown` (they may or may not be on the queue) are re-sent, with the
 * `blocked` ones of their groups after them, in order and under their same keys: SQS or the
 * consumer drops what was already there. To a standard queue (the response's `queueType`), which
 * keeps no order and has no `blocked` results, each `unknown` message is re-sent on its own, and a
 * copy already there is the consumer's to recognise: the order rules below are FIFO's. Each round is a new request whose requestId derives from
 * the first and from this call (`<requestId>~<callId>.r1`, …), so retrying a round replays it as
 * well, and no other call's round or caller's requestId is the same. A round's `sent` or `unknown`
 * replaces a message's result; its `failed` or `blocked` does not replace `unknown`, as the message
 * may be on the queue. A message a later message of its group overtook (its reason says so) is
 * never re-sent: it would land behind it. A round that still fails once its retries run out ends
 * the re-sending; it may have sent its messages, so those not `sent` end `unknown`.
 *
 * Called again with the same requestId (after a crash, or to finish what a call left), the first
 * request replays the earlier call's first response, which says so (its `callId` is the earlier
 * call's): one round then sends every message not `sent` — `failed`, `blocked` and `unknown` —
 * before the rounds for `unknown` ones. A retry within one call only replays. What the earlier
 * call's rounds did is not in that response: any message it does not call `sent` may be on the
 * queue, so this call answers `sent` or `unknown` for each, never `failed` or `blocked`.
 *
 * Resolves with one result per message, in order: `sent`, `failed` (certainly not on the queue),
 * `blocked`, or — once the rounds run out — `unknown`: publish again later with the same requestId
 * and messages (or the message with its key, and its group's `blocked` ones after it); it is never
 * enqueued twice within SQS's 5-minute window, and beyond it the consumer recognises the key.
 * Rejects with PublishValidationError (a requestId with a `~` too) or PublishConflictError (never
 * retried), or with the last error once the attempts run out: PublishInProgressError,
 * PublisherInvocationError, PublisherTimeoutError (each Invoke is bounded by `invokeTimeoutMs`) or
 * the AWS SDK's own.
 *
 * @example
 * ```ts
 * import { publish } from 'oncely/client';
 *
 * const { results } = await publish([{ type: 'OrderPlaced', groupId: 'customer-42', key: 'order-7', payload: order }]);
 * for (const result of results) {
 *   if (result.status !== 'sent') console.warn(`${result.key} is ${result.status}: ${result.reason}`);
 * }
 * ```
 */
export async function publish(
  messages: readonly PublishMessage[],
  options: PublishOptions = {},
): Promise<PublishResult> {
  refuseUnknownKeys('publish()', options, PUBLISH_OPTION_KEYS);
  refuseUnknownKeys('publish({ retry })', options.retry, RETRY_POLICY_KEYS);
  const functionName = options.functionName ?? publisherFunctionFromEnvironment();
  const invoker: Invoker = {
    lambda: options.lambda ?? sharedLambdaClient(),
    functionName,
    retry: { ...DEFAULT_CLIENT_RETRY, ...options.retry },
    maxLeaseWaitMs: options.maxLeaseWaitMs ?? DEFAULT_MAX_LEASE_WAIT_MS,
    invokeTimeoutMs: options.invokeTimeoutMs ?? DEFAULT_INVOKE_TIMEOUT_MS,
  };
  const requestId = options.requestId ?? randomUUID();
  refuseReservedRequestId(requestId);
  // Names this call in every request it sends: its rounds' ids, and what its responses echo.
  const callId = randomUUID();
  // Read before the first request, in the caller's context; its rounds carry it too.
  const traceContext = await producerTraceContext(options.traceContext, 'publish');
  const traced = traceContext ? { traceContext } : {};
  const first = await invokeWithRetries(invoker, { requestId, callId, ...traced, messages });
  const results = [...first.results];
  // A standard queue keeps no order: a message re-sent after a later one of its group loses nothing.
  const ordered = first.queueType !== 'standard';

  // An earlier call's response, replayed: this call is a new decision to publish, so one round
  // sends every message not sent, before the rounds for `unknown` ones.
  let everyUnsent = first.callId !== undefined && first.callId !== callId;
  /**
   * The messages that may be on the queue, by index, and why: a result of theirs other than `sent`
   * becomes `unknown`. An earlier call's rounds, or another call's with this requestId, are not in
   * the replayed response: any message it does not call `sent` may have been sent by them.
   */
  const uncertain = new Map<number, string>();
  results.forEach(({ status }, index) => {
    if (everyUnsent && status !== 'sent')
      uncertain.set(index, 'an earlier call with this requestId may have sent it');
  });
  const rounds = (options.resendUnknownRounds ?? DEFAULT_RESEND_UNKNOWN_ROUNDS) + (everyUnsent ? 1 : 0);
  for (let round = 1; round <= rounds; round++) {
    const indexes = ordered
      ? toResend(messages, results, everyUnsent)
      : toResendUnordered(results, everyUnsent);
    everyUnsent = false;
    if (indexes.length === 0) break;
    // The key from the result: the one the first attempt sent, given or derived.
    const resent = indexes.map((index) => ({
      ...messageAt(messages, index),
      key: resultAt(results, index).key,
    }));
    let response: PublishResponse;
    try {
      response = await invokeWithRetries(invoker, {
        requestId: roundRequestId(requestId, callId, round),
        callId,
        ...traced,
        messages: resent,
      });
    } catch (error) {
      // The round may have sent any of its messages before it failed: none is more certain than unknown.
      const why = `the round that re-sent it failed (${error instanceof Error ? error.message : String(error)})`;
      for (const index of indexes) uncertain.set(index, uncertain.get(index) ?? why);
      break;
    }
    settleRound(messages, results, indexes, response.results);
  }
  settleUncertain(results, uncertain);
  return { requestId, results, ...(ordered ? {} : { queueType: 'standard' as const }) };
}

interface Invoker {
  lambda: LambdaClient;
  functionName: string;
  retry: RetryPolicy;
  maxLeaseWaitMs: number;
  invokeTimeoutMs: number;
}

/** One request, retried with the same requestId until it is answered or no retry can help. */
async function invokeWithRetries(invoker: Invoker, request: PublishRequest): Promise<PublishResponse> {
  const payload = new TextEncoder().encode(JSON.stringify(request));
  const messages = request.messages;
  let failures = 0;
  let leaseWaits = 0;
  let waitLeaseUntil: number | undefined;
  for (;;) {
    try {
      return await invokeOnce(invoker, payload, messages.length);
    } catch (error) {
      let delay: number;
      if (error instanceof PublishInProgressError) {
        waitLeaseUntil ??= Date.now() + invoker.maxLeaseWaitMs;
        // Poll with backoff, as a live attempt usually finishes long before its lease ends, but no
        // later than just past the lease's expiry, when a dead attempt's request can be taken over.
        const untilExpiry = Math.max(0, error.leaseExpiresAt - Date.now()) + LEASE_EXPIRY_MARGIN_MS;
        delay = Math.min(backoffDelayMs(++leaseWaits, invoker.retry), untilExpiry);
        if (Date.now() + delay > waitLeaseUntil) throw error;
      } else {
        if (++failures >= invoker.retry.maxAttempts || !isWorthRetrying(error)) throw error;
        delay = backoffDelayMs(failures, invoker.retry);
      }
      await sleep(delay);
    }
  }
}

async function invokeOnce(
  { lambda, functionName, invokeTimeoutMs }: Invoker,
  payload: Uint8Array,
  messageCount: number,
): Promise<PublishResponse> {
  const timeout = AbortSignal.timeout(invokeTimeoutMs);
  const output = await lambda
    .send(new InvokeCommand({ FunctionName: functionName, Payload: payload }), { abortSignal: timeout })
    .catch((error: unknown) => {
      throw timeout.aborted ? new PublisherTimeoutError(invokeTimeoutMs) : error;
    });
  const text = output.Payload ? new TextDecoder().decode(output.Payload) : '';
  if (output.FunctionError) throw functionError(text);
  const response = parseJson(text) as Partial<PublishResponse> | undefined;
  if (!Array.isArray(response?.results) || response.results.length !== messageCount) {
    throw new PublisherResponseError(
      `${functionName} answered ${text.slice(0, 200)}, not one result per message: is it the Oncely publisher?`,
    );
  }
  const { callId, queueType } = response;
  return {
    results: response.results,
    ...(typeof callId === 'string' ? { callId } : {}),
    ...(queueType === 'standard' ? { queueType } : {}),
  };
}

/**
 * Which messages a round sends, in request order. Never one that would land behind a later
 * message of its group that is on the queue (`sent`), or may be (`unknown`) while it certainly is
 * not: a later `sent` one rules out every earlier one, a later `unknown` one every earlier one not
 * `unknown` itself. Of the rest: in a round for `unknown` messages, the `unknown` and `blocked`
 * ones of a group with such an `unknown` one, up to a `failed` one (after which the group must not
 * go on); with `everyUnsent`, all of them.
 */
function toResend(
  messages: readonly PublishMessage[],
  results: readonly MessageResult[],
  everyUnsent: boolean,
): number[] {
  const lastSent = new Map<string, number>();
  const lastUnknown = new Map<string, number>();
  messages.forEach(({ groupId }, i) => {
    const { status } = resultAt(results, i);
    if (status === 'sent') lastSent.set(groupId, i);
    if (status === 'unknown') lastUnknown.set(groupId, i);
  });
  const stopped = new Set<string>();
  const indexes: number[] = [];
  messages.forEach(({ groupId }, i) => {
    const { status } = resultAt(results, i);
    const afterSent = i > (lastSent.get(groupId) ?? -1);
    const unknownAfterSent = (lastUnknown.get(groupId) ?? -1) > (lastSent.get(groupId) ?? -1);
    if (status === 'sent' || !afterSent || stopped.has(groupId)) return;
    if (!everyUnsent && status === 'failed') {
      stopped.add(groupId);
      return;
    }
    if (status !== 'unknown' && i < (lastUnknown.get(groupId) ?? -1)) return;
    if (everyUnsent || unknownAfterSent) indexes.push(i);
  });
  return indexes;
}

/**
 * Which messages a round sends to a standard queue, where nothing waits for another: the `unknown`
 * ones; with `everyUnsent`, every one not `sent`.
 */
function toResendUnordered(results: readonly MessageResult[], everyUnsent: boolean): number[] {
  return results.flatMap(({ status }, i) =>
    status === 'unknown' || (everyUnsent && status !== 'sent') ? [i] : [],
  );
}

/**
 * Takes a round's results for the messages it re-sent. A message once `unknown` may be on the
 * queue: only `sent` or `unknown` replaces its result, never `failed` or `blocked`, and a message
 * blocked behind it says so.
 */
function settleRound(
  messages: readonly PublishMessage[],
  results: MessageResult[],
  indexes: readonly number[],
  roundResults: readonly MessageResult[],
): void {
  /** Group id → the caller's index of the round's first message that stopped the group. */
  const blockers = new Map<string, number>();
  indexes.forEach((index, i) => {
    const earlier = resultAt(results, index);
    const now = renumbered(resultAt(roundResults, i), indexes);
    const { groupId } = messageAt(messages, index);
    if (now.status === 'failed' || now.status === 'unknown') {
      if (!blockers.has(groupId)) blockers.set(groupId, index);
    }
    if (earlier.status === 'unknown' && (now.status === 'failed' || now.status === 'blocked')) return;
    const blocker = blockers.get(groupId);
    results[index] =
      now.status === 'blocked' && blocker !== undefined && resultAt(results, blocker).status === 'unknown'
        ? { ...now, reason: `not sent: ${blockedBy(blocker, true)}` }
        : now;
  });
}

/** Each message that may be on the queue and is `failed` or `blocked` is `unknown`, saying why. */
function settleUncertain(results: MessageResult[], uncertain: ReadonlyMap<number, string>): void {
  for (const [index, why] of uncertain) results[index] = mayBeOnQueue(resultAt(results, index), why);
}

/**
 * A round's requestId, within 128 characters: `<requestId>~<callId>.r<n>` (the requestId's SHA-256
 * when too long). Retrying the round replays it; a later call's rounds carry its own callId; and
 * no caller's requestId has a `~` (see refuseReservedRequestId).
 */
function roundRequestId(requestId: string, callId: string, round: number): string {
  const suffix = `${ROUND_SEPARATOR}${callId}.r${round}`;
  return `${requestId.length + suffix.length <= 128 ? requestId : sha256Hex(requestId)}${suffix}`;
}

/** Refuses a caller's requestId with the character of round ids, before anything is sent. */
function refuseReservedRequestId(requestId: string): void {
  if (!requestId.includes(ROUND_SEPARATOR)) return;
  throw new PublishValidationError([
    {
      path: 'requestId',
      message: `requestId must not contain "${ROUND_SEPARATOR}": publish reserves it for the ids of its re-send rounds`,
    },
  ]);
}

/** A round's reasons name messages by their position in the round's request: name them by the caller's. */
function renumbered(result: MessageResult, indexes: readonly number[]): MessageResult {
  if (!('reason' in result)) return result;
  const reason = result.reason.replace(/messages\[(\d+)\]/g, (text, i: string) => {
    const index = indexes[Number(i)];
    return index === undefined ? text : `messages[${index}]`;
  });
  return { ...result, reason };
}

function messageAt(messages: readonly PublishMessage[], index: number): PublishMessage {
  return messages[index] as PublishMessage;
}

function resultAt(results: readonly MessageResult[], index: number): MessageResult {
  return results[index] as MessageResult;
}

/** Rebuilds the publisher's own errors with their details; anything else is a PublisherInvocationError. */
function functionError(text: string): Error {
  const reported = parseJson(text) as { errorType?: unknown; errorMessage?: unknown } | undefined;
  const errorType = typeof reported?.errorType === 'string' ? reported.errorType : 'Unknown';
  const errorMessage = typeof reported?.errorMessage === 'string' ? reported.errorMessage : text;
  return (
    publisherErrorFromFunctionError(errorType, errorMessage) ??
    new PublisherInvocationError(errorType, errorMessage)
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
