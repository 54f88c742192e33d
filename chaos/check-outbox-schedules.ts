import type { Emulators } from '../harness/chaos-world.js';
import type { FaultKind } from '../harness/faults.js';
import { openOutboxWorld } from '../harness/outbox-world.js';
import {
  checkGenerated,
  type GeneratedCheckOptions,
  type GeneratedCounterexample,
} from './generated-check.js';
import { checkOutboxInvariants, type OutboxVerdict, type OutboxViolation } from './outbox-invariants.js';
import { runOutboxSchedule } from './outbox-run.js';
import { type OutboxSchedule, outboxScheduleArbitrary } from './outbox-schedule.js';
import { DUPLICATE_EXPLANATIONS, type DuplicateExplanation } from './outbox-sends.js';

export interface OutboxCheckOptions extends GeneratedCheckOptions {
  emulators: Emulators;
}

/** An outbox schedule that broke an invariant, shrunk by fast-check, and how to run it again. */
export type OutboxCounterexample = GeneratedCounterexample<OutboxSchedule, OutboxViolation>;

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
  /** How many steps of each kind the schedules generated (a write retried after a lost answer as `write+lost-answer-…`). */
  steps: Record<string, number>;
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
  const totals = {
    writes: { committed: 0, canceled: 0, failedUncommitted: 0, failedButCommitted: 0 },
    messages: 0,
    outageRefusals: 0,
    crashes: 0,
    steps: {} as Record<string, number>,
    stalls: 0,
    duplicateSends: 0,
    explained: Object.fromEntries(DUPLICATE_EXPLANATIONS.map((why) => [why, 0])) as Record<
      DuplicateExplanation,
      number
    >,
    violations: 0,
  };
  const { done, ...check } = await checkGenerated({
    ...options,
    openWorld: () => openOutboxWorld(options.emulators),
    arbitrary: outboxScheduleArbitrary,
    run: async (world, schedule: OutboxSchedule, tally) => {
      const run = await runOutboxSchedule(world, schedule);
      const verdict = checkOutboxInvariants(run);
      if (tally) {
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
        for (const step of schedule.steps) {
          const kind =
            step.kind === 'write' && step.lostAnswer
              ? `write+lost-answer-${step.lostAnswer}`
              : 'crash' in step && step.crash
                ? `${step.kind}+crash`
                : step.kind;
          totals.steps[kind] = (totals.steps[kind] ?? 0) + 1;
        }
      }
      return verdict.violations;
    },
  });
  return { schedules: done, ...check, ...totals };
}
