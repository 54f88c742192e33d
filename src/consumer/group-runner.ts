import type { MessageGroupPlan } from './group-plan.js';

/**
 * How one record ended: `succeeded` is acknowledged, `failed` is left for SQS to redeliver, and
 * `deferred` was not started (too little time left) and is left for SQS to redeliver too.
 */
export type RecordVerdict = 'succeeded' | 'failed' | 'deferred';

export interface GroupRunReport<R> {
  /** Records that ran and failed. */
  failed: R[];
  /** Records not run because an earlier record of their group failed. */
  skipped: R[];
  /** Records not started for lack of time, with the rest of their group. */
  deferred: R[];
}

/**
 * Runs a batch's groups with DESIGN §5's rules: up to `maxConcurrentGroups` groups at once, each
 * group's records one at a time in order, and after a failure the rest of the group is skipped —
 * running it would break the group's order. `process` throws only for an error that affects the
 * whole batch: then no further record starts, the running ones finish, and that error is thrown.
 */
export async function runGroups<R>(
  groups: readonly MessageGroupPlan<R>[],
  maxConcurrentGroups: number,
  process: (record: R, signal: AbortSignal) => Promise<RecordVerdict>,
): Promise<GroupRunReport<R>> {
  const report: GroupRunReport<R> = { failed: [], skipped: [], deferred: [] };
  const batch = new AbortController();
  const pending = [...groups];

  const runGroup = async ({ records }: MessageGroupPlan<R>) => {
    for (const [index, record] of records.entries()) {
      if (batch.signal.aborted) return;
      let verdict: RecordVerdict;
      try {
        verdict = await process(record, batch.signal);
      } catch (error) {
        if (!batch.signal.aborted) batch.abort(error);
        return;
      }
      if (verdict === 'deferred') {
        report.deferred.push(...records.slice(index));
        return;
      }
      if (verdict === 'failed') {
        report.failed.push(record);
        report.skipped.push(...records.slice(index + 1));
        return;
      }
    }
  };
  const worker = async () => {
    for (let group = pending.shift(); group; group = pending.shift()) await runGroup(group);
  };

  await Promise.all(Array.from({ length: Math.min(maxConcurrentGroups, groups.length) }, worker));
  if (batch.signal.aborted) throw batch.signal.reason;
  return report;
}
