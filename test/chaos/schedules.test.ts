import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkSchedules } from '../../chaos/check-schedules.js';
import { checkInvariants } from '../../chaos/invariants.js';
import { runSchedule, type ScheduleRun } from '../../chaos/run-schedule.js';
import type { CrashPoint, Schedule } from '../../chaos/schedule.js';
import { CHAOS_MAX_ATTEMPTS } from '../../chaos/sdk-clients.js';
import { type ChaosWorld, openChaosWorld } from '../../harness/chaos-world.js';
import type { ChaosRequest, FaultPlan } from '../../harness/faults.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';
import { PAST_DEDUP_HORIZON } from '../../lambdas/common/dedup-horizon.js';
import { commitSeed } from '../support/commit-seed.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// DESIGN §11 under generated fault schedules: the real publisher, consumer middleware and
// idempotency core on DynamoDB Local and the SQS emulator, behind fault proxies. `npm run chaos`
// runs ≥ 10,000 of these; here a few hundred, then the schedules that once broke something.

const emulators = () => ({
  dynamodb: emulatorEndpoint('dynamodbEndpoint'),
  sqs: emulatorEndpoint('sqsEndpoint'),
});

describe('generated fault schedules', () => {
  it('keep every invariant, per key, over a few hundred schedules', { timeout: 240_000 }, async () => {
    const report = await checkSchedules({
      emulators: emulators(),
      schedules: 250,
      seed: commitSeed(),
      workers: 4,
    });
    expect(report.counterexample, JSON.stringify(report.counterexample)).toBeUndefined();
    expect(report.schedules).toBe(250);
    expect(report.violations).toBe(0);
    expect(report.unexplainedNeedlessInDoubt).toBe(0);
    // The schedules did meet trouble: faults of every seeded kind, and crashes.
    expect(report.faults['fail-before']).toBeGreaterThan(0);
    expect(report.faults['lose-answer']).toBeGreaterThan(0);
    expect(report.faults.throttle).toBeGreaterThan(0);
    expect(report.crashes).toBeGreaterThan(0);
    // Publishes whose first request lost answers, whose re-send rounds met each fault, repeated.
    for (const kind of [
      'first lose-answer',
      'first fail-entry-lose-answer',
      'later fail-entry',
      'later ok',
    ]) {
      expect(report.publishRounds[kind], kind).toBeGreaterThan(0);
    }
    expect(
      report.publishRounds['later lose-answer'] + report.publishRounds['later die-after-publish'],
    ).toBeGreaterThan(0);
    expect(report.publishRounds['repeat after'] + report.publishRounds['repeat concurrent']).toBeGreaterThan(
      0,
    );
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
  it('a message the first response called unknown is never ended failed by a round that failed it (issue 30, item 1)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 0, operation: 'transactional', behaviour: 'ok' },
        { group: 0, operation: 'at-least-once', behaviour: 'ok' },
        { group: 1, operation: 'transactional', behaviour: 'ok' },
      ],
      steps: [{ kind: 'deliver' }],
      faults: { seed: 0, rates: {} },
      publishRounds: { group: 0, first: 'lose-answer', later: 'fail-entry' },
    };
    const run = await runSchedule(world, schedule);
    // m0 and m2 were in the first call that lost its answer (one message of a group per call: m1
    // waited behind m0); each round then failed m0.
    const [m0, m1, m2] = run.keys as [string, string, string];
    expect([...(run.publication.reportedUnknown[0] ?? [])].sort()).toEqual([m0, m2].sort());
    expect(run.publication.finals[0]?.get(m0)).toBe('unknown');
    expect(run.publication.finals[0]?.get(m1)).toBe('blocked');
    expect(checkInvariants(run).violations).toEqual([]);
  });

  it('a message a failed round may have sent is never answered blocked (issue 42, item 1; seed 618308442, path 7:10:0:0:0:0:0:0:0:1:1:1)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 0, operation: 'transactional', behaviour: 'ok' },
        { group: 1, operation: 'at-least-once', behaviour: 'unknown-once' },
        { group: 0, operation: 'at-most-once', behaviour: 'ok' },
        { group: 0, operation: 'transactional', behaviour: 'ok' },
      ],
      steps: [{ kind: 'deliver' }],
      faults: { seed: 0, rates: {} },
      clockSkewsMs: [0],
      publishRounds: { group: 0, first: 'lose-answer', later: 'die-after-publish' },
    };
    const run = await runSchedule(world, schedule);
    // The round sent m2 and m3 behind m0, then died on every try: the client said blocked.
    const [, , m2, m3] = run.keys as string[];
    expect(run.publication.finals[0]?.get(m2 as string)).toBe('unknown');
    expect(run.publication.finals[0]?.get(m3 as string)).toBe('unknown');
    expect(run.received.has(m3 as string)).toBe(true);
    expect(checkInvariants(run).violations).toEqual([]);
  });

  it('messages the publish refused are in order as the producer republishes them (CI, seed 304056833, path 36:26:0:5:5:6:6:6:6:6:6:6:7:7)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 0, operation: 'at-least-once', behaviour: 'ok' },
        { group: 0, operation: 'at-least-once', behaviour: 'fail-once' },
        { group: 2, operation: 'at-least-once', behaviour: 'ok' },
        { group: 1, operation: 'at-least-once', behaviour: 'ok' },
        { group: 2, operation: 'at-most-once', behaviour: 'ok' },
        { group: 0, operation: 'at-most-once', behaviour: 'ok' },
      ],
      steps: [{ kind: 'republish', index: 5 }, { kind: 'republish', index: 1 }, { kind: 'deliver' }],
      faults: { seed: 0, rates: {} },
      clockSkewsMs: [0],
      publishRounds: { group: 0, first: 'lose-answer', later: 'lose-answer' },
    };
    const run = await runSchedule(world, schedule);
    // The publish sent m0, its answers lost: m0 `unknown`, m1 and m5 `blocked` behind it. The
    // producer then published m5 before m1, and the queue holds them in that order.
    const [m0, m1, , , , m5] = run.keys as string[];
    expect([m1, m5].map((key) => run.publication.finals[0]?.get(key as string))).toEqual([
      'blocked',
      'blocked',
    ]);
    expect(run.ledger.orderByGroup.get(`${run.id}-g0`)).toEqual([m0, m5, m1]);
    expect(checkInvariants(run).violations).toEqual([]);
  });

  it('a batch that fails while an at-most-once effect runs starts no next lease (issue 26, finding 3; found with seed 1869718703, path 46:27:3:4)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 0, operation: 'at-most-once', behaviour: 'ok' },
        { group: 0, operation: 'at-most-once', behaviour: 'ok' },
        { group: 0, operation: 'at-most-once', behaviour: 'ok' },
      ],
      steps: [{ kind: 'deliver-abort' }],
      faults: { seed: 0, rates: {} },
    };
    const run = await runSchedule(world, schedule);
    // m0's effect ran while the batch failed, and the give-back of m1's lease failed.
    expect(run.ledger.applied.get(run.keys[0] as string)).toBe(1);
    const verdict = checkInvariants(run);
    expect(verdict.violations).toEqual([]);
    expect(verdict.needlessInDoubt).toBe(0);
    expect(run.outcome.records.get(run.keys[1] as string)?.status).toBe('COMPLETED');
  });

  it('a copy right behind its original is acknowledged with it (issue 26, finding 4; seed 1869718704, path 35:9:0:1)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 0, operation: 'at-least-once', behaviour: 'ok' },
        { group: 2, operation: 'transactional', behaviour: 'ok' },
        { group: 2, operation: 'transactional', behaviour: 'ok' },
      ],
      steps: [{ kind: 'deliver-copy' }],
      faults: { seed: 0, rates: heavy },
    };
    const run = await runSchedule(world, schedule);
    expect(run.copiesBehind).toEqual([{ key: run.keys[0], original: true, copy: true }]);
    expect(checkInvariants(run).violations).toEqual([]);
  });

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

  it('a copy behind its original, both past the horizon, may fail when its DLQ send fails (seed 260645437, path 371:52:16:18:22:29:7:21:2:18)', async () => {
    const schedule: Schedule = {
      messages: [{ group: 0, operation: 'transactional', behaviour: 'ok' }],
      steps: [{ kind: 'clock-jump', past: 'ttl' }, { kind: 'deliver-copy' }, { kind: 'deliver' }],
      faults: { seed: 2, rates: {} },
    };
    // Every try of the copy's send to the DLQ (the second deduplication id seen there) in its first
    // delivery fails before it is applied: the original goes to the DLQ, the copy fails and comes
    // back. Its 3 sends (attributes dropped in turn) × CHAOS_MAX_ATTEMPTS tries, then it gets through.
    const toTheDlq = (request: ChaosRequest) =>
      request.operation === 'SendMessage' && String(request.body.QueueUrl).includes('-dlq');
    const dedupIds: string[] = [];
    let failed = 0;
    const extraFaults: FaultPlan = (request) => {
      if (!toTheDlq(request)) return undefined;
      const dedupId = String(request.body.MessageDeduplicationId);
      if (!dedupIds.includes(dedupId)) dedupIds.push(dedupId);
      if (dedupId !== dedupIds[1] || failed >= 3 * CHAOS_MAX_ATTEMPTS) return undefined;
      failed++;
      return { kind: 'fail-before' };
    };
    const run = await runSchedule(world, schedule, { extraFaults });
    const [key] = run.keys as [string];
    expect(run.copiesBehind).toEqual([{ key, original: true, copy: false }]);
    expect(run.outcome.deadLetters.get(key)?.[0]).toBe(PAST_DEDUP_HORIZON);
    expect(checkInvariants(run).violations).toEqual([]);
  });
});

