import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHAOS_TYPES,
  type ChaosEffects,
  type ChaosPayload,
  chaosOperations,
} from '../../chaos/chaos-operations.js';
import { checkSchedules } from '../../chaos/check-schedules.js';
import { checkInvariants } from '../../chaos/invariants.js';
import { runSchedule } from '../../chaos/run-schedule.js';
import type { Behaviour, OperationKind, Schedule, ScheduledMessage } from '../../chaos/schedule.js';
import { STANDARD_IN_FLIGHT_WAIT_MS, standardScheduleArbitrary } from '../../chaos/standard-schedule.js';
import { type ChaosWorld, openChaosWorld } from '../../harness/chaos-world.js';
import type { FaultPlan } from '../../harness/faults.js';
import type { ConsumerOperation } from '../../lambdas/consumer/index.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// Issue 32, item 5: `standardBatch` under generated fault schedules on a standard queue, with the
// FIFO schedules' world, proxies, ledger and invariants. `npm run chaos` runs 5,000; here a few dozen.

const emulators = () => ({
  dynamodb: emulatorEndpoint('dynamodbEndpoint'),
  sqs: emulatorEndpoint('sqsEndpoint'),
});

describe('standard-queue fault schedules', () => {
  it('lose nothing and take no effect twice over a few dozen schedules', { timeout: 240_000 }, async () => {
    const report = await checkSchedules({
      emulators: emulators(),
      arbitrary: standardScheduleArbitrary,
      schedules: 40,
      seed: 32,
      workers: 2,
    });
    expect(report.counterexample, JSON.stringify(report.counterexample)).toBeUndefined();
    expect(report.schedules).toBe(40);
    expect(report.violations).toBe(0);
    expect(report.unexplainedNeedlessInDoubt).toBe(0);
    // They met trouble: lost answers, crashes, and copies delivered to two invocations at once.
    expect(report.faults['lose-answer']).toBeGreaterThan(0);
    expect(report.crashes).toBeGreaterThan(0);
    expect(report.duplicatesDelivered['two-invocations']).toBeGreaterThan(0);
  });
});

let world: ChaosWorld;

beforeAll(async () => {
  world = await openChaosWorld(emulators());
});

afterAll(() => world.close());

/** A schedule's messages, each as `[group, operation, behaviour]`. */
const messagesOf = (...messages: [number, OperationKind, Behaviour][]): ScheduledMessage[] =>
  messages.map(([group, operation, behaviour]) => ({ group, operation, behaviour }));

/** One at-least-once message; a copy of it is delivered while its first delivery holds its key. */
const whileHeld = (inFlightWaitMs: number): Schedule => ({
  messages: [{ group: 0, operation: 'at-least-once', behaviour: 'ok' }],
  steps: [{ kind: 'deliver-while-held', hold: 'after-acquire' }],
  faults: { seed: 0, rates: {} },
  queueType: 'standard',
  inFlightWaitMs,
});

describe('a copy delivered while its original holds the key', () => {
  it('waits for it and is acknowledged as a duplicate, with inFlightWaitMs', async () => {
    const run = await runSchedule(world, whileHeld(STANDARD_IN_FLIGHT_WAIT_MS));
    expect(run.duplicatesDelivered['while-held']).toBe(1);
    expect(run.heldCopies).toEqual({ waited: 1, cameBack: 0 });
    expect(run.ledger.applied.get(run.keys[0] as string)).toBe(1);
    expect(checkInvariants(run).violations).toEqual([]);
  });

  it('is given back to come back soon, without', async () => {
    const run = await runSchedule(world, whileHeld(0));
    expect(run.heldCopies).toEqual({ waited: 0, cameBack: 1 });
    expect(run.metrics.get('RecordsInProgressElsewhere')).toBe(1);
    // The drain delivered it again, once its key was settled: a duplicate, not a second effect.
    expect(run.ledger.applied.get(run.keys[0] as string)).toBe(1);
    expect(checkInvariants(run).violations).toEqual([]);
  });
});

