import type { MessageGroupPlan } from './group-plan.js';

/**
 * How one record ended: `succeeded` is acknowledged, `failed` is left for SQS to redeliver, and
 * `deferred` was not started (too little time left) and is left for SQS to redeliver too.
 */
export type RecordVerdict = 'succeeded' | 'failed' | 'deferred';

/**
 * What a record's turn gave: its verdict, or — when the write that records its outcome goes on
 * while the group's next record runs — `settling`, its verdict once that write is answered. Either
 * rejects only with an error that affects the whole batch.
 */
export type RecordStep = RecordVerdict | { settling: Promise<'succeeded' | 'failed'> };

export interface GroupRunReport<R> {
  /** Records that ran and failed. */
  failed: R[];
  /** Records not run because an earlier record of their group failed. */
  skipped: R[];
  /** Records not started for lack of time, with the rest of their group. */
  deferred: R[];
  /**
   * Records that ran and succeeded while an earlier record of their group was still being recorded,
   * and that record then failed: not acknowledged either, so that the group comes back in order —
   * their redelivery finds them done.
   */
  heldBack: R[];
}

/** How one group's records are processed, from when the group starts. */
export interface GroupProcessor<R> {
  /**
   * One record's turn. Throws only for an error that affects the whole batch: then no further
   * record starts, the running ones finish, and that error is thrown.
   */
  processRecord(record: R): Promise<RecordStep>;
  /** The group has no more turns (finished, stopped, or the batch failed); its last outcomes may still settle. */
  done?(): Promise<void>;
}

/**
 * Runs a batch's groups with DESIGN §5's rules: up to `maxConcurrentGroups` groups at once, each
 * group's records one at a time in order, and after a failure the rest of the group is skipped —
 * running it would break the group's order. A record's turn may end before its outcome is recorded
 * (`settling`): the next record then starts, and a failure that settles later stops the group from
 * there. `openGroup` makes a group's processor when the group starts; `signal` aborts when the
 * batch fails as a whole, `stopped` when the group can run no further record (that, or a record
 * of the group failed).
 */
export async function runGroups<R>(
  groups: readonly MessageGroupPlan<R>[],
  maxConcurrentGroups: number,
  openGroup: (group: MessageGroupPlan<R>, signal: AbortSignal, stopped: AbortSignal) => GroupProcessor<R>,
): Promise<GroupRunReport<R>> {
  const report: GroupRunReport<R> = { failed: [], skipped: [], deferred: [], heldBack: [] };
  const batch = new AbortController();
  const abort = (error: unknown) => {
    if (!batch.signal.aborted) batch.abort(error);
  };
  const pending = [...groups];

  const runGroup = async (group: MessageGroupPlan<R>) => {
    const { records } = group;
    const failure = new AbortController();
    const stopped = AbortSignal.any([batch.signal, failure.signal]);
    const processor = openGroup(group, batch.signal, stopped);
    const outcomes = new Map<number, 'succeeded' | 'failed'>();
    const settling: Promise<void>[] = [];
    let deferredFrom: number | undefined;
    const settle = (index: number, verdict: 'succeeded' | 'failed') => {
      outcomes.set(index, verdict);
      if (verdict === 'failed') failure.abort();
    };
    try {
      for (const [index, record] of records.entries()) {
        if (stopped.aborted) break;
        let step: RecordStep;
        try {
          step = await processor.processRecord(record);
        } catch (error) {
          abort(error);
          break;
        }
        if (step === 'deferred') {
          deferredFrom = index;
          break;
        }
        if (typeof step === 'string') settle(index, step);
        else settling.push(step.settling.then((verdict) => settle(index, verdict), abort));
      }
    } finally {
      await processor.done?.();
      await Promise.all(settling);
    }
    let failedBefore = false;
    for (const [index, record] of records.entries()) {
      const outcome = outcomes.get(index);
      if (outcome === 'failed') report.failed.push(record);
      else if (outcome === 'succeeded') {
        if (failedBefore) report.heldBack.push(record);
      } else if (deferredFrom !== undefined && index >= deferredFrom) report.deferred.push(record);
      else report.skipped.push(record);
      failedBefore ||= outcome === 'failed';
    }
  };
  const worker = async () => {
    for (let group = pending.shift(); group; group = pending.shift()) await runGroup(group);
  };

  await Promise.all(Array.from({ length: Math.min(maxConcurrentGroups, groups.length) }, worker));
  if (batch.signal.aborted) throw batch.signal.reason;
  return report;
}
