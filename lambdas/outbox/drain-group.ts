import type { RetryPolicy } from '../common/backoff.js';
import { traceAttributeBytes } from '../common/trace-context.js';
import type { MessageResult } from '../publisher/contract.js';
import { type SendBatch, sendInGroupOrder } from '../publisher/ordered-sender.js';
import type { PreparedMessage } from '../publisher/validation.js';
import type { PendingMessage } from './layout.js';
import type { OutboxItem, OutboxItems, SentItem } from './outbox-items.js';

export interface DrainOptions {
  items: OutboxItems;
  sendBatch: SendBatch;
  /** The queue's maximum message size: a batch's bodies together stay under it. */
  maxBatchBytes: number;
  /**
   * Whether the queue keeps a group's order: `false` for a standard queue (DESIGN §5.1), whose
   * runs then go up to ten messages of the group to a call.
   * @default true
   */
  ordered?: boolean;
  retry: RetryPolicy;
  /** Who claims: one value per invocation, so its own claims (and lost answers) are recognised. */
  owner: string;
  /**
   * How long a claim taken now lasts: past the invocation's end, so that no one sends what it may
   * be sending. Asked at each claim, as the time left shrinks.
   */
  claimMs: () => number;
  /** `relay` or `sweeper`, kept on the SENT item. */
  sentBy: string;
  /** How long the invocation may still work. */
  timeLeftMs: () => number;
}

/** What draining one group came to. */
export interface DrainReport {
  groupId: string;
  sent: string[];
  /** Sent, but the SENT mark could not be written: the item stays pending and a later send is deduplicated. */
  sentUnmarked: string[];
  /** Left pending after a failed send; the error is on the item. */
  notSent: string[];
  /** Why SENT marks could not be written. */
  markErrors: string[];
  /** Stopped at a message another invocation holds (it sends that one, and the rest later). */
  stoppedAtHeld?: string;
}

/**
 * How many pending messages of a group are claimed at a time: one transaction of SENT marks (two
 * items each, of DynamoDB's 100). They are sent one per SendMessageBatch (see sendRun).
 */
const CLAIM_AT_ONCE = 10;

/** Below this, an invocation does not start claiming more: its claims would outlive its chance to send. */
const MIN_TIME_TO_CLAIM_MS = 1_000;

/**
 * Sends a group's pending messages in order, oldest first, until none is left, one is held by
 * another invocation, a send fails, or time runs short (DESIGN §9). Each round lists the group's
 * first pending messages (strongly consistent), claims them, and sends only the leading run it
 * holds: so no message is ever sent while an earlier message of its group is pending. Claims it
 * does not use are given back.
 */
export async function drainGroup(groupId: string, options: DrainOptions): Promise<DrainReport> {
  const report: DrainReport = { groupId, sent: [], sentUnmarked: [], notSent: [], markErrors: [] };
  while (options.timeLeftMs() > MIN_TIME_TO_CLAIM_MS) {
    const pending = await options.items.pendingOfGroup(groupId, CLAIM_AT_ONCE);
    if (pending.length === 0) break;
    // The head first: whoever holds it holds the group for now, and the others stop here instead
    // of taking scattered messages of it. Then the rest together, in one round trip.
    const [head, ...rest] = pending as [PendingMessage, ...PendingMessage[]];
    const headClaim = await options.items.claim(head.key, options.owner, options.claimMs());
    if (!headClaim.claimed) {
      report.stoppedAtHeld = head.key;
      break;
    }
    const claims = [
      headClaim,
      ...(await Promise.all(
        rest.map((message) => options.items.claim(message.key, options.owner, options.claimMs())),
      )),
    ];
    const firstNotClaimed = claims.findIndex((claim) => !claim.claimed);
    const run = (firstNotClaimed === -1 ? claims : claims.slice(0, firstNotClaimed)).map(
      (claim) => (claim as { item: OutboxItem }).item,
    );
    const unused = claims.slice(run.length).flatMap((claim) => (claim.claimed ? [claim.item] : []));
    await Promise.all(unused.map((item) => options.items.release(item.key, options.owner)));
    if (!(await sendRun(run, options, report))) break;
  }
  return report;
}

/**
 * Sends a run of claimed items in order, marks the sent ones SENT in one transaction (on a FIFO
 * queue the leading ones only), and gives the rest back; false when any was not sent or not marked.
 */
async function sendRun(run: OutboxItem[], options: DrainOptions, report: DrainReport): Promise<boolean> {
  const prepared: PreparedMessage[] = run.map((item, index) => ({
    index,
    key: item.key,
    groupId: item.groupId,
    body: item.body,
    // Its write kept a trace context only where the body left room for its attributes.
    ...(item.traceContext ? { trace: item.traceContext } : {}),
    bytes: Buffer.byteLength(item.body) + traceAttributeBytes(item.traceContext),
  }));
  const results = await sendInGroupOrder(prepared, {
    sendBatch: options.sendBatch,
    maxBatchBytes: options.maxBatchBytes,
    retry: options.retry,
    timeLeftMs: options.timeLeftMs,
    ordered: options.ordered,
  });
  // On a FIFO queue only the run's leading sent messages are marked: one not sent keeps the rest
  // pending behind it, to be sent again after it. A standard queue keeps no order: every message SQS
  // accepted is marked, or each drain behind a refused head would send it again (issue 40).
  const ordered = options.ordered ?? true;
  const accepted: SentItem[] = [];
  for (const [index, item] of run.entries()) {
    const result = results[index] as MessageResult;
    if (result.status === 'sent') accepted.push({ item, messageId: result.messageId });
    else if (ordered) break;
  }
  const marked = await options.items
    .markSent(accepted, options.owner, options.sentBy)
    .catch((error: unknown) => {
      report.markErrors.push(
        `${accepted.map(({ item }) => item.key).join(', ')}: ${error instanceof Error ? error.message : String(error)}`,
      );
      return 0;
    });
  const markedKeys = new Set(accepted.slice(0, marked).map(({ item }) => item.key));
  report.sent.push(...run.filter((item) => markedKeys.has(item.key)).map((item) => item.key));
  if (markedKeys.size === run.length) return true;
  // The rest stay pending and are given back: the next drain sends them again, in order. A copy of
  // one that did reach SQS is dropped there (same deduplication id, 5 minutes) or by the consumer's
  // idempotency record.
  for (const [index, item] of run.entries()) {
    if (markedKeys.has(item.key)) continue;
    const outcome = results[index] as MessageResult;
    (outcome.status === 'sent' ? report.sentUnmarked : report.notSent).push(item.key);
    await options.items
      .release(item.key, options.owner, outcome.status === 'sent' ? undefined : describeUnsent(outcome))
      .catch(() => undefined); // its claim then simply expires
  }
  return false;
}

function describeUnsent(result: MessageResult): string {
  return 'reason' in result ? `${result.status}: ${result.reason}` : result.status;
}
