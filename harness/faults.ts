/** The AWS services the proxy can front; each has its own error shapes. */
export type ChaosService = 'dynamodb' | 'sqs';

/** A request body as sent by the SDK: AWS JSON, so DynamoDB values are in attribute-value form. */
export type JsonObject = Record<string, unknown>;

/** One request, as a fault plan sees it. */
export interface ChaosRequest {
  readonly service: ChaosService;
  /** The operation named by `X-Amz-Target`, e.g. `PutItem`, `SendMessageBatch`. */
  readonly operation: string;
  readonly body: JsonObject;
  /** 1 for the first request the proxy received; SDK retries count as requests. */
  readonly ordinal: number;
}

/**
 * What the proxy does to one request. `fail-before` and `throttle` answer without forwarding;
 * `lose-answer` lets the upstream apply it, then answers a retryable 500 (or, with `reset`, drops
 * the connection); `delay` forwards after `ms`; `hang` holds it until `releaseHung()` or `close()`.
 * `unprocessed-keys` answers a BatchGetItem, unforwarded, with every key unprocessed and nothing
 * read: DynamoDB's answer when it throttles a batch read (an error only when it throttles it all).
 * `fail-entry` answers a SendMessageBatch as SQS may when one entry fails on its side: the entry at
 * `entry` is left out of the forwarded request and listed as failed (`InternalError`, not the
 * sender's fault), while the others, later entries of its group included, are forwarded and accepted;
 * with `loseAnswer`, that answer is then lost (a retryable 500): two faults at once.
 * `stale-handle` forwards a DeleteMessageBatch or ChangeMessageVisibilityBatch with the receipt
 * handle of its entry at `entry` replaced by one SQS no longer honours, as after the message's
 * visibility ran out and another receive got it: SQS answers that entry as it answers a stale one.
 */
export type Fault =
  | { readonly kind: 'fail-before' }
  | { readonly kind: 'lose-answer'; readonly reset?: boolean }
  | { readonly kind: 'throttle' }
  | { readonly kind: 'delay'; readonly ms: number }
  | { readonly kind: 'hang' }
  | { readonly kind: 'unprocessed-keys' }
  | { readonly kind: 'fail-entry'; readonly entry: number; readonly loseAnswer?: boolean }
  | { readonly kind: 'stale-handle'; readonly entry: number };

export type FaultKind = Fault['kind'];

export const FAULT_KINDS: readonly FaultKind[] = [
  'fail-before',
  'lose-answer',
  'throttle',
  'delay',
  'hang',
  'unprocessed-keys',
  'fail-entry',
  'stale-handle',
];

/** Decides each request's fault; `undefined` lets the request through untouched. */
export type FaultPlan = (request: ChaosRequest) => Fault | undefined;

export const noFaults: FaultPlan = () => undefined;

/** Raised when a plan is built with options that cannot describe a schedule (rates above 1, nth < 1). */
export class FaultPlanError extends Error {
  override readonly name = 'FaultPlanError';
}
