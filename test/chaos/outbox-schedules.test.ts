import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutboxSchedules } from '../../chaos/check-outbox-schedules.js';
import { checkOutboxInvariants } from '../../chaos/outbox-invariants.js';
import { runOutboxSchedule } from '../../chaos/outbox-run.js';
import type { OutboxSchedule } from '../../chaos/outbox-schedule.js';
import { startFaultProxy } from '../../harness/fault-proxy.js';
import { type OutboxWorld, openOutboxWorld } from '../../harness/outbox-world.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';
import { commitSeed } from '../support/commit-seed.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// DESIGN §9 under generated fault schedules (issue 12 §5): the real Outbox.write, relay and sweeper
// on DynamoDB Local and the SQS emulator, behind fault proxies. `npm run chaos` runs thousands.

const emulators = () => ({
  dynamodb: emulatorEndpoint('dynamodbEndpoint'),
  sqs: emulatorEndpoint('sqsEndpoint'),
});

describe('generated outbox schedules', () => {
  it('keep every promise of the outbox over 40 schedules', { timeout: 600_000 }, async () => {
    const round = async (seed: number) => {
      const report = await checkOutboxSchedules({ emulators: emulators(), schedules: 40, seed, workers: 2 });
      const replay = `seed ${report.seed}: ${JSON.stringify(report.counterexample)}`;
      expect(report.counterexample, replay).toBeUndefined();
      expect(report.schedules).toBe(40);
      expect(report.violations, replay).toBe(0);
      return report;
    };
    // They must meet trouble: faults on both services (the token check's too), refused writes,
    // crashes, copies sent again. 40 schedules of one seed may draw no fault of some kind (the
    // seed is the commit's): then 40 more of the next seed, until each kind was met, 4 rounds at most.
    const met = (reports: Awaited<ReturnType<typeof round>>[]) => {
      const total = (count: (report: (typeof reports)[number]) => number) =>
        reports.reduce((sum, report) => sum + count(report), 0);
      return {
        'fail-before': total((report) => report.faults['fail-before']),
        'lose-answer': total((report) => report.faults['lose-answer']),
        'unprocessed-keys': total((report) => report.faults['unprocessed-keys']),
        'fail-entry': total((report) => report.faults['fail-entry']),
        canceled: total((report) => report.writes.canceled),
        crashes: total((report) => report.crashes),
        duplicateSends: total((report) => report.duplicateSends),
      };
    };
    const seed = commitSeed();
    const reports = [await round(seed)];
    while (Object.values(met(reports)).some((count) => count === 0) && reports.length < 4) {
      reports.push(await round(seed + reports.length));
    }
    for (const [trouble, count] of Object.entries(met(reports))) {
      expect(count, `${trouble} over ${reports.length} rounds from seed ${seed}`).toBeGreaterThan(0);
    }
  });
});

let world: OutboxWorld;

beforeAll(async () => {
  world = await openOutboxWorld(emulators());
});

afterAll(() => world.close());

const noFaults = { seed: 1, rates: {} };

