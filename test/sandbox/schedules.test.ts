import type { ScheduledEvent } from 'aws-lambda';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AsyncAttempt, AsyncInvokeConfig } from '../../sandbox/async-invocation.js';
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

/** One invocation of the scheduled function, as it saw it. */
interface Run {
  event: ScheduledEvent;
  awsRequestId: string;
  startedAt: number;
  endedAt?: number;
}

/**
 * Runs `schedule` every {@link INTERVAL_MS} against an in-process function; `body` is what the
 * function does with its run (by default, nothing). Retries wait {@link RETRY_DELAYS_MS}.
 */
function run(
  body: (current: Run, runs: Run[]) => Promise<unknown> | unknown = () => 'done',
  config?: AsyncInvokeConfig,
  timeoutMs = 5_000,
) {
  const runs: Run[] = [];
  const job = inProcessFunction({
    name: 'job',
    arn: `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT_ID}:function:job`,
    timeoutMs,
    handler: async (event, context) => {
      const current: Run = {
        event: event as ScheduledEvent,
        awsRequestId: context.awsRequestId,
        startedAt: Date.now(),
      };
      runs.push(current);
      try {
        return await body(current, runs);
      } finally {
        current.endedAt = Date.now();
      }
    },
  });
  const results: { result: InvocationResult; attempt: AsyncAttempt }[] = [];
  const startedAt = Date.now();
  const runner = startScheduleRunner({
    schedule,
    intervalMs: INTERVAL_MS,
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    invoke: (_functionName, event, awsRequestId) => job.invoke(event, awsRequestId),
    asyncInvokeConfigOf: () => config,
    asyncRetryDelaysMs: RETRY_DELAYS_MS,
    onRun: (_functionName, result, attempt) => results.push({ result, attempt }),
  });
  runners.push(runner);
  return { runs, results, startedAt, runner };
}

const RETRY_DELAYS_MS = [30, 60];