describe('a late re-publication, dead-lettered and redriven after its key’s record expired (DESIGN §2)', () => {
  it.each(['transactional', 'at-most-once', 'at-least-once'] as const)(
    '%s: the copy is a duplicate, its effect applied once',
    async (operation) => {
      const schedule: Schedule = {
        messages: [{ group: 0, operation, behaviour: 'ok' }],
        steps: [{ kind: 'deliver' }, { kind: 'late-republication', index: 0 }],
        faults: { seed: 5, rates: {} },
      };
      const run = await runSchedule(world, schedule);
      const [key] = run.keys as [string];
      expect(checkInvariants(run).violations).toEqual([]);
      // The copy went the whole way: given back, dead-lettered, redriven, received again.
      const applied =
        operation === 'transactional'
          ? run.outcome.transactionalOrder.get(`${run.id}-g0`)?.filter((applied) => applied === key).length
          : run.ledger.applied.get(key);
      expect(applied).toBe(1);
      expect(run.outcome.records.get(key)?.status).toBe('COMPLETED');
      expect(run.outcome.deadLetters.get(key) ?? []).toEqual([]);
    },
  );

  it('behind an original still in flight, its consumer sees it once visibility ran out (seed 45183995, path 11:7:2:2:2:2)', async () => {
    const schedule: Schedule = {
      messages: [{ group: 1, operation: 'at-least-once', behaviour: 'ok' }],
      steps: [
        { kind: 'deliver', crash: 'before-ack' },
        { kind: 'late-republication', index: 0 },
      ],
      faults: { seed: 0, rates: {} },
    };
    const run = await runSchedule(world, schedule);
    expect(checkInvariants(run).violations).toEqual([]);
    expect(run.ledger.applied.get(run.keys[0] as string)).toBe(1);
  });

  it('whose record could not be kept (every try of the write failed), redriven after the record expired, may take effect again: the stated residue (seed 1683853265, path 258:26:35:35:35:35)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 0, operation: 'at-most-once', behaviour: 'ok' },
        { group: 1, operation: 'transactional', behaviour: 'ok' },
        { group: 2, operation: 'transactional', behaviour: 'unknown-once' },
        { group: 1, operation: 'at-least-once', behaviour: 'ok' },
        { group: 1, operation: 'at-least-once', behaviour: 'ok' },
        { group: 1, operation: 'transactional', behaviour: 'ok' },
      ],
      steps: [{ kind: 'deliver' }, { kind: 'late-republication', index: 4 }, { kind: 'deliver' }],
      // Faults are drawn per request: when the acquire's first write became a PutItem, the draws
      // moved, and this seed is the first after the old one (338433675) that leads here again.
      faults: { seed: 338433711, rates: heavy },
      clockSkewsMs: [0],
    };
    const run = await runSchedule(world, schedule);
    const key = run.keys[4] as string;
    // The copy's only delivery could not extend m4's record, and SQS dead-lettered it: redriven
    // after that record expired, it found none and ran again. The alarm is RecordLivesNotExtended.
    expect(run.recordsNotKept).toEqual(new Set([key]));
    expect(run.ledger.applied.get(key)).toBe(2);
    expect(checkInvariants(run).violations).toEqual([]);
  });

  it('a second, once its key’s record expired, is a new message, not generated as a repeat (seed 34106888, path 2:18:0:1:2:5:2:2)', async () => {
    const schedule: Schedule = {
      messages: [
        { group: 2, operation: 'at-most-once', behaviour: 'ok' },
        { group: 2, operation: 'transactional', behaviour: 'ok' },
      ],
      steps: [
        { kind: 'late-republication', index: 0 },
        { kind: 'late-republication', index: 0 },
        { kind: 'deliver' },
      ],
      faults: { seed: 0, rates: {} },
    };
    const run = await runSchedule(world, schedule);
    expect(checkInvariants(run).violations).toEqual([]);
    expect(run.ledger.applied.get(run.keys[0] as string)).toBe(1);
  });
});