describe('schedules that meet one trouble each', () => {
  it('a relay that dies after sending: the sweeper sends both again, SQS keeps one copy, the crash explains it', async () => {
    const schedule: OutboxSchedule = {
      steps: [
        { kind: 'write', groups: [0, 0], canceled: false },
        // One message of a group per call: the second send is the second message's.
        { kind: 'relay', shard: 0, crash: { point: 'after-send', nth: 2 } },
      ],
      faults: noFaults,
    };
    const run = await runOutboxSchedule(world, schedule);
    const verdict = checkOutboxInvariants(run);
    expect(verdict.violations).toEqual([]);
    expect(run.crashes).toBe(1);
    expect(verdict.duplicateSends).toBe(2);
    expect(verdict.explained.crash).toBe(2);
    expect(run.outcome.received.map((message) => message.key)).toEqual(run.writes[0]?.keys);
  });

  it('a relay stalled past its claims sends nothing once it goes on: its deadline has passed', async () => {
    const schedule: OutboxSchedule = {
      steps: [
        { kind: 'write', groups: [1], canceled: false },
        { kind: 'write', groups: [1], canceled: false },
        { kind: 'stall', shard: 1, at: { point: 'after-claim', nth: 1 } },
      ],
      faults: noFaults,
    };
    const run = await runOutboxSchedule(world, schedule);
    const verdict = checkOutboxInvariants(run);
    expect(verdict.violations).toEqual([]);
    expect(run.stalls).toBe(1);
    // The sweeper sent both while the relay was stalled; the relay sent neither again.
    expect(verdict.duplicateSends).toBe(0);
  });

  it('a refused write publishes nothing, and the writes around it keep their order', async () => {
    const schedule: OutboxSchedule = {
      steps: [
        { kind: 'write', groups: [2], canceled: false },
        { kind: 'write', groups: [2, 2], canceled: true },
        { kind: 'write', groups: [2], canceled: false },
        { kind: 'relay', shard: 0 },
      ],
      faults: noFaults,
    };
    const run = await runOutboxSchedule(world, schedule);
    const verdict = checkOutboxInvariants(run);
    expect(verdict.violations).toEqual([]);
    expect(run.writes.map((write) => write.told)).toEqual(['written', 'canceled', 'written']);
    expect(run.outcome.received.map((message) => message.key)).toEqual([
      ...(run.writes[0]?.keys ?? []),
      ...(run.writes[2]?.keys ?? []),
    ]);
  });

  it.each(['within-window', 'past-window'] as const)(
    'a write whose first call lost every answer, retried %s: told written, committed once',
    async (lostAnswer) => {
      const schedule: OutboxSchedule = {
        steps: [{ kind: 'write', groups: [0, 0], canceled: false, lostAnswer }],
        faults: noFaults,
      };
      const run = await runOutboxSchedule(world, schedule);
      expect(checkOutboxInvariants(run).violations).toEqual([]);
      expect(run.writes[0]).toMatchObject({
        told: 'written',
        errors: [expect.stringContaining('InternalServerError')],
      });
      expect(run.outcome.received.map((message) => message.key)).toEqual(run.writes[0]?.keys);
    },
  );

  it('a retried write whose token check is never answered in full is told its outcome is unknown, never canceled', async () => {
    const schedule: OutboxSchedule = {
      steps: [{ kind: 'write', groups: [2], canceled: false, lostAnswer: 'past-window' }],
      faults: { ...noFaults, tokenCheck: { 'unprocessed-keys': 1 } },
    };
    const run = await runOutboxSchedule(world, schedule);
    expect(checkOutboxInvariants(run).violations).toEqual([]);
    expect(run.writes[0]?.told).toBe('failed');
    expect(run.writes[0]?.errors.slice(1)).toEqual([
      expect.stringMatching(/^OutboxWriteOutcomeUnknownError: /),
      expect.stringMatching(/^OutboxWriteOutcomeUnknownError: /),
    ]);
  });

  it('SendMessageBatch answers that fail an entry and accept the later ones of its group: the group stays in order', async () => {
    const schedule: OutboxSchedule = {
      steps: [
        { kind: 'write', groups: [0, 0, 0], canceled: false },
        { kind: 'relay', shard: 0 },
      ],
      faults: { seed: 1, rates: { 'fail-entry': 1 } },
    };
    const run = await runOutboxSchedule(world, schedule);
    expect(checkOutboxInvariants(run).violations).toEqual([]);
    expect(world.sqsProxy.stats().faults['fail-entry']).toBeGreaterThan(0);
    expect(run.outcome.received.map((message) => message.key)).toEqual(run.writes[0]?.keys);
  });

  it('SQS down while the relay runs: the group is left pending with its error, and the drain delivers it', async () => {
    const schedule: OutboxSchedule = {
      steps: [
        { kind: 'write', groups: [0, 1], canceled: false },
        { kind: 'sqs-down', steps: 1 },
        { kind: 'relay', shard: 0 },
        { kind: 'relay', shard: 1 },
      ],
      faults: noFaults,
    };
    const run = await runOutboxSchedule(world, schedule);
    expect(checkOutboxInvariants(run).violations).toEqual([]);
    expect(run.traffic.outageRefusals).toBeGreaterThan(0);
    expect(run.drainRounds).toBe(1);
  });

  it("the proxy's own connection to SQS reset after SQS took a send: the copy sent again is a lost answer's", async () => {
    // Found by `npm run chaos` on a loaded machine: the SQS proxy forwarded the drain's first send
    // on a pooled socket the emulator had closed (its 5 s keep-alive outlived by a lagging event
    // loop), and its caller got a reset, which no fault had decided. Here a second proxy between
    // the first and SQS lets SQS take that send and resets the first proxy's connection.
    const between = await startFaultProxy({
      service: 'sqs',
      upstream: emulatorEndpoint('sqsEndpoint'),
      plan: targetedFaultPlan({
        match: (request) => request.operation === 'SendMessageBatch',
        fault: { kind: 'lose-answer', reset: true },
        times: 1,
      }),
    });
    const behindReset = await openOutboxWorld({ ...emulators(), sqs: between.endpoint });
    try {
      const schedule: OutboxSchedule = {
        steps: [
          { kind: 'write', groups: [1, 1, 1], canceled: false, lostAnswer: 'past-window' },
          { kind: 'write', groups: [2, 1, 2], canceled: false },
        ],
        faults: {
          seed: 465425217,
          rates: { 'fail-before': 0.1, 'lose-answer': 0.1, throttle: 0.03, delay: 0.05, 'fail-entry': 0.1 },
          tokenCheck: { 'unprocessed-keys': 0.5 },
        },
        clockSkewsMs: [-2157, 4450, -3078, 1317],
      };
      const run = await runOutboxSchedule(behindReset, schedule);
      const verdict = checkOutboxInvariants(run);
      expect(verdict.violations).toEqual([]);
      expect(between.stats().faults['lose-answer']).toBe(1);
      // The reset send's one or two entries (one per group) reached SQS again, each explained once.
      expect(verdict.duplicateSends).toBeGreaterThan(0);
      expect(verdict.explained['lost-answer']).toBe(verdict.duplicateSends);
    } finally {
      await behindReset.close();
      await between.close();
    }
  });
});
