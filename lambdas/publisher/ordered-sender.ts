import { setTimeout as sleep } from 'node:timers/promises';
import { backoffDelayMs, type RetryPolicy } from '../common/backoff.js';
import { chunkByCountAndBytes, chunkOnePerGroup, MAX_BATCH_ENTRIES } from './batching.js';
import { blockedBy } from './blocked-reason.js';
import type { MessageResult } from './contract.js';
import type { PreparedMessage } from './validation.js';

/**
 * What one attempt at sending one entry came to. A failed attempt says whether it may have reached
 * SQS all the same (`maybeSent`: the call's answer was lost, a 5xx, a call cut off at the deadline):
 * the message may then be on the queue, and is never reported as certainly not sent.
 */
export type EntryOutcome =
  | { sent: true; messageId: string; sequenceNumber?: string }
  | { sent: false; retryable: boolean; maybeSent: boolean; reason: string };

/**
 * Sends one batch and answers one outcome per entry, in entry order; a failure of the whole call
 * is an outcome for each entry. `signal` aborts the call when the time budget runs out.
 */
export type SendBatch = (batch: readonly PreparedMessage[], signal: AbortSignal) => Promise<EntryOutcome[]>;

export interface OrderedSendOptions {
  sendBatch: SendBatch;
  /** The most a batch's bodies may add up to: the queue's maximum message size. */
  maxBatchBytes: number;
  retry: RetryPolicy;
  /** How long sending may still take (the invocation's remaining time, less what finishing needs). */
  timeLeftMs: () => number;
  /**
   * Whether the queue keeps a group's order (FIFO). `false` for a standard queue, which keeps none
   * (DESIGN §5.1): each message then stands alone, as if in a group of its own: a failed one holds
   * back nothing, none is `blocked`, and messages of one group share a call.
   * @default true
   */
  ordered?: boolean;
}

/** What a message's order is kept within: its group; on a queue that keeps no order, itself. */
type LaneOf = (message: PreparedMessage) => string;
const byGroup: LaneOf = (message) => message.groupId;
const alone: LaneOf = (message) => `#${message.index}`;

/** A call with less time than this would only be cut off: the message is reported as not sent instead. */
const MIN_TIME_FOR_A_CALL_MS = 100;

/** Failure reasons are cut to this length, which keeps every response storable (see MAX_MESSAGES_PER_REQUEST). */
export const MAX_REASON_LENGTH = 200;

/**
 * Sends prepared messages in batches and never reorders a message group (DESIGN §6, §9).
 *
 * A call carries at most one message of each group, groups batched together. SQS answers each
 * entry of a batch on its own and may accept a later message of a group after failing an earlier
 * one, and a lost answer hides that it did: a retry would then land behind the later one, and
 * nothing could put it first again. One message of a group per call leaves nothing behind a
 * failure, so a failed message is retried before its group goes on, whatever SQS answers. It
 * costs a call per message of a group (per ten when a request spreads over ten groups or more).
 *
 * Entries that fail retryably are sent again — with the same body and deduplication id — in the
 * next round, after an exponential backoff, while attempts and time remain; until then no later
 * message of their group is sent. Once a message of a group fails for good, the group's later
 * messages are not sent at all (`blocked`). Messages of other groups go on regardless.
 *
 * A message that fails for good is `unknown` rather than `failed` when any of its attempts may
 * have reached SQS; so is a `blocked` one that an earlier attempt may have enqueued. With
 * `ordered: false` (a standard queue) no message waits for another: the same retries, per message.
 */
export async function sendInGroupOrder(
  messages: readonly PreparedMessage[],
  options: OrderedSendOptions,
): Promise<MessageResult[]> {
  const laneOf = options.ordered === false ? alone : byGroup;
  const ledger = new ResultLedger(messages.length, laneOf);
  const limits = { maxEntries: MAX_BATCH_ENTRIES, maxBytes: options.maxBatchBytes };
  const chunk = laneOf === byGroup ? chunkOnePerGroup : chunkByCountAndBytes;
  let pending = [...messages];
  for (let attempt = 1; pending.length > 0; attempt++) {
    /** Lane → why its first message in `nextRound` has to be sent again. */
    const retrying = new Map<string, string>();
    const nextRound: PreparedMessage[] = [];
    for (const candidates of chunk(pending, limits)) {
      const batch: PreparedMessage[] = [];
      for (const message of candidates) {
        if (ledger.isStopped(message)) ledger.block(message);
        else if (retrying.has(laneOf(message))) nextRound.push(message);
        else batch.push(message);
      }
      if (batch.length === 0) continue;
      const outcomes = await attemptBatch(batch, options);
      batch.forEach((message, i) => {
        const retry = settle(message, outcomes[i] as EntryOutcome, ledger);
        if (retry === undefined) return;
        retrying.set(laneOf(message), retry);
        nextRound.push(message);
      });
    }
    if (nextRound.length === 0) break;

    nextRound.sort((a, b) => a.index - b.index);
    const wait = backoffDelayMs(attempt, options.retry);
    const giveUp =
      attempt >= options.retry.maxAttempts
        ? `gave up after ${attempt} attempts`
        : options.timeLeftMs() < wait + MIN_TIME_FOR_A_CALL_MS
          ? `gave up after ${attempt} attempts: no time left for another`
          : undefined;
    if (giveUp) {
      for (const message of nextRound) {
        if (ledger.isStopped(message)) ledger.block(message);
        else ledger.fail(message, `${retrying.get(laneOf(message))} (${giveUp})`);
      }
      break;
    }
    await sleep(wait);
    pending = nextRound;
  }
  return ledger.results;
}

