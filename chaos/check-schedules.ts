import fc from 'fast-check';
import { type ChaosWorld, type Emulators, openChaosWorld } from './chaos-world.js';
import { FAULT_KINDS, type FaultKind } from './faults.js';
import { checkInvariants, type Violation } from './invariants.js';
import { runSchedule } from './run-schedule.js';
import { type Schedule, scheduleArbitrary } from './schedule.js';

export interface ScheduleCheckOptions {
  emulators: Emulators;
  /** Schedules in all, split between the workers. */
  schedules: number;
  /** fast-check's seed: the same seed generates the same schedules. Random by default. */
  seed?: number;
  /** With `seed` and one worker: replays the counterexample fast-check reported at this path. */
  path?: string;
  /** Schedules run side by side, each worker with its own proxies and tables; 2 by default. */
  workers?: number;
  onProgress?: (done: number) => void;
}

/** A schedule that broke an invariant, shrunk by fast-check, and how to run it again. */
export interface Counterexample {
  seed: number;
  path?: string;
  schedule: Schedule;
  violations: Violation[];
}

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
  durationMs: number;
  counterexample?: Counterexample;
}

/**
 * Generates schedules with fast-check and runs each against the real parts, checking DESIGN §11's
 * invariants per key. A failure is shrunk to a small schedule, reported with its seed and path.
 */
export async function checkSchedules(options: ScheduleCheckOptions): Promise<ScheduleCheckReport> {
  const started = Date.now();
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const workers = Math.max(1, Math.min(options.workers ?? 2, options.schedules));
  const totals = {
    keysChecked: 0,
    violations: 0,
    needlessInDoubt: 0,
    unexplainedNeedlessInDoubt: 0,
    crashes: 0,
    done: 0,
  };
  const worlds: ChaosWorld[] = [];
  let counterexample: Counterexample | undefined;
  try {
    for (let i = 0; i < workers; i++) worlds.push(await openChaosWorld(options.emulators));
    await Promise.all(
      worlds.map(async (world, worker) => {
        const numRuns =
          Math.floor(options.schedules / workers) + (worker < options.schedules % workers ? 1 : 0);
        const workerSeed = seed + worker;
        const result = await fc.check(
          fc.asyncProperty(scheduleArbitrary, async (schedule) => {
            const run = await runSchedule(world, schedule);
            const verdict = checkInvariants(run);
            if (!counterexample) {
              totals.done++;
              totals.keysChecked += verdict.keysChecked;
              totals.violations += verdict.violations.length - verdict.unexplainedNeedlessInDoubt;
              totals.needlessInDoubt += verdict.needlessInDoubt;
              totals.unexplainedNeedlessInDoubt += verdict.unexplainedNeedlessInDoubt;
              totals.crashes += [...run.crashed.values()].reduce((sum, points) => sum + points.size, 0);
              options.onProgress?.(totals.done);
            }
            return verdict.violations.length === 0;
          }),
          { numRuns, seed: workerSeed, endOnFailure: false, ...(options.path ? { path: options.path } : {}) },
        );
        if (result.failed && result.counterexample && !counterexample) {
          const [schedule] = result.counterexample;
          // Once more, to report what the shrunk schedule itself broke.
          const again = checkInvariants(await runSchedule(world, schedule));
          counterexample = {
            seed: workerSeed,
            path: result.counterexamplePath ?? undefined,
            schedule,
            violations: again.violations,
          };
        }
        if (result.failed && !result.counterexample) throw result.errorInstance;
      }),
    );
  } finally {
    await Promise.all(worlds.map((world) => world.close()));
  }
  const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
  let requests = 0;
  for (const world of worlds) {
    for (const proxy of [world.dynamodbProxy, world.sqsProxy]) {
      const stats = proxy.stats();
      for (const kind of FAULT_KINDS) faults[kind] += stats.faults[kind];
      requests += Object.values(stats.requests).reduce((sum, n) => sum + n, 0);
    }
  }
  return {
    schedules: totals.done,
    seed,
    faults,
    requests,
    keysChecked: totals.keysChecked,
    violations: totals.violations,
    needlessInDoubt: totals.needlessInDoubt,
    unexplainedNeedlessInDoubt: totals.unexplainedNeedlessInDoubt,
    crashes: totals.crashes,
    durationMs: Date.now() - started,
    counterexample,
  };
}
