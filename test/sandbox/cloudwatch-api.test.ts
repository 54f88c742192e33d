import { CloudWatchClient, GetMetricDataCommand, ListMetricsCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStackMetrics } from '../../cli/console-metrics.js';
import { describeDeployment } from '../../sandbox/deployment.js';
import { type EdgeEndpoint, startEdgeEndpoint } from '../../sandbox/edge-endpoint.js';
import { limitConcurrency } from '../../sandbox/function-concurrency.js';
import { FunctionMetrics } from '../../sandbox/function-metrics.js';
import { inProcessFunction } from '../../sandbox/in-process-function.js';
import { localAwsConfig, localFunctionArn } from '../../sandbox/local-aws-config.js';

// The sandbox's CloudWatch: what its functions and queues did, answered at its edge to GetMetricData
// through the real AWS SDK, as the console and a user's own tools read a stack's.

/** A clock the test moves by hand: minutes pass without waiting. */
let now = Date.UTC(2026, 10, 30, 12, 0, 30);
const metrics = new FunctionMetrics(() => now);
const oldest = new Map<string, number>();
let edge: EdgeEndpoint;
let cloudwatch: CloudWatchClient;

/** Resolves once released: holds an invocation running, so the next one is throttled. */
function gate() {
  let release = () => {};
  const released = new Promise<void>((resolve) => (release = resolve));
  return { released, release };
}
let held = gate();

const worker = metrics.counted(
  'worker',
  limitConcurrency(
    inProcessFunction({
      name: 'worker',
      arn: localFunctionArn('worker'),
      timeoutMs: 5_000,
      handler: async (input) => {
        const event = input as { fail?: boolean; hold?: boolean };
        if (event.hold) await held.released;
        if (event.fail) throw new Error('the handler failed');
        return 'ok';
      },
    }),
    1,
  ),
);

beforeAll(async () => {
  edge = await startEdgeEndpoint({
    targets: { dynamodb: 'http://127.0.0.1:9', sqs: 'http://127.0.0.1:9', lambda: 'http://127.0.0.1:9' },
    deployment: () => describeDeployment([], { region: 'us-east-1', accountId: '123456789012' }),
    figures: () => ({ functions: metrics, oldestSentAt: () => oldest, now: () => now }),
  });
  cloudwatch = new CloudWatchClient({ ...localAwsConfig(edge.endpoint), maxAttempts: 1 });
});

afterAll(async () => {
  cloudwatch.destroy();
  await edge.stop();
});

describe('the sandbox’s CloudWatch', () => {
  it('counts invocations, errors and throttles as Lambda does, by minute, and ages the oldest message', async () => {
    const start = now;
    expect((await worker.invoke({})).ok).toBe(true);
    expect((await worker.invoke({ fail: true })).ok).toBe(false);
    now += 60_000; // the next minute
    const running = worker.invoke({ hold: true });
    await expect(worker.invoke({})).rejects.toThrow('Rate Exceeded');
    held.release();
    expect((await running).ok).toBe(true);
    held = gate();
    oldest.set('orders.fifo', now - 42_000);

    const figures = await readStackMetrics(
      cloudwatch,
      ['worker', 'absent'],
      ['orders.fifo', 'orders-dlq.fifo'],
      new Date(now),
    );
    expect(figures.functions).toEqual([
      { name: 'worker', invocations: 3, errors: 1, throttles: 1 },
      { name: 'absent', invocations: 0, errors: 0, throttles: 0 },
    ]);
    // An empty queue is 0 s old, as SQS reports an active one.
    expect(figures.oldestAgeSeconds).toEqual({ 'orders.fifo': 42, 'orders-dlq.fifo': 0 });

    // By minute, the latest first, each point at its minute's start.
    const { MetricDataResults = [] } = await cloudwatch.send(
      new GetMetricDataCommand({
        MetricDataQueries: [
          {
            Id: 'invocations',
            MetricStat: {
              Metric: {
                Namespace: 'AWS/Lambda',
                MetricName: 'Invocations',
                Dimensions: [{ Name: 'FunctionName', Value: 'worker' }],
              },
              Period: 60,
              Stat: 'Sum',
            },
          },
          {
            Id: 'unmeasured',
            MetricStat: {
              Metric: { Namespace: 'AWS/DynamoDB', MetricName: 'ConsumedWriteCapacityUnits' },
              Period: 60,
              Stat: 'Sum',
            },
          },
        ],
        StartTime: new Date(start - 60_000),
        EndTime: new Date(now + 1),
      }),
    );
    const minute = (ms: number) => new Date(Math.floor(ms / 60_000) * 60_000);
    expect(MetricDataResults[0]?.Timestamps).toEqual([minute(now), minute(start)]);
    expect(MetricDataResults[0]?.Values).toEqual([1, 2]);
    expect(MetricDataResults[1]).toMatchObject({ Id: 'unmeasured', Values: [], StatusCode: 'Complete' });

    // A window that ends before the second minute sees the first only.
    const first = await readStackMetrics(cloudwatch, ['worker'], [], new Date(start + 1_000));
    expect(first.functions).toEqual([{ name: 'worker', invocations: 2, errors: 1, throttles: 0 }]);
  });

  it('refuses what it does not answer, with an error the SDK raises', async () => {
    await expect(cloudwatch.send(new ListMetricsCommand({}))).rejects.toMatchObject({
      name: 'UnsupportedOperation',
      message: expect.stringContaining('GetMetricData'),
    });
  });
});
