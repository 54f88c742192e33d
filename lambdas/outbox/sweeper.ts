import { randomUUID } from 'node:crypto';
import { forEachAtOnce } from './at-once.js';
import { type DrainReport, drainGroup } from './drain-group.js';
import { createdAtOf } from './layout.js';
import type { OutboxItems } from './outbox-items.js';
import type { SenderOptions } from './relay.js';

export interface SweepOptions extends SenderOptions {
  /** A pending message older than this is the sweeper's to send. */
  sweepAfterMs: number;
  /** A pending message older than this counts as stuck (the alarm's metric). */
  stuckAfterMs: number;
  timeLeftMs: () => number;
  /** How many pending messages one run looks at. Default 1,000. */
  maxMessagesPerRun?: number;
}

export interface SweepReport {
  /** Pending messages older than the sweep bound when the run started. */
  found: number;
  groups: DrainReport[];
  errors: { groupId: string; error: string }[];
  /** Still pending after the run and older than the stuck bound. */
  stuck: number;
  /** Age of the oldest message still pending after the run, in seconds; 0 when none is. */
  oldestPendingAgeSeconds: number;
}

const GROUPS_AT_ONCE = 10;

/**
 * The sweeper (DESIGN §9): on a schedule it lists pending messages older than a bound from the
 * sparse index of markers (no lock; when it finds nothing, one more query, for the oldest pending message's age), and drains their groups with
 * claims, so that several sweepers — and the relay — split the work and never send a message twice
 * from the outbox's side. Then it counts what is still stuck, for the alarm.
 */
export async function sweep(options: SweepOptions): Promise<SweepReport> {
  const items: OutboxItems = options.items;
  const startedAt = items.now();
  const found = await items.pendingBefore(
    startedAt - options.sweepAfterMs,
    options.maxMessagesPerRun ?? 1_000,
  );
  const groupIds = [...new Set(found.map((message) => message.groupId))];
  const owner = `sweeper:${randomUUID()}`;
  const report: SweepReport = {
    found: found.length,
    groups: [],
    errors: [],
    stuck: 0,
    oldestPendingAgeSeconds: 0,
  };
  await forEachAtOnce(groupIds, GROUPS_AT_ONCE, async (groupId) => {
    try {
      report.groups.push(await drainGroup(groupId, { ...options, owner, sentBy: 'sweeper' }));
    } catch (error) {
      report.errors.push({
        groupId,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
    }
  });
  const now = items.now();
  // Nothing was older than the sweep bound, so nothing is older than the (longer) stuck bound.
  const noneStuck = found.length === 0 && options.stuckAfterMs >= options.sweepAfterMs;
  report.stuck = noneStuck ? 0 : await items.countPendingBefore(now - options.stuckAfterMs);
  const [oldest] = await items.pendingBefore(now, 1);
  report.oldestPendingAgeSeconds = oldest
    ? Math.max(0, Math.floor((now - createdAtOf(oldest.order)) / 1000))
    : 0;
  return report;
}
