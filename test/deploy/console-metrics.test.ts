import { CloudWatchClient, PutMetricDataCommand } from '@aws-sdk/client-cloudwatch';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStackMetrics } from '../../cli/console-metrics.js';
import { REGION } from './cdk-cli.js';
import { type Moto, startMoto } from './moto.js';

// What a stack's console reads of CloudWatch (docs/console.md), through the AWS SDK against moto's
// CloudWatch: the metrics Lambda and SQS publish are put there as they would be, then read back.

let moto: Moto;
let cloudwatch: CloudWatchClient;

beforeAll(async () => {
  moto = await startMoto();
  cloudwatch = new CloudWatchClient({
    endpoint: moto.endpoint,
    region: REGION,
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
  });
}, 120_000);

afterAll(async () => {
  cloudwatch?.destroy();
  await moto?.stop();
});

/** One point of a metric, `minutesAgo` before now, as Lambda or SQS would publish it. */
function point(
  namespace: string,
  metric: string,
  dimension: [string, string],
  value: number,
  minutesAgo: number,
) {
  return cloudwatch.send(
    new PutMetricDataCommand({
      Namespace: namespace,
      MetricData: [
        {
          MetricName: metric,
          Dimensions: [{ Name: dimension[0], Value: dimension[1] }],
          Timestamp: new Date(Date.now() - minutesAgo * 60_000),
          Value: value,
        },
      ],
    }),
  );
}

describe("a stack's console, from CloudWatch", () => {
  it("sums each function's invocations, errors and throttles over the window, and takes each queue's latest age", async () => {
    await point('AWS/Lambda', 'Invocations', ['FunctionName', 'consumer-fn'], 7, 2);
    await point('AWS/Lambda', 'Invocations', ['FunctionName', 'consumer-fn'], 5, 1);
    await point('AWS/Lambda', 'Errors', ['FunctionName', 'consumer-fn'], 2, 1);
    await point('AWS/Lambda', 'Throttles', ['FunctionName', 'consumer-fn'], 1, 1);
    // Outside the 15-minute window: not counted.
    await point('AWS/Lambda', 'Invocations', ['FunctionName', 'consumer-fn'], 100, 40);
    await point('AWS/Lambda', 'Invocations', ['FunctionName', 'publisher-fn'], 3, 1);
    await point('AWS/SQS', 'ApproximateAgeOfOldestMessage', ['QueueName', 'events.fifo'], 30, 3);
    await point('AWS/SQS', 'ApproximateAgeOfOldestMessage', ['QueueName', 'events.fifo'], 12, 1);

    const metrics = await readStackMetrics(
      cloudwatch,
      ['consumer-fn', 'publisher-fn', 'idle-fn'],
      ['events.fifo', 'events-dlq.fifo'],
    );
    expect(metrics.functions).toEqual([
      { name: 'consumer-fn', invocations: 12, errors: 2, throttles: 1 },
      { name: 'publisher-fn', invocations: 3, errors: 0, throttles: 0 },
      { name: 'idle-fn', invocations: 0, errors: 0, throttles: 0 },
    ]);
    // The latest point, not the largest: an age falls once the message is taken.
    expect(metrics.oldestAgeSeconds).toEqual({ 'events.fifo': 12 });
  });
});