describe('schedule runner', () => {
  it('first runs one interval after the start, then on every interval, with EventBridge’s event', async () => {
    const { runs, results, startedAt } = run();
    await waitFor(() => results.length >= 3, 'three runs');

    expect(runs[0].startedAt - startedAt).toBeGreaterThanOrEqual(INTERVAL_MS - 5);
    // Lower bounds only, from the runner's start: a busy machine can delay a run, never advance a tick.
    expect(runs[2].startedAt - startedAt).toBeGreaterThanOrEqual(3 * INTERVAL_MS - 5);
    expect(results[0]).toEqual({
      result: { ok: true, result: 'done' },
      attempt: { awsRequestId: runs[0].awsRequestId, number: 1, retrying: false },
    });
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

  it('runs one tick per interval when the wall clock reads a little behind the timers', async () => {
    // Timers run on Node's monotonic clock, the runner reads Date.now(): the two are whole
    // milliseconds of different clocks, so a timer can fire when Date.now() says its time is a
    // millisecond away (or more, when the wall clock is stepped back).
    const realNow = Date.now.bind(Date);
    let offsetMs = 0;
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => realNow() - offsetMs);
    try {
      const { runs, results, startedAt } = run();
      offsetMs = 3;
      await waitFor(() => results.length >= 2, 'two runs');

      // Each tick no earlier than its time. Not the gap between the runs: a busy machine can start
      // the first late and the second on time, and a tick fired twice shows in the second alone.
      expect(runs[0].startedAt - startedAt).toBeGreaterThanOrEqual(INTERVAL_MS - 5);
      expect(runs[1].startedAt - startedAt).toBeGreaterThanOrEqual(2 * INTERVAL_MS - 10);
    } finally {
      clock.mockRestore();
    }
  });

  it('fires every tick while a previous run is still going, as EventBridge does: runs overlap', async () => {
    // The first run lasts until the next tick's run has started (or 5 s have passed): it sees the
    // second start only if the runner did not wait for it to end.
    let secondStartedDuringFirst = false;
    const { runs } = run(async (current, all) => {
      if (all[0] !== current) return;
      await waitFor(() => all.length >= 2, 'a second run', 5_000)
        .then(() => {
          secondStartedDuringFirst = true;
        })
        .catch(() => {});
    });
    // Until the first run has seen the second start, or ended without: both polls run every 20 ms,
    // so waiting only for the second run could look before the first run's poll does.
    await waitFor(
      () => secondStartedDuringFirst || runs[0]?.endedAt !== undefined,
      'the first run to decide',
    );

    expect(secondStartedDuringFirst).toBe(true);
    expect(runs[1].event.id).not.toBe(runs[0].event.id);
  });

  it('retries a failed run twice, with the same event and request id, then gives it up', async () => {
    const { runs, results } = run(() => {
      throw new Error('the job failed');
    });
    // Until the second event is given up too: by then a fourth attempt of the first would have come.
    const givenUp = () => results.filter(({ attempt }) => attempt.number === 3).length;
    await waitFor(() => givenUp() >= 2, 'two events given up');

    const first = runs[0];
    const attempts = runs.filter((r) => r.awsRequestId === first.awsRequestId);
    expect(attempts.map((r) => r.event)).toEqual([first.event, first.event, first.event]);
    const reports = results.filter(({ attempt }) => attempt.awsRequestId === first.awsRequestId);
    expect(reports.map(({ attempt }) => attempt)).toEqual([
      { awsRequestId: first.awsRequestId, number: 1, retrying: true },
      { awsRequestId: first.awsRequestId, number: 2, retrying: true },
      { awsRequestId: first.awsRequestId, number: 3, retrying: false },
    ]);
    expect(reports[2].result).toMatchObject({ ok: false, error: { errorMessage: 'the job failed' } });
  });

  it('retries a run that timed out, as Lambda retries any function error', async () => {
    // The first attempt of each event outlives the 100 ms timeout; its retry returns at once.
    const { results } = run(
      async (current, all) => {
        if (all.filter((r) => r.awsRequestId === current.awsRequestId).length === 1) {
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
        return 'done';
      },
      undefined,
      100,
    );
    await waitFor(() => results.some(({ result }) => result.ok), 'a run that succeeded');

    const [first] = results;
    const second = results.find(
      ({ attempt }) => attempt.awsRequestId === first.attempt.awsRequestId && attempt.number === 2,
    );
    expect(first.result).toMatchObject({ ok: false, error: { errorType: 'Sandbox.Timedout' } });
    expect(first.attempt).toMatchObject({ number: 1, retrying: true });
    expect(second).toEqual({
      result: { ok: true, result: 'done' },
      attempt: { awsRequestId: first.attempt.awsRequestId, number: 2, retrying: false },
    });
  });

  it('does not retry a failed run with MaximumRetryAttempts 0', async () => {
    const { runs, results } = run(
      () => {
        throw new Error('the job failed');
      },
      { maximumRetryAttempts: 0, maximumEventAgeSeconds: 21_600 },
    );
    await waitFor(() => results.length >= 3, 'three runs');

    // Three ticks, three events, each run once.
    expect(new Set(runs.slice(0, 3).map((r) => r.awsRequestId)).size).toBe(3);
    for (const { attempt } of results.slice(0, 3))
      expect(attempt).toMatchObject({ number: 1, retrying: false });
  });

  it('gives a failed run up once its retry would come past the function’s MaximumEventAgeInSeconds', async () => {
    // A maximum age shorter than the 30 ms wait before the first retry (AWS's least is 60 s).
    const { results } = run(
      () => {
        throw new Error('the job failed');
      },
      { maximumRetryAttempts: 2, maximumEventAgeSeconds: 0.01 },
    );
    await waitFor(() => results.length >= 2, 'two runs');

    for (const { attempt } of results.slice(0, 2))
      expect(attempt).toMatchObject({ number: 1, retrying: false });
  });

  it('stops cleanly: waits for the run in progress and starts no other, nor a retry', async () => {
    const { runs, runner } = run(async () => {
      await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_MS));
      throw new Error('failed, to be retried');
    });
    await waitFor(() => runs.length === 1, 'a run to start');

    await runner.stop();

    expect(runs[0].endedAt).toBeDefined();
    // Nothing is due any more: three intervals later still one run (a bound, not a race fix).
    await new Promise((resolve) => setTimeout(resolve, 3 * INTERVAL_MS));
    expect(runs).toHaveLength(1);
  });
});
