import fc from 'fast-check';
import type { FaultProfile } from './schedule.js';

/** One operator's command, as `oncely dlq …` runs it. */
export type OperatorCommand =
  /**
   * `dlq redrive`, taking the redrive lease first; `--group` and `--limit` when given. With
   * `killAfter`, its process dies after that many requests: it gives back neither its lease nor
   * what it held, which reappears in the DLQ once its visibility runs out (60 s).
   */
  | { kind: 'redrive'; group?: number; limit?: number; killAfter?: number }
  /** `dlq discard` of the DLQ's messages at these places in the order they were dead-lettered. */
  | { kind: 'discard'; indexes: number[] }
  /** `dlq list`, which holds what it received until it ends. */
  | { kind: 'list' };

/**
 * The operators' commands in a DLQ incident (issue 42): a FIFO DLQ's messages, some past the dedup
 * horizon, in up to 3 groups; steps of one command, or two operators' at once; faults on every SQS
 * and DynamoDB request the commands make; and the consumer taking what reaches the queue while
 * they run, or only afterwards.
 */
export interface OperatorSchedule {
  messages: { group: number; past: boolean }[];
  steps: OperatorCommand[][];
  faults: FaultProfile;
  consumerRunning: boolean;
}

/**
 * The rates of the operators' faults: none, light, heavy, a quarter of all answers lost, entries of
 * `SendMessageBatch` failed, or receipt handles gone stale (another receive got the message after
 * its visibility ran out) in deletes and visibility changes.
 */
const OPERATOR_FAULT_RATES: readonly FaultProfile['rates'][] = [
  {},
  { 'fail-before': 0.05, 'lose-answer': 0.05, throttle: 0.02 },
  { 'fail-before': 0.12, 'lose-answer': 0.12, throttle: 0.05, delay: 0.05 },
  { 'lose-answer': 0.25 },
  { 'fail-entry': 0.3, 'lose-answer': 0.05 },
  { 'stale-handle': 0.3, 'lose-answer': 0.05 },
];

/** `arbitrary`'s values once in `1 + absentWeight` draws; `undefined` the rest of the time. */
function sometimes<T>(arbitrary: fc.Arbitrary<T>, absentWeight: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: absentWeight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });
}

function command(messageCount: number): fc.Arbitrary<OperatorCommand> {
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .record({
          group: sometimes(fc.integer({ min: 0, max: 2 }), 1),
          limit: sometimes(fc.integer({ min: 1, max: 6 }), 1),
          killAfter: sometimes(fc.integer({ min: 1, max: 12 }), 4),
        })
        .map(
          ({ group, limit, killAfter }): OperatorCommand => ({
            kind: 'redrive',
            ...(group === undefined ? {} : { group }),
            ...(limit === undefined ? {} : { limit }),
            ...(killAfter === undefined ? {} : { killAfter }),
          }),
        ),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('discard' as const),
        indexes: fc.uniqueArray(fc.integer({ min: 0, max: messageCount - 1 }), {
          minLength: 1,
          maxLength: 3,
        }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'list' as const }) },
  );
}

export const operatorScheduleArbitrary: fc.Arbitrary<OperatorSchedule> = fc
  .array(
    fc.record({ group: fc.integer({ min: 0, max: 2 }), past: fc.constantFrom(false, false, false, true) }),
    { minLength: 1, maxLength: 8 },
  )
  .chain((messages) =>
    fc.record({
      messages: fc.constant(messages),
      steps: fc.array(fc.array(command(messages.length), { minLength: 1, maxLength: 2 }), {
        minLength: 1,
        maxLength: 3,
      }),
      faults: fc.record({
        seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        rates: fc.constantFrom(...OPERATOR_FAULT_RATES),
      }),
      consumerRunning: fc.boolean(),
    }),
  );
