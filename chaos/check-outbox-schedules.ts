import fc from 'fast-check';
import type { Emulators } from './chaos-world.js';
import { FAULT_KINDS, type FaultKind } from './faults.js';
import { checkOutboxInvariants, type OutboxVerdict, type OutboxViolation } from './outbox-invariants.js';
import { runOutboxSchedule } from './outbox-run.js';
import { type OutboxSchedule, outboxScheduleArbitrary } from './outbox-schedule.js';
import { DUPLICATE_EXPLANATIONS, type DuplicateExplanation } from './outbox-sends.js';
import { type OutboxWorld, openOutboxWorld } from './outbox-world.js';

export interface OutboxCheckOptions {
  emulators: Emulators;
  /** Schedules in all, split between the workers. */
  schedules: number;
  /** fast-check's seed: the same seed generates the same schedules. Random by default. */
  seed?: number;
  /** With `seed` and one worker: replays the counterexample fast-check reported at this path. */
  path?: string;
  /** Schedules run side by side, each worker with its own proxies and table; 2 by default. */
  workers?: number;
  onProgress?: (done: number) => void;
}

/** An outbox schedule that broke an invariant, shrunk by fast-check, and how to run it again. */
export interface OutboxCounterexample {
  seed: number;
  path?: string;
  schedule: OutboxSchedule;
  violations: OutboxViolation[];
}

export interface OutboxCheckReport {
  schedules: number;
  seed: number;
  writes: OutboxVerdict['writes'];
  /** Messages of committed writes. */
  messages: number;
  faults: Record<FaultKind, number>;
  requests: number;
  /** Sends refused while SQS was down (also counted as `fail-before` faults). */
  outageRefusals: number;
  crashes: number;
  stalls: number;
  duplicateSends: number;
  explained: Record<DuplicateExplanation, number>;
  violations: number;
  durationMs: number;
  counterexample?: OutboxCounterexample;
}

/**
 * Generates outbox schedules with fast-check and runs each against the real outbox, relay and
 * sweeper, checking DESIGN §9's promises. A failure is shrunk, reported with its seed and path.
 */
export async function checkOutboxSchedules(options: OutboxCheckOptions): Promise<OutboxCheckReport> {
  const started = Date.now();
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const workers = Math.max(1, Math.min(options.workers ?? 2, options.schedules));
  const totals = {
    done: 0,
    writes: { committed: 0, canceled: 0, failedUncommitted: 0, failedButCommitted: 0 },
    messages: 0,
    outageRefusals: 0,
    crashes: 0,
    stalls: 0,
    duplicateSends: 0,
    explained: Object.fromEntries(DUPLICATE_EXPLANATIONS.map((why) => [why, 0])) as Record<
      DuplicateExplanation,
      number
    >,
    violations: 0,
  };
  const worlds: OutboxWorld[] = [];
  let counterexample: OutboxCounterexample | undefined;
  try {
    for (let i = 0; i < workers && options.schedules > 0; i++)
      worlds.push(await openOutboxWorld(options.emulators));
    await Promise.all(
      worlds.map(async (world, worker) => {
        const numRuns =
          Math.floor(options.schedules / workers) + (worker < options.schedules % workers ? 1 : 0);
        const workerSeed = seed + worker;
        /** What the last failing run broke: the shrunk schedule's, once fast-check is done. */
        let lastViolations: OutboxViolation[] = [];
        const result = await fc.check(
          fc.asyncProperty(outboxScheduleArbitrary, async (schedule) => {
            const run = await runOutboxSchedule(world, schedule);
            const verdict = checkOutboxInvariants(run);
            if (verdict.violations.length > 0) lastViolations = verdict.violations;
            if (!counterexample) {
              totals.done++;
              for (const kind of Object.keys(totals.writes) as (keyof OutboxVerdict['writes'])[]) {
                totals.writes[kind] += verdict.writes[kind];
              }
              totals.messages += verdict.messages;
              totals.outageRefusals += run.traffic.outageRefusals;
              totals.crashes += run.crashes;
              totals.stalls += run.stalls;
              totals.duplicateSends += verdict.duplicateSends;
              for (const why of DUPLICATE_EXPLANATIONS) totals.explained[why] += verdict.explained[why];
              totals.violations += verdict.violations.length;
              options.onProgress?.(totals.done);
            }
            return verdict.violations.length === 0;
          }),
          { numRuns, seed: workerSeed, endOnFailure: false, ...(options.path ? { path: options.path } : {}) },
        );
        if (result.failed && result.counterexample && !counterexample) {
          const [schedule] = result.counterexample;
          counterexample = {
            seed: workerSeed,
            path: result.counterexamplePath ?? undefined,
            schedule,
            violations: lastViolations,
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
  const { done, ...figures } = totals;
  return {
    schedules: done,
    seed,
    ...figures,
    faults,
    requests,
    durationMs: Date.now() - started,
    counterexample,
  };
}
