import type { Message, MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import {
  type DedupHorizon,
  isPastDedupHorizon,
  PAST_DEDUP_HORIZON,
} from '../lambdas/common/dedup-horizon.js';
import {
  InvalidEnvelopeError,
  isKeylessEnvelope,
  parseReceivedEnvelope,
} from '../lambdas/common/envelope.js';
import { DLQ_ATTRIBUTES } from '../lambdas/consumer/dead-letter-queue.js';
import type { PipelineResources } from '../lib/constructs/pipeline-outputs.js';
import { moveInOrder } from './dead-letter-move.js';
import { groupOf, type SweepEnd, type SweepResult, sweepDeadLetters } from './dead-letter-sweep.js';
import { DedupHorizonUnknownError } from './operations-errors.js';

export interface RedriveOptions {
  /** Bound on the whole redrive; what it did not reach stays in the DLQ for the next run. */
  timeoutMs?: number;
  /** Move nothing: count what a redrive would move and skip. */
  dryRun?: boolean;
  /** Only this message group's messages. */
  groupId?: string;
  /** Only the message with this envelope key. */
  key?: string;
  /** Move at most this many. */
  limit?: number;
}

/**
 * Why a redrive leaves a message in the DLQ, since it would run as a new message: it is past the
 * dedup horizon, or it is an envelope whose key is gone (DESIGN §2: keyed by a deduplication id
 * that SQS replaced when it moved the message, and the consumer did not write into its body).
 */
export type SkipReason = 'past-dedup-horizon' | 'key-lost';

/** A message left in the DLQ, for a reason. */
export interface SkippedDeadLetter {
  messageId: string;
  groupId: string;
  key?: string;
  reason: SkipReason;
}

export interface RedriveResult {
  /** The DLQ holds nothing this run should have moved: every message was moved, or is accounted for below. */
  finished: boolean;
  /** Nothing was moved: `moved` counts what would have been. */
  dryRun: boolean;
  /** Sent back to the queue (and deleted from the DLQ). */
  moved: number;
  /** Past the dedup horizon, or without their key: left in place in the DLQ, to discard (`oncely dlq discard`). */
  skipped: SkippedDeadLetter[];
  /** Moved by this run, failed again and back in the DLQ: left for the next run. */
  returned: number;
  /**
   * Not of `--group`/`--key`, or beyond `--limit`: left in the DLQ. Also those never reached that
   * cannot be: behind the first 10 of a group not selected, or beyond `--limit`.
   */
  notSelected: number;
  /** Visible in the DLQ at the end and never reached, and perhaps selected (behind messages held back, or cut off by the time bound). */
  left: number;
  /**
   * The groups whose first messages, not selected (`--key` not found among those reached), the
   * `left` messages may wait behind: `--group` reaches them. Empty unless the redrive was blocked.
   */
  waitingBehind: string[];
  /** In flight elsewhere at the end (another operator's `dlq list` or redrive): not reached. */
  hidden: number;
  /** The time bound ended the redrive before the DLQ was seen through. */
  timedOut: boolean;
  /** Messages this run held that could not be made visible again: they reappear within a minute. */
  stillHidden: number;
}

export const DEFAULT_REDRIVE_TIMEOUT_SECONDS = 300;
/** Long enough for one received batch to be sent on and deleted, so no message comes round twice. */
const REDRIVE_VISIBILITY_TIMEOUT_SECONDS = 60;

/**
 * Moves the DLQ's messages back to the queue, each group in order: each receive's messages are sent
 * to the queue in one batch (in the order the DLQ handed them out), then deleted from the DLQ. It
 * ends when SQS's counts show that it saw every message (see dead-letter-sweep.ts), or says what it
 * did not reach. A message past the dedup horizon (DESIGN §2; or already dead-lettered as
 * `PastDedupHorizon`) is never sent, since it would run as a new message, and never re-sent to the
 * DLQ, since that would reset its retention: it stays where it is, and the rest of its group moves
 * on past it. So does an envelope without a key (`key-lost`), which would run under the redrive's
 * deduplication id. Messages that are not Oncely envelopes are moved as they are. A moved message that
 * fails again and comes back during the run stays for the next run.
 *
 * A crash between a send and its delete leaves the message in both places: harmless, the consumer
 * recognises the second copy by its key. The send's deduplication id comes from the DLQ message id,
 * so a retried send, or a second run within SQS's 5 minutes, adds no copy at all.
 */
export async function redriveDeadLetters(
  sqs: SQSClient,
  resources: Pick<PipelineResources, 'dlqUrl' | 'queueUrl' | 'idempotencyTtlSeconds'>,
  options: RedriveOptions = {},
): Promise<RedriveResult> {
  const horizon = horizonOf(resources.idempotencyTtlSeconds);
  const dryRun = options.dryRun ?? false;
  let moved = 0;
  /**
   * What this run left in the DLQ, by message id: a message let go so that its group's later ones
   * come (dead-letter-sweep.ts) is received again, and counts once.
   */
  const left = new Map<string, SkippedDeadLetter | 'returned' | 'not-selected'>();
  /** Queue message ids of what this run sent: a copy the consumer sends back names one as its original. */
  const sent = new Set<string>();
  const room = () => (options.limit ?? Number.POSITIVE_INFINITY) - moved;
  /** Whether a message with `--key` was reached (moved, or left past the horizon). */
  let keyReached = false;
  /** The groups of the messages left as not selected: what waits behind them is out of this run's reach. */
  const notSelectedGroups = new Set<string>();
  const sweep = await sweepDeadLetters(sqs, resources.dlqUrl, {
    deadline: Date.now() + (options.timeoutMs ?? DEFAULT_REDRIVE_TIMEOUT_SECONDS * 1000),
    visibilitySeconds: REDRIVE_VISIBILITY_TIMEOUT_SECONDS,
    done: () => room() <= 0,
    handle: async (messages) => {
      const movable: Message[] = [];
      for (const message of messages) {
        const id = String(message.MessageId);
        const original = message.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue;
        if (original !== undefined && sent.has(original)) left.set(id, 'returned');
        else if (!isSelected(message, options) || movable.length >= room()) {
          left.set(id, 'not-selected');
          notSelectedGroups.add(groupOf(message));
        } else if (isPast(message, horizon, Date.now()))
          left.set(id, skippedOf(message, 'past-dedup-horizon'));
        else if (isKeylessEnvelope(message.Body ?? '')) left.set(id, skippedOf(message, 'key-lost'));
        else movable.push(message);
        if (options.key !== undefined && isSelected(message, options) && left.get(id) !== 'not-selected')
          keyReached = true;
      }
      if (dryRun) {
        moved += movable.length;
        return new Set();
      }
      const batch = await moveInOrder(sqs, resources, movable, moved, withoutDlqAttributes);
      for (const id of batch.sentIds) sent.add(id);
      moved += batch.deleted.size;
      return batch.deleted;
    },
  });
  const reasons = [...left.values()];
  const unreached = unreachedOf(sweep, options, keyReached, notSelectedGroups);
  return {
    finished: finishedBy(sweep.end) && unreached.left === 0 && unreached.hidden === 0,
    dryRun,
    moved,
    skipped: reasons.filter((reason) => typeof reason === 'object'),
    returned: reasons.filter((reason) => reason === 'returned').length,
    notSelected: reasons.filter((reason) => reason === 'not-selected').length + unreached.notSelected,
    left: unreached.left,
    hidden: unreached.hidden,
    waitingBehind: unreached.waitingBehind,
    timedOut: sweep.end === 'timed-out',
    stillHidden: sweep.stillHidden,
  };
}

/**
 * What the sweep did not reach, and whether it is the redrive's to move. Past `--limit` (`stopped`)
 * nothing is. Blocked, the messages left wait behind the groups the sweep held (dead-letter-sweep.ts):
 * none is selected when `--group` names none of those groups, or when `--key` was reached already.
 * Otherwise they count as left, and the groups they wait behind are named.
 */
function unreachedOf(
  sweep: SweepResult,
  options: RedriveOptions,
  keyReached: boolean,
  notSelectedGroups: ReadonlySet<string>,
): Pick<RedriveResult, 'left' | 'hidden' | 'notSelected' | 'waitingBehind'> {
  const notOurs = (notSelected: number) => ({ left: 0, hidden: 0, notSelected, waitingBehind: [] });
  if (sweep.end === 'stopped') return notOurs(sweep.left + sweep.hidden);
  if (sweep.end !== 'blocked')
    return { left: sweep.left, hidden: sweep.hidden, notSelected: 0, waitingBehind: [] };
  const groups = [...sweep.heldGroups];
  const otherGroupsOnly =
    options.groupId !== undefined && groups.every((groupId) => groupId !== options.groupId);
  if (otherGroupsOnly || keyReached) return { ...notOurs(sweep.left), hidden: sweep.hidden };
  const waitingBehind = groups.filter((groupId) => notSelectedGroups.has(groupId)).sort();
  return { left: sweep.left, hidden: sweep.hidden, notSelected: 0, waitingBehind };
}

function finishedBy(end: SweepEnd): boolean {
  return end === 'seen-through' || end === 'stopped' || end === 'blocked';
}

function isSelected(message: Message, options: RedriveOptions): boolean {
  if (options.groupId !== undefined && groupOf(message) !== options.groupId) return false;
  return options.key === undefined || keyOf(message) === options.key;
}

function keyOf(message: Message): string | undefined {
  try {
    return parseReceivedEnvelope(message.Body ?? '').key;
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return undefined;
    throw error;
  }
}

function skippedOf(message: Message, reason: SkipReason): SkippedDeadLetter {
  const key = keyOf(message);
  return { messageId: String(message.MessageId), groupId: groupOf(message), ...(key ? { key } : {}), reason };
}

function isPast(message: Message, horizon: DedupHorizon, nowMs: number): boolean {
  if (message.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue === PAST_DEDUP_HORIZON) return true;
  try {
    return isPastDedupHorizon(parseReceivedEnvelope(message.Body ?? '').publishedAt, horizon, nowMs);
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return false; // not ours to judge: moved as it is
    throw error;
  }
}

/**
 * The DLQ's reasons would mislead on the queue; a producer's own attributes go along. So a redriven
 * message carries no attribute it did not have on the queue, and is never larger than it was there.
 */
function withoutDlqAttributes(message: Message): Record<string, MessageAttributeValue> {
  const dlq = new Set<string>(Object.values(DLQ_ATTRIBUTES));
  return Object.fromEntries(
    Object.entries(message.MessageAttributes ?? {})
      .filter(([name]) => !dlq.has(name))
      // As SendMessage takes them: a receive may add empty list fields SQS refuses.
      .map(([name, { DataType, StringValue, BinaryValue }]) => [
        name,
        { DataType, StringValue, BinaryValue },
      ]),
  );
}

function horizonOf(ttlSeconds: string): DedupHorizon {
  const seconds = Number(ttlSeconds);
  if (!Number.isInteger(seconds) || seconds <= 0) {
    throw new DedupHorizonUnknownError(
      `The pipeline's IdempotencyTtlSeconds is "${ttlSeconds}", not a number of seconds, so the redrive cannot ` +
        'tell which messages are past the dedup horizon. Redeploy the stack (or restart `oncely local`) from this version.',
    );
  }
  return { ttlSeconds: seconds };
}
