import type { TraceContext } from '../common/trace-context.js';

/**
 * What the publisher Lambda accepts and answers (DESIGN §6): the contract between it and the
 * `oncely/client` other services call it with. Types only, so the client stays light.
 */

/** One message as a producer hands it over. */
export interface PublishMessage {
  /** What happened, e.g. "OrderPlaced"; 1–128 characters. */
  type: string;
  /**
   * The SQS message group: on a FIFO queue, messages of one group are delivered in request order;
   * on a standard queue, the fair-queue tenant key, which orders nothing (DESIGN §5.1).
   */
  groupId: string;
  /**
   * The idempotency key.
   * @default derived from `type`, `groupId` and `payload` (DESIGN §2)
   */
  key?: string;
  /** Any JSON value; `null` for a message without one. */
  payload: unknown;
}

export interface PublishRequest {
  /** Makes the whole request idempotent: a repeat returns the first response and sends nothing. */
  requestId?: string;
  /**
   * Names the caller's call that sends this request (`oncely/client`: one per `publish`); the
   * response carries the callId of the request that produced it, so a caller can tell a replay of
   * an earlier call's response from its own. Not part of the request's hash. Same rule as `requestId`.
   */
  callId?: string;
  /**
   * The producer's trace context, sent with every message as SQS attributes (DESIGN §6);
   * `oncely/client` fills it from the active OpenTelemetry context and X-Ray's. Not part of the
   * request's hash: a repeat from another trace is still a repeat.
   */
  traceContext?: TraceContext;
  messages: readonly PublishMessage[];
}

/**
 * At most this many messages per request. It keeps the response — one result per message, with a
 * key of at most 128 characters and a reason of at most 200 — small enough for the idempotency
 * record to store it, so that a repeat can replay it.
 */
export const MAX_MESSAGES_PER_REQUEST = 500;

/**
 * What is known of one message (DESIGN §6). A response never calls a message `failed` or `blocked`
 * that may be on the queue: such a message is `unknown`.
 */
export type MessageResult =
  /**
   * The queue accepted the message (or, FIFO, already had it: SQS deduplicates a key for 5
   * minutes; a standard queue may then hold it twice, which the consumer's record recognises).
   */
  | { key: string; status: 'sent'; messageId: string; sequenceNumber?: string }
  /**
   * Certainly not on the queue, and not sent again: retries ran out, or the failure cannot be
   * retried. Entries SQS itself lists as failed in a SendMessageBatch answer count as not enqueued.
   */
  | { key: string; status: 'failed'; reason: string }
  /**
   * Maybe on the queue: an attempt may have reached SQS (its answer was lost, SQS answered 5xx, or
   * the call was cut off at the deadline), and no later one confirmed it. Publish it again with the
   * same key (and, for its group's order, the `blocked` messages after it): SQS drops the repeat
   * within 5 minutes (FIFO), and the consumer's idempotency record after that (and on a standard
   * queue). `oncely/client` does so.
   */
  | { key: string; status: 'unknown'; reason: string }
  /**
   * Not sent because an earlier message of its group failed or is unknown: sending it would break
   * the group's order. Never on a standard queue, which keeps no order.
   */
  | { key: string; status: 'blocked'; reason: string };

/** `sent`, `failed`, `unknown` or `blocked`: see `MessageResult`. */
export type MessageStatus = MessageResult['status'];

/** The publisher's answer to one request. */
export interface PublishResponse {
  /** One result per message, in request order. */
  results: MessageResult[];
  /**
   * The `callId` of the request whose invocation produced this response, when it had one: on a
   * replay, an earlier request's.
   */
  callId?: string;
  /**
   * `standard` when the queue is a standard (or fair) one, which keeps no order: no result is then
   * `blocked`, and each `unknown` message may be re-sent on its own. Absent for a FIFO queue.
   */
  queueType?: 'standard';
}