describe("the consumer's own SQS requests", () => {
  /** Every `ChangeMessageVisibilityBatch` and every send to the DLQ meets `kind`, during the steps. */
  const everyReturnAndDeadLetter =
    (kind: 'lose-answer' | 'fail-before'): FaultPlan =>
    ({ operation, body }) =>
      operation === 'ChangeMessageVisibilityBatch' ||
      (operation === 'SendMessage' && String(body.QueueUrl).includes('-dlq'))
        ? { kind }
        : undefined;

  it.each(['lose-answer', 'fail-before'] as const)(
    'every backoff and DLQ send meeting %s loses nothing and repeats no effect',
    async (kind) => {
      const schedule: Schedule = {
        messages: messagesOf(
          [0, 'transactional', 'poison'],
          [0, 'at-least-once', 'poison'],
          [1, 'at-most-once', 'fail-once'],
          [1, 'transactional', 'fail-once'],
        ),
        steps: [{ kind: 'deliver' }, { kind: 'expire-visibility' }, { kind: 'deliver' }],
        faults: { seed: 0, rates: {} },
        queueType: 'standard',
      };
      const run = await runSchedule(world, schedule, { extraFaults: everyReturnAndDeadLetter(kind) });
      expect(run.consumerSqsFaults[`ChangeMessageVisibilityBatch ${kind}`]).toBeGreaterThan(0);
      expect(run.consumerSqsFaults[`DLQ send ${kind}`]).toBeGreaterThan(0);
      expect(checkInvariants(run).violations).toEqual([]);
      // The poison records reached the DLQ once the faults were over; the others took effect once.
      expect(run.outcome.deadLetters.get(run.keys[0] as string)?.length).toBeGreaterThan(0);
      expect(run.outcome.deadLetters.get(run.keys[1] as string)?.length).toBeGreaterThan(0);
      expect(run.ledger.applied.get(run.keys[2] as string)).toBe(1);
      expect(run.outcome.records.get(run.keys[3] as string)?.status).toBe('COMPLETED');
    },
  );
});

describe('regressions: standard schedules that broke an invariant once', () => {
  it('a poison record whose invocation died between its DLQ send and the mark is sent again when it comes back: the stated residue (seed 101, path 91:25:9:2:2:15:10:10)', async () => {
    const schedule: Schedule = {
      messages: messagesOf(
        [2, 'transactional', 'ok'],
        [2, 'at-most-once', 'ok'],
        [2, 'at-most-once', 'poison'],
        [1, 'transactional', 'ok'],
        [2, 'at-least-once', 'ok'],
      ),
      steps: [
        { kind: 'deliver', crash: 'inside-effect' },
        { kind: 'deliver', crash: 'before-acquire' },
      ],
      faults: { seed: 467093859, rates: { 'lose-answer': 0.25 } },
      clockSkewsMs: [0],
      queueType: 'standard',
      inFlightWaitMs: STANDARD_IN_FLIGHT_WAIT_MS,
    };
    const run = await runSchedule(world, schedule);
    expect(checkInvariants(run).violations).toEqual([]);
    expect(run.outcome.deadLetters.get(run.keys[2] as string)?.length).toBeGreaterThan(0);
  });
});

describe('the checker', () => {
  /** The schedules' operations, but an at-least-once one that claims nothing: each copy takes effect. */
  const withoutIdempotency = (effects: ChaosEffects): Record<string, ConsumerOperation> => {
    const operations = chaosOperations(effects);
    const real = operations[CHAOS_TYPES['at-least-once']] as ConsumerOperation;
    operations[CHAOS_TYPES['at-least-once']] = {
      namespace: real.namespace,
      recordIdOf: (message) => real.recordIdOf(message),
      execute: async (message) => {
        const { key, group } = message.payload as ChaosPayload;
        effects.ledger.start(key);
        effects.ledger.apply(key, group);
        return 'executed';
      },
    };
    return operations;
  };

  it('catches a consumer whose concurrent copies both take effect', async () => {
    const schedule: Schedule = {
      messages: [{ group: 0, operation: 'at-least-once', behaviour: 'ok' }],
      steps: [{ kind: 'deliver-twice' }],
      faults: { seed: 0, rates: {} },
      queueType: 'standard',
    };
    const run = await runSchedule(world, schedule, { operations: withoutIdempotency });
    expect(run.ledger.applied.get(run.keys[0] as string)).toBe(2);
    expect(checkInvariants(run).violations.map(({ rule }) => rule)).toContain('effect-twice');
  });
});
