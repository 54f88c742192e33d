import fc from 'fast-check';
import {
  type CrashPoint,
  clockSkews,
  faultProfile,
  type HoldPoint,
  type Schedule,
  type Step,
  scheduledMessage,
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
  const index = fc.integer({ min: 0, max: messageCount - 1 });
  return fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('deliver' as const) }) },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('deliver' as const),
        crash: fc.constantFrom(...STANDARD_CRASH_POINTS),
      }),
    },
    // The same batch to two invocations at once, in two containers: SQS's concurrent duplicates.
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('deliver-twice' as const) }) },
    // Copies of one key inside one batch.
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('deliver-copy' as const) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('deliver-while-held' as const),
        hold: fc.constantFrom<HoldPoint>('after-acquire', 'before-record'),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire-visibility' as const) }) },
    // On a standard queue nothing deduplicates a re-publish: it is a second message.
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('republish' as const), index }) },
    // SQS delivers a message again later (at-least-once): the same envelope, another message id.
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('resend-after-window' as const), index }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('redrive' as const) }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('clock-jump' as const),
        past: fc.oneof(
          { weight: 4, arbitrary: fc.constant('lease' as const) },
          { weight: 1, arbitrary: fc.constant('ttl' as const) },
        ),
      }),
    },
  );
}

/**
 * Standard-queue schedules (issue 32, item 5): 1–6 messages, 1–8 steps from `standardStep`, the
 * FIFO schedules' fault profiles and clocks, and a consumer that waits for a held key or not.
 */
export const standardScheduleArbitrary: fc.Arbitrary<Schedule> = fc
  .array(scheduledMessage, { minLength: 1, maxLength: 6 })
  .chain((messages) =>
    fc.record({
      messages: fc.constant(messages),
      steps: fc.array(standardStep(messages.length), { minLength: 1, maxLength: 8 }),
      faults: faultProfile,
      clockSkewsMs: clockSkews,
      queueType: fc.constant('standard' as const),
      inFlightWaitMs: fc.constantFrom(0, STANDARD_IN_FLIGHT_WAIT_MS),
    }),
  );
