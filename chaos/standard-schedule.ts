import fc from 'fast-check';
import {
  type CrashPoint,
  type HoldPoint,
  type Schedule,
  type Step,
  schedulesOf,
  stepArbitraries,
} from './schedule.js';

/**
 * The FIFO schedules' crash points that a standard queue's consumer reaches: it takes no lease
 * ahead of its turn (a key's copies in a batch run one after another), so the two points about the
 * next record's lease do not exist there.
 */
export const STANDARD_CRASH_POINTS: readonly CrashPoint[] = [
  'before-acquire',
  'after-acquire',
  'inside-effect',
  'before-record',
  'after-completion',
  'before-ack',
];

/**
 * How long a copy whose key is held waits for it, in the schedules that wait: long enough for the
 * held invocation to go on and finish (it is let go as soon as the copy's claim is answered).
 */
export const STANDARD_IN_FLIGHT_WAIT_MS = 500;

function standardStep(messageCount: number): fc.Arbitrary<Step> {
  const steps = stepArbitraries(messageCount, STANDARD_CRASH_POINTS);
  return fc.oneof(
    { weight: 6, arbitrary: steps.deliver },
    { weight: 3, arbitrary: steps.crash },
    // The same batch to two invocations at once, in two containers: SQS's concurrent duplicates.
    { weight: 2, arbitrary: steps.twice },
    // Copies of one key inside one batch.
    { weight: 1, arbitrary: steps.copy },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('deliver-while-held' as const),
        hold: fc.constantFrom<HoldPoint>('after-acquire', 'before-record'),
      }),
    },
    { weight: 2, arbitrary: steps.expire },
    // On a standard queue nothing deduplicates a re-publish: it is a second message.
    { weight: 1, arbitrary: steps.republish },
    // SQS delivers a message again later (at-least-once): the same envelope, another message id.
    { weight: 1, arbitrary: steps.resend },
    { weight: 1, arbitrary: steps.redrive },
    { weight: 2, arbitrary: steps.clockJump },
  );
}

/**
 * Standard-queue schedules (issue 32, item 5): the FIFO schedules' messages, fault profiles and
 * clocks, steps from `standardStep`, and a consumer that waits for a held key or not.
 */
export const standardScheduleArbitrary: fc.Arbitrary<Schedule> = schedulesOf(standardStep, {
  queueType: fc.constant('standard' as const),
  inFlightWaitMs: fc.constantFrom(0, STANDARD_IN_FLIGHT_WAIT_MS),
});
