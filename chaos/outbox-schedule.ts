import fc from 'fast-check';
import type { SeededFaultKind } from '../harness/seeded-plan.js';

/**
 * One generated scenario for the outbox (DESIGN §9, issue 12 §5): a producer's writes through
 * `Outbox.write`, interleaved with relay invocations, sweeper runs and everything that can go wrong
 * between them, and the faults the proxies inject on DynamoDB and SQS requests meanwhile.
 */

/** Where a relay or sweeper invocation halts: after a claim came back, after a send, once a SENT mark applied. */
export type OutboxHaltPoint = 'after-claim' | 'after-send' | 'inside-mark';

export const OUTBOX_HALT_POINTS: readonly OutboxHaltPoint[] = ['after-claim', 'after-send', 'inside-mark'];

/** The `nth` time the invocation reaches `point` (its requests counted across all the groups it drains). */
export interface OutboxHalt {
  point: OutboxHaltPoint;
  nth: 1 | 2;
}

/**
 * A write whose first call commits and loses every answer; the producer's retry, with the same
 * token, comes within DynamoDB's 10-minute token window or past it (the token new to DynamoDB).
 */
export type LostWriteAnswer = 'within-window' | 'past-window';

export type OutboxStep =
  /** The producer's next write: one message per entry of `groups`; `canceled`: its business write is refused. */
  | { kind: 'write'; groups: number[]; canceled: boolean; lostAnswer?: LostWriteAnswer }
  /** One relay invocation with the next records of a stream shard; it may crash. */
  | { kind: 'relay'; shard: 0 | 1; crash?: OutboxHalt }
  /** Sweeper runs at once; the first may crash. */
  | { kind: 'sweep'; sweepers: 1 | 2 | 4; crash?: OutboxHalt }
  /** A relay invocation and a sweeper run at once. */
  | { kind: 'relay-and-sweep'; shard: 0 | 1 }
  /** A relay stalls at a point until its claims expired and a sweeper ran, then goes on. */
  | { kind: 'stall'; shard: 0 | 1; at: OutboxHalt }
  /** SQS refuses every send during the next `steps` steps. */
  | { kind: 'sqs-down'; steps: 1 | 2 | 3 }
  /** The clock jumps past every claim's lease. */
  | { kind: 'clock-jump' };

/** Faults on the BatchGetItem with which a retried write checks whether its earlier call committed. */
export type TokenCheckFaultKind = 'unprocessed-keys' | 'throttle';

export interface OutboxFaultProfile {
  seed: number;
  rates: Partial<Record<SeededFaultKind, number>>;
  /** Rates of the token check's own faults, on top of `rates`. */
  tokenCheck?: Partial<Record<TokenCheckFaultKind, number>>;
}

export interface OutboxSchedule {
  /** Starts with a write. */
  steps: OutboxStep[];
  faults: OutboxFaultProfile;
  /**
   * Each relay or sweeper invocation's clock, ahead (+) or behind (−) the schedule's, in ms: the
   * k-th invocation takes entry k, cycling. Without it, all share one clock.
   */
  clockSkewsMs?: number[];
}

/**
 * How far a relay's or sweeper's clock is off, at most (DESIGN §11): two of them then differ by
 * less than `CLAIM_MARGIN_MS` (10 s), the skew a claim tolerates.
 */
export const SENDER_CLOCK_SKEW_MS = 4_500;

/** Message groups a schedule spreads its messages over. */
export const OUTBOX_GROUPS = 3;

/**
 * `fail-entry`: SendMessageBatch answers that fail an entry and accept the later entries of its
 * group, which AWS's per-entry results allow (issue 26).
 */
const FAULT_RATES: readonly OutboxFaultProfile['rates'][] = [
  {},
  { 'fail-before': 0.05, 'lose-answer': 0.05, throttle: 0.02 },
  { 'fail-before': 0.1, 'lose-answer': 0.1, throttle: 0.03, delay: 0.05, 'fail-entry': 0.1 },
  { 'lose-answer': 0.25 },
  { 'fail-entry': 0.3 },
];

/**
 * Three profiles in four fault the token check, and two writes in seven retry past the window: 40
 * schedules meet `unprocessed-keys` in about 15 of them, so the test's "it met that trouble" holds
 * but for a chance under one in a million (it missed once, at one past-window write in fourteen).
 */
const TOKEN_CHECK_RATES: readonly NonNullable<OutboxFaultProfile['tokenCheck']>[] = [
  {},
  { 'unprocessed-keys': 0.5 },
  { 'unprocessed-keys': 0.9, throttle: 0.1 },
  { 'unprocessed-keys': 0.5, throttle: 0.5 },
];

const halt: fc.Arbitrary<OutboxHalt> = fc.record({
  point: fc.constantFrom(...OUTBOX_HALT_POINTS),
  nth: fc.constantFrom<1 | 2>(1, 2),
});

const shard = fc.constantFrom<0 | 1>(0, 1);

const write: fc.Arbitrary<OutboxStep> = fc.record({
  kind: fc.constant('write' as const),
  groups: fc.array(fc.integer({ min: 0, max: OUTBOX_GROUPS - 1 }), { minLength: 1, maxLength: 3 }),
  canceled: fc.oneof(
    { weight: 4, arbitrary: fc.constant(false) },
    { weight: 1, arbitrary: fc.constant(true) },
  ),
  lostAnswer: fc.oneof(
    { weight: 4, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: fc.constant<LostWriteAnswer>('within-window') },
    // Past the window is the likelier: only there does the token check run, with its own faults.
    { weight: 2, arbitrary: fc.constant<LostWriteAnswer>('past-window') },
  ),
});

const step: fc.Arbitrary<OutboxStep> = fc.oneof(
  { weight: 5, arbitrary: write },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('relay' as const), shard }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('relay' as const), shard, crash: halt }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('sweep' as const),
      sweepers: fc.constantFrom<1 | 2 | 4>(1, 2, 4),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('sweep' as const),
      sweepers: fc.constantFrom<1 | 2>(1, 2),
      crash: halt,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('relay-and-sweep' as const), shard }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('stall' as const), shard, at: halt }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('sqs-down' as const),
      steps: fc.constantFrom<1 | 2 | 3>(1, 2, 3),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clock-jump' as const) }) },
);

/** A write, then 1–14 steps, and one of a few fault profiles. */
export const outboxScheduleArbitrary: fc.Arbitrary<OutboxSchedule> = fc.record({
  steps: fc
    .tuple(write, fc.array(step, { minLength: 1, maxLength: 14 }))
    .map(([first, rest]) => [first, ...rest]),
  faults: fc.record({
    seed: fc.integer({ min: 0, max: 2 ** 31 - 1 }),
    rates: fc.constantFrom(...FAULT_RATES),
    tokenCheck: fc.constantFrom(...TOKEN_CHECK_RATES),
  }),
  clockSkewsMs: fc.array(fc.integer({ min: -SENDER_CLOCK_SKEW_MS, max: SENDER_CLOCK_SKEW_MS }), {
    minLength: 1,
    maxLength: 4,
  }),
});
