import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type ChaosWorld, openChaosWorld } from '../../chaos/chaos-world.js';
import { checkSchedules } from '../../chaos/check-schedules.js';
import type { ChaosRequest } from '../../chaos/faults.js';
import { checkInvariants } from '../../chaos/invariants.js';
import { runSchedule } from '../../chaos/run-schedule.js';
import type { Schedule } from '../../chaos/schedule.js';
import { targetedFaultPlan } from '../../chaos/targeted-plan.js';
import { PAST_DEDUP_HORIZON } from '../../src/common/dedup-horizon.js';

// DESIGN §11 under generated fault schedules: the real publisher, consumer middleware and
// idempotency core on DynamoDB Local and the SQS emulator, behind fault proxies. `npm run chaos`
// runs ≥ 10,000 of these; here a few hundred, then the schedules that once broke something.

const emulators = () => ({ dynamodb: inject('dynamodbEndpoint'), sqs: inject('sqsEndpoint') });

describe('generated fault schedules', () => {
  it('keep every invariant, per key, over a few hundred schedules', { timeout: 240_000 }, async () => {
    const report = await checkSchedules({ emulators: emulators(), schedules: 250, workers: 4 });
    expect(report.counterexample, JSON.stringify(report.counterexample)).toBeUndefined();
    expect(report.schedules).toBe(250);
    expect(report.violations).toBe(0);
    expect(report.unexplainedNeedlessInDoubt).toBe(0);
    // The schedules did meet trouble: faults of every seeded kind, and crashes.
    expect(report.faults['fail-before']).toBeGreaterThan(0);
    expect(report.faults['lose-answer']).toBeGreaterThan(0);
    expect(report.faults.throttle).toBeGreaterThan(0);
    expect(report.crashes).toBeGreaterThan(0);
  });
});

let world: ChaosWorld;

beforeAll(async () => {
  world = await openChaosWorld(emulators());
});

afterAll(() => world.close());

const heavy = { 'fail-before': 0.12, 'lose-answer': 0.12, throttle: 0.05, delay: 0.05 };

/** Requests that write a record IN_DOUBT, whichever way in (after the effect, or parking an expired lease). */
const writesInDoubt = (request: ChaosRequest) =>
  request.operation === 'UpdateItem' && JSON.stringify(request.body).includes('"IN_DOUBT"');

describe('regressions: schedules that broke an invariant once', () => {
  it('an acquire whose every try failed gives its lease back: no needless IN_DOUBT (seed 9, path 9:14)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 1, operation: 'at-most-once', behaviour: 'ok' },
        { group: 2, operation: 'at-most-once', behaviour: 'ok' },
      ],
      steps: [{ kind: 'deliver' }],
      faults: { seed: 25, rates: heavy },
    };
    const giveBacks = () => world.dynamodbProxy.stats().requests.DeleteItem ?? 0;
    const before = giveBacks();
    const verdict = checkInvariants(await runSchedule(world, schedule));
    // The seed still meets the trouble it was found with: an acquire that failed for good, given back.
    expect(giveBacks()).toBeGreaterThan(before);
    expect(verdict.violations).toEqual([]);
    expect(verdict.needlessInDoubt).toBe(0);
  });

  it('an acquire that failed for good, in a batch that then crashes, parks nothing needlessly (seed 1529517858, path 1428:14:2:34)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 1, operation: 'at-most-once', behaviour: 'ok' },
        { group: 1, operation: 'transactional', behaviour: 'ok' },
        { group: 1, operation: 'at-least-once', behaviour: 'poison' },
      ],
      steps: [{ kind: 'deliver', crash: 'before-record' }, { kind: 'deliver' }],
      faults: { seed: 1592275590, rates: heavy },
    };
    const verdict = checkInvariants(await runSchedule(world, schedule));
    expect(verdict.violations).toEqual([]);
    expect(verdict.unexplainedNeedlessInDoubt).toBe(0);
  });

  it('an IN_DOUBT write that keeps failing never acknowledges the message (issue: 10 of 120 lost)', async () => {
    const schedule: Schedule = {
      messages: Array.from({ length: 6 }, (_, index) => ({
        group: index % 3,
        operation: 'at-most-once' as const,
        behaviour: 'unknown-once' as const,
      })),
      steps: [{ kind: 'deliver' }, { kind: 'expire-visibility' }, { kind: 'deliver' }],
      faults: { seed: 1, rates: {} },
    };
    // Every try of the first IN_DOUBT write fails before it is applied, for the whole of the steps.
    const extraFaults = targetedFaultPlan({ match: writesInDoubt, fault: { kind: 'fail-before' } });
    const run = await runSchedule(world, schedule, { extraFaults });
    const verdict = checkInvariants(run);
    expect(verdict.violations).toEqual([]);
    expect([...run.outcome.records.values()].filter((record) => record.status === 'IN_DOUBT')).toHaveLength(
      6,
    );
  });

  it('a quarter of all writes failing, before or after being applied, parks nothing needlessly', async () => {
    const schedule: Schedule = {
      messages: Array.from({ length: 6 }, (_, index) => ({
        group: index % 3,
        operation: 'at-most-once' as const,
        behaviour: 'ok' as const,
      })),
      steps: [{ kind: 'deliver' }, { kind: 'deliver' }, { kind: 'expire-visibility' }, { kind: 'deliver' }],
      faults: { seed: 4, rates: { 'fail-before': 0.125, 'lose-answer': 0.125 } },
    };
    const verdict = checkInvariants(await runSchedule(world, schedule));
    expect(verdict.violations).toEqual([]);
    expect(verdict.needlessInDoubt).toBe(0);
  });

  it('a ledger event that comes back after its record expired is dead-lettered, never applied again', async () => {
    const schedule: Schedule = {
      messages: [{ group: 0, operation: 'transactional', behaviour: 'ok' }],
      steps: [
        { kind: 'deliver' },
        { kind: 'clock-jump', past: 'ttl' },
        { kind: 'resend-after-window', index: 0 },
      ],
      faults: { seed: 2, rates: {} },
    };
    const run = await runSchedule(world, schedule);
    const [key] = run.keys;
    expect(checkInvariants(run).violations).toEqual([]);
    expect(run.outcome.transactionalOrder.get(`${run.id}-g0`)).toEqual([key]);
    // The copy was published before the jump, so it is past the horizon: to the DLQ, with its reason.
    expect(run.outcome.deadLetters.get(key as string)).toEqual([PAST_DEDUP_HORIZON]);
  });
});
