import { randomUUID } from 'node:crypto';
import { forEachAtOnce } from './at-once.js';
import { type DrainReport, drainGroup } from './drain-group.js';
import { committedAtOf } from './layout.js';
import type { OutboxItems } from './outbox-items.js';
import type { SenderOptions } from './relay.js';

export interface SweepOptions extends SenderOptions {
  /** A pending message older than this is the sweeper's to send. */
  sweepAfterMs: number;
  /** A pending message older than this counts as stuck (the alarm's metric). */
  stuckAfterMs: number;
  timeLeftMs: () => number;
  /** How many groups one run drains at most. Default 1,000. */
  maxGroupsPerRun?: number;
}

export interface SweepReport {
  /** Pending messages older than the sweep bound when the run started (as far as it listed them). */
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
 * The sweeper (DESIGN §9): on a schedule it lists the groups with messages pending longer than a
 * bound from the sparse index of markers (no lock; when it finds none, one more query, for the
 * oldest pending message's age), and drains them with claims, so that several sweepers — and the
 * relay — split the work and never send a message twice from the outbox's side. Then it counts
 * what is still stuck, for the alarm.
 */
export async function sweep(options: SweepOptions): Promise<SweepReport> {
  const items: OutboxItems = options.items;
  const startedAt = items.now();
  // The listing may take half the run's time; the drains, the rest.
  const listUntilMs = options.timeLeftMs() / 2;
  const listed = await items.pendingGroupsBefore(
    startedAt - options.sweepAfterMs,
    () => options.timeLeftMs() > listUntilMs,
  );
  const groupIds = turnOf(listed.groupIds, options.maxGroupsPerRun ?? 1_000);
  const owner = `sweeper:${randomUUID()}`;
  const report: SweepReport = {
    found: listed.markers,
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
  const noneStuck = listed.markers === 0 && options.stuckAfterMs >= options.sweepAfterMs;
  report.stuck = noneStuck ? 0 : await items.countPendingBefore(now - options.stuckAfterMs);
  const oldest = await items.oldestPendingBefore(now);
  report.oldestPendingAgeSeconds = oldest
    ? Math.max(0, Math.floor((now - committedAtOf(oldest.pendingSince)) / 1000))
    : 0;
  return report;
}

/**
 * Up to `max` of the listed groups, from a random one on, wrapping around: a run that cannot drain
 * them all (its bound, its time) does not always spend itself on the same groups first — those that
 * keep failing, say — so across runs every group gets its turn.
 */
function turnOf(groupIds: readonly string[], max: number): string[] {
  const start = Math.floor(Math.random() * groupIds.length);
  return [...groupIds.slice(start), ...groupIds.slice(0, start)].slice(0, max);
}
