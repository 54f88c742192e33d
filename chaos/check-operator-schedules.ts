import { type Emulators, openChaosWorld } from '../harness/chaos-world.js';
import type { FaultKind } from '../harness/faults.js';
import {
  checkGenerated,
  type GeneratedCheckOptions,
  type GeneratedCounterexample,
} from './generated-check.js';
import { type OperatorViolation, runOperatorSchedule } from './operator-run.js';
import { type OperatorSchedule, operatorScheduleArbitrary } from './operator-schedule.js';

export interface OperatorCheckOptions extends GeneratedCheckOptions {
  emulators: Emulators;
}

export interface OperatorCheckReport {
  schedules: number;
  seed: number;
  faults: Record<FaultKind, number>;
  requests: number;
  /** DLQ messages the schedules put in place. */
  messages: number;
  violations: number;
  /** Steps with two operators' commands at once. */
  concurrentSteps: number;
  /** How the commands ended (`redrive finished`, `redrive refused`, `discard threw`…). */
  endings: Record<string, number>;
  durationMs: number;
  counterexample?: GeneratedCounterexample<OperatorSchedule, OperatorViolation>;
}

/**
 * Generates operator schedules (`dlq redrive`, `dlq discard`, `dlq list`, one at a time or two at
 * once, under faults, the consumer running or not) and checks each against what must stay true and
 * what each command said (chaos/operator-run.ts). A failure is shrunk and reported with its seed.
 */
export async function checkOperatorSchedules(options: OperatorCheckOptions): Promise<OperatorCheckReport> {
  const totals = { messages: 0, violations: 0, concurrentSteps: 0, endings: {} as Record<string, number> };
  const { done, ...check } = await checkGenerated({
    ...options,
    openWorld: () => openChaosWorld(options.emulators),
    arbitrary: operatorScheduleArbitrary,
    run: async (world, schedule: OperatorSchedule, tally) => {
      const run = await runOperatorSchedule(world, schedule);
      if (tally) {
        totals.messages += schedule.messages.length;
        totals.violations += run.violations.length;
        totals.concurrentSteps += schedule.steps.filter((step) => step.length > 1).length;
        for (const ending of run.endings) totals.endings[ending] = (totals.endings[ending] ?? 0) + 1;
      }
      return run.violations;
    },
  });
  return { schedules: done, ...check, ...totals };
}
