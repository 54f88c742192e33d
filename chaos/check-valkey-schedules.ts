import fc from 'fast-check';
import type { IdempotencyMode } from '../lambdas/idempotency/lease.js';
import { runValkeySchedule } from './valkey-run.js';
import {
  VALKEY_FAULT_KINDS,
  type ValkeyFaultKind,
  type ValkeySchedule,
  valkeyScheduleArbitrary,
} from './valkey-schedule.js';

/** Keys whose effect ran twice or more, by mode; and keys left IN_DOUBT. */
export interface ValkeyTally {
  twice: Record<IdempotencyMode, number>;
  inDoubt: number;
}

/** One fault kind's schedules, without and with `waitForReplicas` (a restart has no replica to wait for). */
export interface ValkeyFaultFigures {
  schedules: number;
  keys: number;
  without: ValkeyTally;
  with?: ValkeyTally;
}

export interface ValkeyCheckReport {
  schedules: number;
  seed: number;
  byFault: Record<ValkeyFaultKind, ValkeyFaultFigures>;
  violations: number;
  durationMs: number;
  counterexample?: { seed: number; path?: string; schedule: ValkeySchedule; violations: string[] };
}

const emptyTally = (): ValkeyTally => ({ twice: { 'at-least-once': 0, 'at-most-once': 0 }, inDoubt: 0 });

/**
 * Generates Valkey schedules (chaos/valkey-schedule.ts) and runs each on real redis-servers without
 * the defence, then with `waitForReplicas` where replicas exist, tallying by fault kind the effects
 * run twice: the losses DESIGN §3.1 describes, and what the defence changes. One worker: each run
 * starts its own servers. A violation is shrunk and reported with its seed.
 */
export async function checkValkeySchedules(options: {
  schedules: number;
  seed?: number;
  onProgress?: (done: number) => void;
}): Promise<ValkeyCheckReport> {
  const started = Date.now();
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const byFault = Object.fromEntries(
    VALKEY_FAULT_KINDS.map((kind) => [
      kind,
      { schedules: 0, keys: 0, without: emptyTally(), ...(kind === 'restart' ? {} : { with: emptyTally() }) },
    ]),
  ) as Record<ValkeyFaultKind, ValkeyFaultFigures>;
  let done = 0;
  let violations = 0;
  let shrinking = false;
  let lastViolations: string[] = [];
  const result = await fc.check(
    fc.asyncProperty(valkeyScheduleArbitrary, async (schedule) => {
      const figures = byFault[schedule.fault.kind];
      const found: string[] = [];
      for (const defence of figures.with ? [false, true] : [false]) {
        const run = await runValkeySchedule(schedule, defence);
        found.push(
          ...run.violations.map((violation) => `${defence ? 'with' : 'without'} the defence: ${violation}`),
        );
        if (shrinking) continue;
        const tally = (defence ? figures.with : figures.without) as ValkeyTally;
        for (const [index, mode] of schedule.keys.entries()) {
          if ((run.effects[index] ?? 0) > 1) tally.twice[mode]++;
          if (run.endings[index] === 'in-doubt') tally.inDoubt++;
        }
      }
      if (!shrinking) {
        figures.schedules++;
        figures.keys += schedule.keys.length;
        violations += found.length;
        done++;
        options.onProgress?.(done);
      }
      if (found.length > 0) {
        shrinking = true;
        lastViolations = found;
      }
      return found.length === 0;
    }),
    { numRuns: options.schedules, seed, endOnFailure: false },
  );
  const counterexample =
    result.failed && result.counterexample
      ? {
          seed,
          path: result.counterexamplePath ?? undefined,
          schedule: result.counterexample[0],
          violations: lastViolations,
        }
      : undefined;
  if (result.failed && !result.counterexample) throw result.errorInstance;
  return { schedules: done, seed, byFault, violations, durationMs: Date.now() - started, counterexample };
}
