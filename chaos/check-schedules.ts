import type fc from 'fast-check';
import { type Emulators, openChaosWorld } from '../harness/chaos-world.js';
import type { FaultKind } from '../harness/faults.js';
import { CONSUMER_METRICS } from '../lambdas/consumer/telemetry.js';
import {
  checkGenerated,
  type GeneratedCheckOptions,
  type GeneratedCounterexample,
} from './generated-check.js';
import { checkInvariants, type Violation } from './invariants.js';
import { runSchedule } from './run-schedule.js';
import { type Schedule, scheduleArbitrary } from './schedule.js';

export interface ScheduleCheckOptions extends GeneratedCheckOptions {
  emulators: Emulators;
  /** The schedules to generate: FIFO ones (`scheduleArbitrary`) by default, or `standardScheduleArbitrary`. */
  arbitrary?: fc.Arbitrary<Schedule>;
}

/** A schedule that broke an invariant, shrunk by fast-check, and how to run it again. */
export type Counterexample = GeneratedCounterexample<Schedule, Violation>;

export interface ScheduleCheckReport {
  schedules: number;
  seed: number;
  faults: Record<FaultKind, number>;
  requests: number;
  keysChecked: number;
  violations: number;
  needlessInDoubt: number;
  unexplainedNeedlessInDoubt: number;
  crashes: number;
  /** How many steps of each kind the schedules generated (a crashing delivery as `deliver+crash`). */
  steps: Record<string, number>;
  /** Schedules whose publish met round faults (`Schedule.publishRounds`), by what its first request and later rounds met, and its repeat call. */
  publishRounds: Record<string, number>;
  durationMs: number;
  /** Copies delivered while another copy was being processed, by how (`ScheduleRun.duplicatesDelivered`). */
  duplicatesDelivered: Record<string, number>;
  /** Copies of `deliver-while-held` steps that waited for the held key, or were given back. */
  heldCopies: { waited: number; cameBack: number };
  /** Faults on the consumers' `ChangeMessageVisibilityBatch` and DLQ sends, by request and kind. */
  consumerSqsFaults: Record<string, number>;
  /** Records the consumers gave back because their key was in progress elsewhere (to come back soon). */
  inProgressElsewhere: number;
  counterexample?: Counterexample;
}

/**
 * Generates schedules with fast-check and runs each against the real parts, checking DESIGN §11's
 * invariants per key. A failure is shrunk to a small schedule, reported with its seed and path.
 */
export async function checkSchedules(options: ScheduleCheckOptions): Promise<ScheduleCheckReport> {
  const totals = {
    keysChecked: 0,
    violations: 0,
    needlessInDoubt: 0,
    unexplainedNeedlessInDoubt: 0,
    crashes: 0,
    steps: {} as Record<string, number>,
    publishRounds: {} as Record<string, number>,
    duplicatesDelivered: {} as Record<string, number>,
    heldCopies: { waited: 0, cameBack: 0 },
    inProgressElsewhere: 0,
    consumerSqsFaults: {} as Record<string, number>,
  };
  const { done, ...check } = await checkGenerated({
    ...options,
    openWorld: () => openChaosWorld(options.emulators),
    arbitrary: options.arbitrary ?? scheduleArbitrary,
    run: async (world, schedule: Schedule, tally) => {
      const run = await runSchedule(world, schedule);
      const verdict = checkInvariants(run);
      if (tally) {
        totals.keysChecked += verdict.keysChecked;
        totals.violations += verdict.violations.length - verdict.unexplainedNeedlessInDoubt;
        totals.needlessInDoubt += verdict.needlessInDoubt;
        totals.unexplainedNeedlessInDoubt += verdict.unexplainedNeedlessInDoubt;
        totals.crashes += [...run.crashed.values()].reduce((sum, points) => sum + points.size, 0);
        const rounds = schedule.publishRounds;
        if (rounds) {
          for (const kind of [
            `first ${rounds.first}`,
            `later ${rounds.later}`,
            `repeat ${rounds.repeat ?? 'none'}`,
          ])
            totals.publishRounds[kind] = (totals.publishRounds[kind] ?? 0) + 1;
        }
        for (const [how, n] of Object.entries(run.duplicatesDelivered)) {
          if (n > 0) totals.duplicatesDelivered[how] = (totals.duplicatesDelivered[how] ?? 0) + n;
        }
        for (const [what, n] of Object.entries(run.consumerSqsFaults))
          totals.consumerSqsFaults[what] = (totals.consumerSqsFaults[what] ?? 0) + n;
        totals.heldCopies.waited += run.heldCopies.waited;
        totals.heldCopies.cameBack += run.heldCopies.cameBack;
        totals.inProgressElsewhere += run.metrics.get(CONSUMER_METRICS.inProgressElsewhere) ?? 0;
        for (const step of schedule.steps) {
          const kind = step.kind === 'deliver' && step.crash ? 'deliver+crash' : step.kind;
          totals.steps[kind] = (totals.steps[kind] ?? 0) + 1;
        }
      }
      return verdict.violations;
    },
  });
  return { schedules: done, ...check, ...totals };
}
