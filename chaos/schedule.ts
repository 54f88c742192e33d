import fc from 'fast-check';
import type { SeededFaultKind } from '../harness/seeded-plan.js';

/**
 * One generated scenario for the fault schedules (issue: reliability): a small workload, the steps
 * that deliver it with everything that can go wrong between them, and the faults the proxies inject.
 */

/** How a message's operation makes its effect idempotent (DESIGN §4). */
export type OperationKind = 'transactional' | 'at-most-once' | 'at-least-once';

/**
 * What the message's effect does when run: succeed; fail retryably on its first run (before any
 * effect); be refused for good (poison); or apply its effect and then lose the answer on its first
 * run (an `OutcomeUnknownError`, as a timeout after the request went out).
 */
export type Behaviour = 'ok' | 'fail-once' | 'poison' | 'unknown-once';

export interface ScheduledMessage {
  group: number;
  operation: OperationKind;
  behaviour: Behaviour;
}

/**
 * Where a consumer invocation dies (DESIGN §11); `before-ack` dies after its response, before the
 * delete. The batch's first record is the target; `after-ahead-acquire` and `after-start-mark` are
 * about the next record of its group, whose lease was taken ahead: right after that lease was taken,
 * and right after the write that lets its effect start (alone, or with the target's completion).
 */
export type CrashPoint =
  | 'before-acquire'
  | 'after-acquire'
  | 'after-ahead-acquire'
  | 'inside-effect'
  | 'before-record'
  | 'after-completion'
  | 'after-start-mark'
  | 'before-ack';

/** What a crash did to a record: its own point, or `in-flight` for the other records of the dying invocation. */
export type CrashMark = CrashPoint | 'in-flight';

export const CRASH_POINTS: readonly CrashPoint[] = [
  'before-acquire',
  'after-acquire',
  'after-ahead-acquire',
  'inside-effect',
  'before-record',
  'after-completion',
  'after-start-mark',
  'before-ack',
];

export type Step =
  /** One consumer invocation with a batch from the queue; it may crash at a point, on its first record. */
  | { kind: 'deliver'; crash?: CrashPoint }
  /** Two invocations with the same batch at once. */
  | { kind: 'deliver-twice' }
  /**
   * One invocation whose batch fails as a whole while its first at-most-once effect runs (another
   * group's request throttled); DynamoDB then refuses every request but that record's own.
   */
  | { kind: 'deliver-abort' }
  /** One invocation whose batch holds a copy of its first record right behind it (a re-send after SQS's window). */
  | { kind: 'deliver-copy' }
  /** Messages in flight become visible again (their visibility timeout ran out). */
  | { kind: 'expire-visibility' }
  /** The producer publishes message `index` again (the same key; SQS deduplicates within 5 minutes). */
  | { kind: 'republish'; index: number }
  /** Message `index` arrives again after SQS's 5-minute window (same envelope, new deduplication id). */
  | { kind: 'resend-after-window'; index: number }
  /**
   * Message `index` is published again half the records' TTL later, with a fresh `publishedAt`,
   * behind a new record of its group that fails once; one delivery; SQS dead-letters what that
   * delivery gave back, as after its last allowed receive; once the key's first record has expired
   * (the copy still inside its own horizon), the DLQ is redriven (DESIGN §2).
   */
  | { kind: 'late-republication'; index: number }
  /** The DLQ's messages are moved back to the queue. */
  | { kind: 'redrive' }
  /** The clock jumps past every lease, or past the records' TTL. */
  | { kind: 'clock-jump'; past: 'lease' | 'ttl' }
  /**
   * A standard queue's redelivery while the original is in flight: one invocation stops at `hold`
   * on its batch's first record that gets there (its lease taken, or its effect applied and not yet
   * recorded); SQS delivers a copy of that message to another container, whose invocation finds the
   * key held; the first goes on once the second's claim of the key has been answered.
   */
  | { kind: 'deliver-while-held'; hold: HoldPoint };

/** Where the first invocation of a `deliver-while-held` step stops, its key held. */
export type HoldPoint = 'after-acquire' | 'before-record';

export interface FaultProfile {
  seed: number;
  rates: Partial<Record<SeededFaultKind, number>>;
}

/**
 * The schedule's publish as rounds (issue 30, item 1; issue 42): its first request's calls with a
 * message of `group` reach SQS and lose their answers (`lose-answer`: those end `unknown`), or SQS
 * fails that message's entry, accepts the call's others, and the answer is lost
 * (`fail-entry-lose-answer`: two faults at once). The client's re-send rounds then go through
 * (`ok`), have SQS fail each call's first entry on every try (`fail-entry`), lose every answer
 * (`lose-answer`), or publish and die before answering, every try (`die-after-publish`: a round that
 * fails after its retries, as through a brownout of the completion write). With `repeat`, a second
 * publish of the same messages under the same requestId follows the first (`after`) or runs
 * alongside it (`concurrent`).
 */
export interface PublishRounds {
  group: number;
  first: 'lose-answer' | 'fail-entry-lose-answer';
  later: 'ok' | 'fail-entry' | 'lose-answer' | 'die-after-publish';
  repeat?: 'after' | 'concurrent';
}

