import type { CloudWatchClient, CloudWatchClientConfig } from '@aws-sdk/client-cloudwatch';
import { queueNameOf } from '../lambdas/common/tracing.js';
import type { FunctionCounts } from './console-activity.js';
import type { PipelineConnection } from './target.js';

/**
 * What the console reads of CloudWatch — a stack's, or the sandbox's (its edge answers GetMetricData
 * from what it measures): the functions' counts and the queues' oldest messages.
 */
export interface StackMetrics {
  /** Over the last {@link METRICS_WINDOW_MINUTES} minutes, each function's. */
  functions: (FunctionCounts & { throttles: number })[];
  /** Each queue's oldest message's age, in seconds, by queue name; absent where CloudWatch has no point yet. */
  oldestAgeSeconds: Record<string, number>;
}

/** The window the counts sum over: what a person looking at a running pipeline asks first. */
export const METRICS_WINDOW_MINUTES = 15;
/** CloudWatch's standard resolution for Lambda and SQS: one point a minute. */
const PERIOD_SECONDS = 60;

/**
 * A stack's Lambda counts (Invocations, Errors, Throttles: sums) and SQS ages
 * (ApproximateAgeOfOldestMessage: the latest maximum), in one GetMetricData request.
 */
export async function readStackMetrics(
  cloudwatch: CloudWatchClient,
  functionNames: readonly string[],
  queueNames: readonly string[],
  now = new Date(),
): Promise<StackMetrics> {
  const { GetMetricDataCommand } = await import('@aws-sdk/client-cloudwatch');
  const lambdaMetrics = ['Invocations', 'Errors', 'Throttles'] as const;
  const queries = [
    ...functionNames.flatMap((name, f) =>
      lambdaMetrics.map((metric) => ({
        Id: `f${f}_${metric.toLowerCase()}`,
        MetricStat: {
          Metric: {
            Namespace: 'AWS/Lambda',
            MetricName: metric,
            Dimensions: [{ Name: 'FunctionName', Value: name }],
          },
          Period: PERIOD_SECONDS,
          Stat: 'Sum',
        },
      })),
    ),
    ...queueNames.map((name, q) => ({
      Id: `q${q}_age`,
      MetricStat: {
        Metric: {
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [{ Name: 'QueueName', Value: name }],
        },
        Period: PERIOD_SECONDS,
        Stat: 'Maximum',
      },
    })),
  ];
  const values = new Map<string, number[]>();
  let NextToken: string | undefined;
  do {
    const page = await cloudwatch.send(
      new GetMetricDataCommand({
        MetricDataQueries: queries,
        StartTime: new Date(now.getTime() - METRICS_WINDOW_MINUTES * 60_000),
        EndTime: now,
        // The latest point first: an age is the latest one.
        ScanBy: 'TimestampDescending',
        NextToken,
      }),
    );
    for (const result of page.MetricDataResults ?? []) {
      values.set(String(result.Id), [...(values.get(String(result.Id)) ?? []), ...(result.Values ?? [])]);
    }
    NextToken = page.NextToken;
  } while (NextToken);
  const sum = (id: string) => (values.get(id) ?? []).reduce((total, value) => total + value, 0);
  const oldestAgeSeconds: Record<string, number> = {};
  queueNames.forEach((name, q) => {
    const [latest] = values.get(`q${q}_age`) ?? [];
    if (latest !== undefined) oldestAgeSeconds[name] = latest;
  });
  return {
    functions: functionNames.map((name, f) => ({
      name,
      invocations: sum(`f${f}_invocations`),
      errors: sum(`f${f}_errors`),
      throttles: sum(`f${f}_throttles`),
    })),
    oldestAgeSeconds,
  };
}

/** A pipeline's CloudWatch figures, read as often as the overview is; `close` ends the client. */
export interface PipelineFigures {
  read(): Promise<StackMetrics>;
  close(): void;
}

/**
 * The figures of a pipeline's publisher and consumer and of its queue and DLQ, through a CloudWatch
 * client of `config` (a stack: the user's credentials; a sandbox: its edge). Without the optional
 * `@aws-sdk/client-cloudwatch`, none, said once through `print`.
 */
export async function pipelineFigures(
  pipeline: PipelineConnection,
  config: CloudWatchClientConfig,
  print: (text: string) => void,
): Promise<PipelineFigures | undefined> {
  let module: typeof import('@aws-sdk/client-cloudwatch');
  try {
    module = await import('@aws-sdk/client-cloudwatch');
  } catch {
    print(
      "No CloudWatch figures (the functions' counts, the queues' oldest ages): npm install --save-dev @aws-sdk/client-cloudwatch",
    );
    return undefined;
  }
  const cloudwatch = new module.CloudWatchClient(config);
  const { resources } = pipeline;
  const functions = [resources.publisherFunctionName, resources.consumerFunctionName];
  const queues = [resources.queueUrl, resources.dlqUrl].map(queueNameOf);
  return { read: () => readStackMetrics(cloudwatch, functions, queues), close: () => cloudwatch.destroy() };
}