describe('leases taken ahead of their turn: a crash at each new step', () => {
  /** Three messages of one group; the batch's first record is the crash target, the second its `next`. */
  const oneGroup = (operation: 'at-most-once' | 'at-least-once', crash: CrashPoint): Schedule => ({
    messages: Array.from({ length: 3 }, () => ({ group: 0, operation, behaviour: 'ok' as const })),
    steps: [{ kind: 'deliver', crash }],
    faults: { seed: 3, rates: {} },
  });
  const statusOf = (run: ScheduleRun, index: number) =>
    run.outcome.records.get(run.keys[index] as string)?.status;

  it('dying right after the next lease was taken ahead parks no lease whose effect never started', async () => {
    const run = await runSchedule(world, oneGroup('at-most-once', 'after-ahead-acquire'));
    const verdict = checkInvariants(run);
    expect(run.crashed.get(run.keys[0] as string)).toContain('after-ahead-acquire');
    expect(verdict.violations).toEqual([]);
    // The leases taken ahead were never marked started: taken over after they expired, and run.
    expect([statusOf(run, 1), statusOf(run, 2)]).toEqual(['COMPLETED', 'COMPLETED']);
  });

  it('dying between a completion and the next effect parks only the lease marked started, explained by the crash', async () => {
    const run = await runSchedule(world, oneGroup('at-most-once', 'after-start-mark'));
    const verdict = checkInvariants(run);
    expect(run.crashed.get(run.keys[0] as string)).toContain('after-start-mark');
    expect(verdict.violations).toEqual([]);
    expect(verdict.unexplainedNeedlessInDoubt).toBe(0);
    // The first record is done; the second was marked started in the same write, so it is in doubt;
    // the third's lease was never marked, and runs once its lease expired.
    expect([statusOf(run, 0), statusOf(run, 1), statusOf(run, 2)]).toEqual([
      'COMPLETED',
      'IN_DOUBT',
      'COMPLETED',
    ]);
    expect(verdict.needlessInDoubt).toBe(1);
  });

  it('dying inside the first effect parks it alone: the leases after it are read back to unstarted and run', async () => {
    const run = await runSchedule(world, oneGroup('at-most-once', 'inside-effect'));
    const verdict = checkInvariants(run);
    expect(run.crashed.get(run.keys[0] as string)).toContain('inside-effect');
    expect(verdict.violations).toEqual([]);
    expect(verdict.needlessInDoubt).toBe(0);
    expect([statusOf(run, 0), statusOf(run, 1), statusOf(run, 2)]).toEqual([
      'IN_DOUBT',
      'COMPLETED',
      'COMPLETED',
    ]);
  });

  it('dying after a completion keeps every invariant, at-least-once too', async () => {
    for (const operation of ['at-most-once', 'at-least-once'] as const) {
      const run = await runSchedule(world, oneGroup(operation, 'after-completion'));
      expect(run.crashed.get(run.keys[0] as string)).toContain('after-completion');
      expect(checkInvariants(run).violations).toEqual([]);
      expect([0, 1, 2].map((index) => statusOf(run, index))).not.toContain(undefined);
    }
  });

  it('under heavy faults, with the new steps’ crashes, a mixed group keeps every invariant', async () => {
    for (const crash of ['after-ahead-acquire', 'after-start-mark', 'after-completion'] as const) {
      const schedule: Schedule = {
        messages: [
          { group: 0, operation: 'at-most-once', behaviour: 'ok' },
          { group: 0, operation: 'at-least-once', behaviour: 'ok' },
          { group: 0, operation: 'at-most-once', behaviour: 'fail-once' },
          { group: 0, operation: 'transactional', behaviour: 'ok' },
          { group: 0, operation: 'at-most-once', behaviour: 'ok' },
        ],
        steps: [{ kind: 'deliver', crash }, { kind: 'expire-visibility' }, { kind: 'deliver' }],
        faults: { seed: 7, rates: heavy },
      };
      const verdict = checkInvariants(await runSchedule(world, schedule));
      expect(verdict.violations).toEqual([]);
    }
  });
});