export interface Schedule {
  messages: ScheduledMessage[];
  steps: Step[];
  faults: FaultProfile;
  /** Round faults for the publish; none when absent. */
  publishRounds?: PublishRounds;
  /**
   * Each consumer container's clock, ahead (+) or behind (−) the schedule's, in ms: the k-th
   * container takes entry k, cycling. Without it, all share one clock.
   */
  clockSkewsMs?: number[];
  /** A standard (fair) queue consumed by `standardBatch`; FIFO and `fifoBatch` when absent. */
  queueType?: 'standard';
  /** The standard consumer's `inFlightWaitMs` (0: a copy whose key is held comes back soon). */
  inFlightWaitMs?: number;
}

/**
 * How far a consumer's clock is off, at most (DESIGN §11): two consumers then differ by less than
 * the lease's `leaseMarginMs` (2 s), the skew a lease tolerates.
 */
export const CONSUMER_CLOCK_SKEW_MS = 900;

const FAULT_RATES: readonly FaultProfile['rates'][] = [
  {},
  { 'fail-before': 0.05, 'lose-answer': 0.05, throttle: 0.02 },
  { 'fail-before': 0.12, 'lose-answer': 0.12, throttle: 0.05, delay: 0.05 },
  { 'lose-answer': 0.25 },
];

const scheduledMessage: fc.Arbitrary<ScheduledMessage> = fc.record({
  group: fc.integer({ min: 0, max: 2 }),
  operation: fc.constantFrom<OperationKind>('transactional', 'at-most-once', 'at-least-once'),
  behaviour: fc.oneof(
    { weight: 6, arbitrary: fc.constant<Behaviour>('ok') },
    { weight: 1, arbitrary: fc.constantFrom<Behaviour>('fail-once', 'poison', 'unknown-once') },
  ),
});

/** The steps both queue types' schedules draw from, each with `messageCount` messages to name. */
export function stepArbitraries(messageCount: number, crashPoints: readonly CrashPoint[]) {
  const index = fc.integer({ min: 0, max: messageCount - 1 });
  return {
    deliver: fc.record({ kind: fc.constant('deliver' as const) }),
    crash: fc.record({ kind: fc.constant('deliver' as const), crash: fc.constantFrom(...crashPoints) }),
    twice: fc.record({ kind: fc.constant('deliver-twice' as const) }),
    copy: fc.record({ kind: fc.constant('deliver-copy' as const) }),
    expire: fc.record({ kind: fc.constant('expire-visibility' as const) }),
    republish: fc.record({ kind: fc.constant('republish' as const), index }),
    resend: fc.record({ kind: fc.constant('resend-after-window' as const), index }),
    redrive: fc.record({ kind: fc.constant('redrive' as const) }),
    clockJump: fc.record({
      kind: fc.constant('clock-jump' as const),
      past: fc.oneof(
        { weight: 4, arbitrary: fc.constant('lease' as const) },
        { weight: 1, arbitrary: fc.constant('ttl' as const) },
      ),
    }),
  } satisfies Record<string, fc.Arbitrary<Step>>;
}

function step(messageCount: number): fc.Arbitrary<Step> {
  const steps = stepArbitraries(messageCount, CRASH_POINTS);
  const index = fc.integer({ min: 0, max: messageCount - 1 });
  return fc.oneof(
    { weight: 6, arbitrary: steps.deliver },
    { weight: 3, arbitrary: steps.crash },
    { weight: 1, arbitrary: steps.twice },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('deliver-abort' as const) }) },
    { weight: 1, arbitrary: steps.copy },
    { weight: 2, arbitrary: steps.expire },
    { weight: 1, arbitrary: steps.republish },
    { weight: 1, arbitrary: steps.resend },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('late-republication' as const), index }) },
    { weight: 1, arbitrary: steps.redrive },
    { weight: 2, arbitrary: steps.clockJump },
  );
}

const publishRounds: fc.Arbitrary<PublishRounds> = fc.record(
  {
    group: fc.integer({ min: 0, max: 2 }),
    first: fc.constantFrom<PublishRounds['first']>('lose-answer', 'fail-entry-lose-answer'),
    later: fc.constantFrom<PublishRounds['later']>('ok', 'fail-entry', 'lose-answer', 'die-after-publish'),
    repeat: fc.constantFrom<PublishRounds['repeat']>('after', 'concurrent'),
  },
  { requiredKeys: ['group', 'first', 'later'] },
);

/**
 * Schedules of 1–6 messages in up to 3 groups, 1–8 steps drawn by `stepOf` (given the number of
 * messages), one of a few fault profiles, the consumers' clocks, and `rest`, the queue type's own.
 */
export function schedulesOf<R extends Partial<Schedule>>(
  stepOf: (messageCount: number) => fc.Arbitrary<Step>,
  rest: { [K in keyof R]: fc.Arbitrary<R[K]> },
): fc.Arbitrary<Schedule & R> {
  return fc.array(scheduledMessage, { minLength: 1, maxLength: 6 }).chain(
    (messages) =>
      fc.record({
        messages: fc.constant(messages),
        steps: fc.array(stepOf(messages.length), { minLength: 1, maxLength: 8 }),
        faults: fc.record({
          seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
          rates: fc.constantFrom(...FAULT_RATES),
        }),
        clockSkewsMs: fc.array(fc.integer({ min: -CONSUMER_CLOCK_SKEW_MS, max: CONSUMER_CLOCK_SKEW_MS }), {
          minLength: 1,
          maxLength: 3,
        }),
        ...rest,
      }) as fc.Arbitrary<Schedule & R>,
  );
}

/** The FIFO schedules, some with round faults for the publish. */
export const scheduleArbitrary: fc.Arbitrary<Schedule> = schedulesOf(step, {
  publishRounds: fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: publishRounds },
  ),
});
