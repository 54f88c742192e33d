import type { OutboxRun } from './outbox-run.js';
import type { DuplicateExplanation } from './outbox-sends.js';

/** One broken promise of DESIGN §9 for one message (or write). */
export interface OutboxViolation {
  key: string;
  rule:
    | 'not-atomic'
    | 'canceled-but-written'
    | 'written-but-absent'
    | 'lost'
    | 'published-uncommitted'
    | 'queued-twice'
    | 'order'
    | 'left-pending'
    | 'unexplained-duplicate-send'
    | 'two-owners';
  detail: string;
}

export interface OutboxVerdict {
  violations: OutboxViolation[];
  writes: { committed: number; canceled: number; failedUncommitted: number; failedButCommitted: number };
  /** Messages of committed writes. */
  messages: number;
  /** Messages that reached SQS more than once. */
  duplicateSends: number;
  /** Of those, how many each explanation covers (one message may have several). */
  explained: Record<DuplicateExplanation, number>;
}

/**
 * DESIGN §9's promises for one outbox schedule: a write and its messages commit together or not at
 * all, and one the producer was told wrote nothing (canceled, refused) did not commit; every committed message is on the queue and nothing else is; each group's messages first
 * reached the queue in write order; nothing is left pending; a message reaches SQS again only after
 * a lost answer, a crash or stall of its sender, or a SENT mark that was not written; and no two
 * owners ever held one message's claim at once.
 */
export function checkOutboxInvariants(run: OutboxRun): OutboxVerdict {
  const violations: OutboxViolation[] = [];
  const add = (key: string, rule: OutboxViolation['rule'], detail: string) =>
    violations.push({ key, rule, detail });
  const { outcome } = run;
  const writes = { committed: 0, canceled: 0, failedUncommitted: 0, failedButCommitted: 0 };
  const committed = new Set<string>();

  for (const write of run.writes) {
    const business = outcome.business.get(write.businessKey);
    const isCommitted = business?.write === write.index;
    const present = write.keys.filter((key) => outcome.items.has(key));
    const name = `write ${write.index}`;
    if (present.length !== (isCommitted ? write.keys.length : 0)) {
      add(
        name,
        'not-atomic',
        `business write ${isCommitted ? 'committed' : 'absent'}, ${present.length} of ${write.keys.length} messages`,
      );
    }
    if (isCommitted && (write.canceled || write.told === 'canceled' || write.told === 'refused')) {
      add(
        name,
        'canceled-but-written',
        `planned ${write.canceled ? 'refused' : 'ok'}, told ${write.told}: ${write.errors.join('; ')}`,
      );
    }
    if (!isCommitted && write.told === 'written')
      add(name, 'written-but-absent', 'told written, nothing in the table');
    if (write.canceled) writes.canceled++;
    if (isCommitted) writes.committed++;
    if (write.told === 'failed') writes[isCommitted ? 'failedButCommitted' : 'failedUncommitted']++;
    if (isCommitted) for (const key of write.keys) committed.add(key);
  }

  checkQueue(run, committed, add);
  checkSettled(run, committed, add);
  const duplicates = checkSends(run, add);
  for (const overlap of run.claims.overlaps()) {
    add(overlap.key, 'two-owners', `${overlap.first.owner} and ${overlap.second.owner} held it at once`);
  }
  return { violations, writes, messages: committed.size, ...duplicates };
}

type Add = (key: string, rule: OutboxViolation['rule'], detail: string) => void;

/** Every committed message on the queue, once; nothing else; each group's first copies in write order. */
function checkQueue(run: OutboxRun, committed: ReadonlySet<string>, add: Add): void {
  const copies = new Map<string, number>();
  for (const { key } of run.outcome.received) copies.set(key, (copies.get(key) ?? 0) + 1);
  for (const key of committed) if (!copies.has(key)) add(key, 'lost', 'committed, never on the queue');
  for (const [key, count] of copies) {
    if (!committed.has(key))
      add(key, 'published-uncommitted', `on the queue ${count}×, its write did not commit`);
    if (count > 1) add(key, 'queued-twice', `on the queue ${count}×`);
  }
  const position = new Map(run.writes.flatMap((write) => write.keys).map((key, index) => [key, index]));
  const lastOfGroup = new Map<string, string>();
  const seen = new Set<string>();
  for (const { key, groupId } of run.outcome.received) {
    if (seen.has(key) || !position.has(key)) continue;
    seen.add(key);
    const before = lastOfGroup.get(groupId);
    if (before !== undefined && (position.get(before) as number) > (position.get(key) as number)) {
      add(key, 'order', `${groupId}: ${key} reached the queue after ${before}, written later`);
    }
    lastOfGroup.set(groupId, key);
  }
}

/** Nothing pending: every committed message SENT, without a claim, its marker gone. */
function checkSettled(run: OutboxRun, committed: ReadonlySet<string>, add: Add): void {
  for (const key of committed) {
    const item = run.outcome.items.get(key);
    if (item?.status !== 'SENT')
      add(key, 'left-pending', `status ${item?.status ?? 'absent'} after the drain`);
    else if (item.claimOwner !== undefined)
      add(key, 'left-pending', `SENT, still claimed by ${item.claimOwner}`);
  }
  for (const marker of run.outcome.leftMarkers) {
    add(
      marker.key,
      'left-pending',
      `its pending marker is still there after ${run.drainRounds} drain sweeps`,
    );
  }
}

/** A message reached SQS again only after something that leaves it to be sent again. */
function checkSends(run: OutboxRun, add: Add): Pick<OutboxVerdict, 'duplicateSends' | 'explained'> {
  const { duplicates, explained, unexplained } = run.sends.verdict();
  for (const send of unexplained) {
    add(
      send.key,
      'unexplained-duplicate-send',
      `reached SQS ${send.arrivals}×: nothing before copy ${send.copy} explains it (explanations: ${send.explanations.join(', ') || 'none'})`,
    );
  }
  return { duplicateSends: duplicates, explained };
}