/**
 * Records one entry's outcome: the only message of its lane in its call. Returns why it is to be
 * sent again, when its failure is retryable.
 */
function settle(message: PreparedMessage, outcome: EntryOutcome, ledger: ResultLedger): string | undefined {
  ledger.note(message, outcome);
  if (outcome.sent) {
    ledger.record(message, outcome);
    return undefined;
  }
  if (outcome.retryable) return outcome.reason;
  ledger.fail(message, outcome.reason);
  return undefined;
}

async function attemptBatch(batch: readonly PreparedMessage[], options: OrderedSendOptions) {
  const timeLeft = options.timeLeftMs();
  if (timeLeft < MIN_TIME_FOR_A_CALL_MS) {
    return batch.map(
      (): EntryOutcome => ({
        sent: false,
        retryable: false,
        maybeSent: false,
        reason: 'not sent: the invocation ran out of time',
      }),
    );
  }
  return options.sendBatch(batch, AbortSignal.timeout(timeLeft));
}

/** Each message's result, and which lanes are stopped by a message that failed for good. */
class ResultLedger {
  readonly results: MessageResult[];
  /** Lane → index of the lane's first message that failed for good. */
  readonly #stoppedBy = new Map<string, number>();
  /** Indexes of the messages an attempt may have enqueued although it failed. */
  readonly #maybeSent = new Set<number>();
  readonly #laneOf: LaneOf;

  constructor(size: number, laneOf: LaneOf) {
    this.results = new Array(size);
    this.#laneOf = laneOf;
  }

  /** Whether an earlier message of its lane failed for good. */
  isStopped(message: PreparedMessage): boolean {
    return this.#stoppedBy.has(this.#laneOf(message));
  }

  record(message: PreparedMessage, outcome: EntryOutcome & { sent: true }): void {
    const { messageId, sequenceNumber } = outcome;
    this.results[message.index] = { key: message.key, status: 'sent', messageId, sequenceNumber };
  }

  /** Remembers an attempt that failed but may have reached SQS: the message may be on the queue. */
  note(message: PreparedMessage, outcome: EntryOutcome): void {
    if (!outcome.sent && outcome.maybeSent) this.#maybeSent.add(message.index);
  }

  /** A final failure: the message is not sent again, and neither is any later message of its group. */
  fail(message: PreparedMessage, reason: string): void {
    this.results[message.index] = this.#maybeSent.has(message.index)
      ? { key: message.key, status: 'unknown', reason: cut(`may be on the queue: ${reason}`) }
      : { key: message.key, status: 'failed', reason: cut(reason) };
    const lane = this.#laneOf(message);
    if (!this.#stoppedBy.has(lane)) this.#stoppedBy.set(lane, message.index);
  }

  block(message: PreparedMessage): void {
    const blocker = this.#stoppedBy.get(this.#laneOf(message)) as number;
    const why = blockedBy(blocker, this.results[blocker]?.status === 'unknown');
    this.results[message.index] = this.#maybeSent.has(message.index)
      ? {
          key: message.key,
          status: 'unknown',
          reason: cut(`may be on the queue from an earlier attempt: ${why}`),
        }
      : { key: message.key, status: 'blocked', reason: cut(`not sent: ${why}`) };
  }
}

/**
 * A result that another request may have sent after all (an earlier run of the request, a round
 * that failed, an earlier call): `failed` and `blocked` become `unknown`, saying `why` and what they
 * said; any other result stays as it is.
 */
export function mayBeOnQueue(result: MessageResult, why: string): MessageResult {
  if (result.status !== 'failed' && result.status !== 'blocked') return result;
  return {
    key: result.key,
    status: 'unknown',
    reason: cut(`may be on the queue: ${why} (${result.reason})`),
  };
}

function cut(reason: string): string {
  return reason.slice(0, MAX_REASON_LENGTH);
}
