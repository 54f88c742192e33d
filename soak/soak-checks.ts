import { ledgerViolations } from '../harness/pipeline-state.js';
import type { IdempotencyRecord } from '../lambdas/idempotency/record.js';
import { LEDGER_NAMESPACE } from '../lambdas/shop/consumer/ledger.js';
import { NOTIFICATIONS_NAMESPACE, REMINDERS_NAMESPACE } from '../lambdas/shop/consumer/notifications.js';
import type { SoakMessage } from './soak-workload.js';

/** The pipeline's state once the queue is empty, as the soak reads it. */
export interface SoakState {
  records: Map<string, IdempotencyRecord>;
  /** DLQ copies per key. */
  deadLetters: Map<string, number>;
  ledger: { stock: Map<string, number>; balances: Map<string, number> };
  /**
   * The e-mail gateway's accepted sends per Idempotency-Key, every attempt per key, and when each
   * key's first e-mail was accepted.
   */
  gateway: {
    accepted: Map<string, number>;
    attempts: Map<string, number>;
    firstAcceptedAt: Map<string, number>;
  };
}

export interface SoakVerdict {
  /** Keys accepted (published, placed, or found in a record or the DLQ), each checked. */
  keysChecked: number;
  completed: number;
  /** Every broken promise, one line each: lost, applied twice, out of group order, unexplained. */
  violations: string[];
  /** IN_DOUBT records by the error that parked them. */
  inDoubtByCause: Record<string, number>;
  deadLettered: number;
  /** Reminders (at-least-once) sent more than once: the contract allows it, the gateway dedupes. */
  remindersResent: number;
}

const NAMESPACE_OF: Record<string, string> = {
  SendNotification: NOTIFICATIONS_NAMESPACE,
  SendReminder: REMINDERS_NAMESPACE,
};
const recordId = (message: SoakMessage) => `${NAMESPACE_OF[message.type] ?? LEDGER_NAMESPACE}#${message.key}`;

/**
 * The promise, per key (docs/design.md §11): nothing accepted is lost, no effect happens twice,
 * each group's effects happen in its order, and whatever did not complete says why.
 */
export function checkSoak(options: {
  /** Each group's messages in the order its producer published them. */
  groups: { groupId: string; messages: SoakMessage[] }[];
  stock: SoakMessage[];
  poison: Set<string>;
  /** Keys the producers know were accepted (the publisher's `sent`, the outbox's items). */
  accepted: Set<string>;
  /** Keys sent again after SQS's window: the DLQ may hold two copies of those. */
  late: Set<string>;
  state: SoakState;
}): SoakVerdict {
  const { records, deadLetters, ledger, gateway } = options.state;
  const violations: string[] = [];
  const inDoubtByCause: Record<string, number> = {};
  let keysChecked = 0;
  let completed = 0;
  const all = [...options.stock, ...options.groups.flatMap((group) => group.messages)];
  for (const message of all) {
    const record = records.get(recordId(message));
    const dead = deadLetters.get(message.key) ?? 0;
    if (!options.accepted.has(message.key) && !record && dead === 0) continue;
    keysChecked++;
    if (record?.status === 'COMPLETED') completed++;
    const settled = record?.status === 'COMPLETED' || record?.status === 'IN_DOUBT' || dead > 0;
    if (!settled)
      violations.push(`${message.key}: record ${record?.status ?? 'absent'}, not in the DLQ (lost)`);
    if (dead > 1 && !options.late.has(message.key))
      violations.push(`${message.key}: ${dead} copies in the DLQ`);
    if (options.poison.has(message.key) && (dead === 0 || record?.status === 'COMPLETED')) {
      violations.push(
        `${message.key}: poison, yet ${record?.status ?? 'not'} completed and ${dead} in the DLQ`,
      );
    }
    if (record?.status === 'IN_DOUBT') {
      const cause = record.error?.name;
      if (!cause) violations.push(`${message.key}: IN_DOUBT without the error that parked it`);
      inDoubtByCause[cause ?? '(none)'] = (inDoubtByCause[cause ?? '(none)'] ?? 0) + 1;
    }
  }

  violations.push(...ledgerViolations(all, records, ledger));
  // Lease effects: a receipt (at-most-once) is never sent twice; a completed e-mail was sent.
  let remindersResent = 0;
  for (const [id, record] of records) {
    const namespace = id.slice(0, id.indexOf('#'));
    if (namespace !== NOTIFICATIONS_NAMESPACE && namespace !== REMINDERS_NAMESPACE) continue;
    const sends = gateway.accepted.get(id) ?? 0;
    if (record.status === 'COMPLETED' && sends === 0) violations.push(`${id}: COMPLETED, never sent`);
    if (sends > 1 && namespace === NOTIFICATIONS_NAMESPACE)
      violations.push(`${id}: receipt sent ${sends} times`);
    if (sends > 1 && namespace === REMINDERS_NAMESPACE) remindersResent++;
  }
  // Group order: within a group, each COMPLETED message took effect no earlier than the one before
  // it. An e-mail took effect when the gateway first accepted it: an at-least-once record's
  // COMPLETED write runs while the group's next record does (DESIGN §4), and when it fails the
  // e-mail is sent again after the group's later effects — a repeat, not a reordering. A ledger
  // message took effect with its record (one transaction).
  for (const group of options.groups) {
    let previous: { key: string; at: number } | undefined;
    for (const message of group.messages) {
      const id = recordId(message);
      const record = records.get(id);
      if (record?.status !== 'COMPLETED' || record.updatedAt === undefined) continue;
      const at = gateway.firstAcceptedAt.get(id) ?? record.updatedAt;
      if (previous && at < previous.at) {
        violations.push(
          `${group.groupId}: ${message.key} took effect before ${previous.key}, published earlier`,
        );
      }
      previous = { key: message.key, at };
    }
  }
  return {
    keysChecked,
    completed,
    violations,
    inDoubtByCause,
    deadLettered: [...deadLetters.values()].reduce((sum, n) => sum + n, 0),
    remindersResent,
  };
}
