import type { ScheduledEvent } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { inProcessFunction } from '../../sandbox/in-process-function.js';
import type { InvocationResult } from '../../sandbox/lambda-context.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import type { LocalSchedule } from '../../sandbox/schedule-rules.js';
import { startScheduleRunner } from '../../sandbox/schedule-runner.js';

const INTERVAL_MS = 100;

const schedule: LocalSchedule = {
  logicalId: 'Every',
  name: 'every-tick',
  arn: `arn:aws:events:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:rule/every-tick`,
  expression: 'rate(1 minute)',
  intervalMs: 60_000,
  functionNames: ['job'],
};

/** Polls `condition` until it holds, for at most `timeoutMs`. */
async function waitFor(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const runners: { stop: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(runners.splice(0).map((runner) => runner.stop()));
});

/** Runs `schedule` every {@link INTERVAL_MS} against an in-process function taking `durationMs`. */
function run(durationMs = 0) {
  const runs: { event: ScheduledEvent; startedAt: number; endedAt?: number }[] = [];
  const job = inProcessFunction({
    name: 'job',
    arn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:job`,
    timeoutMs: 5_000,
    handler: async (event) => {
      const current = {
        event: event as ScheduledEvent,
        startedAt: Date.now(),
        endedAt: undefined as number | undefined,
      };
      runs.push(current);
      await new Promise((resolve) => setTimeout(resolve, durationMs));
      current.endedAt = Date.now();
      return 'done';
    },
  });
  const results: InvocationResult[] = [];
  const startedAt = Date.now();
  const runner = startScheduleRunner({
    schedule,
    intervalMs: INTERVAL_MS,
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    invoke: (_functionName, event) => job.invoke(event),
    onRun: (_functionName, result) => results.push(result),
  });
  runners.push(runner);
  return { runs, results, startedAt, runner };
}

describe('schedule runner', () => {
  it('first runs one interval after the start, then on every interval, with EventBridge’s event', async () => {
    const { runs, results, startedAt } = run();
    await waitFor(() => results.length >= 3, 'three runs');

    expect(runs[0].startedAt - startedAt).toBeGreaterThanOrEqual(INTERVAL_MS - 5);
    expect(runs[2].startedAt - runs[0].startedAt).toBeGreaterThanOrEqual(2 * INTERVAL_MS - 10);
    expect(results[0]).toEqual({ ok: true, result: 'done' });
    expect(runs[0].event).toEqual({
      version: '0',
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: LOCAL_ACCOUNT_ID,
      time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      region: LOCAL_REGION,
      resources: [schedule.arn],
      detail: {},
    });
    expect(runs[1].event.id).not.toBe(runs[0].event.id);
  });

  it('never overlaps two runs of a rule: a tick that falls during a run is skipped', async () => {
    const { runs, results } = run(2.5 * INTERVAL_MS);
    await waitFor(() => results.length >= 3, 'three runs');

    for (let i = 1; i < runs.length; i++) {
      expect(runs[i].startedAt).toBeGreaterThanOrEqual(Number(runs[i - 1].endedAt));
    }
    // Runs stay on the interval's ticks: a 250 ms run is followed by the tick at 300 ms.
    expect(runs[1].startedAt - runs[0].startedAt).toBeGreaterThanOrEqual(3 * INTERVAL_MS - 10);
  });

  it('stops cleanly: waits for the run in progress and starts no other', async () => {
    const { runs, runner } = run(2 * INTERVAL_MS);
    await waitFor(() => runs.length === 1, 'a run to start');

    await runner.stop();

    expect(runs[0].endedAt).toBeDefined();
    // Nothing is due any more: three intervals later still one run (a bound, not a race fix).
    await new Promise((resolve) => setTimeout(resolve, 3 * INTERVAL_MS));
    expect(runs).toHaveLength(1);
  });
});
