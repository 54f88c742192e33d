import type { FunctionMetricName, FunctionMetrics } from './function-metrics.js';

/** What the sandbox's CloudWatch reads: its functions' counts, and when each queue's oldest message was sent. */
export interface SandboxFigures {
  functions: FunctionMetrics;
  /** Epoch milliseconds by queue name; an empty queue is absent. */
  oldestSentAt(): Map<string, number>;
  now?: () => number;
}

/** An answer of CloudWatch's JSON protocol (awsJson1_0): its body, status and error type. */
export interface JsonAnswer {
  status: number;
  body: string;
  errorType?: string;
}

/** The `X-Amz-Target` prefix of CloudWatch's operations. */
export const CLOUDWATCH_TARGET_PREFIX = 'GraniteServiceVersion20100801.';

const LAMBDA_METRICS = new Set<string>(['Invocations', 'Errors', 'Throttles']);

interface MetricDataQuery {
  Id: string;
  Label?: string;
  MetricStat?: {
    Metric: { Namespace?: string; MetricName?: string; Dimensions?: { Name: string; Value: string }[] };
    Period: number;
    Stat: string;
  };
}

interface GetMetricDataInput {
  MetricDataQueries?: MetricDataQuery[];
  StartTime?: number;
  EndTime?: number;
  ScanBy?: 'TimestampDescending' | 'TimestampAscending';
}

/**
 * CloudWatch's GetMetricData, as far as the sandbox measures: AWS/Lambda's Invocations, Errors and
 * Throttles by FunctionName (Sum by period), and AWS/SQS's ApproximateAgeOfOldestMessage by
 * QueueName (its value now, one point; 0 for an empty queue). Any other metric has no points, as on CloudWatch for a metric
 * nothing published; any other operation is refused, naming what is served.
 */
export function answerCloudWatch(target: string, body: string, figures: SandboxFigures): JsonAnswer {
  const operation = target.slice(CLOUDWATCH_TARGET_PREFIX.length);
  if (operation !== 'GetMetricData') {
    return error(
      400,
      'UnsupportedOperation',
      `The Oncely sandbox's CloudWatch answers GetMetricData for AWS/Lambda and AWS/SQS only, not ${operation}.`,
    );
  }
  let input: GetMetricDataInput;
  try {
    input = JSON.parse(body) as GetMetricDataInput;
  } catch {
    return error(400, 'InvalidParameterValue', 'The request body is not JSON.');
  }
  const now = (figures.now ?? Date.now)();
  const fromMs = (input.StartTime ?? 0) * 1000;
  const toMs = (input.EndTime ?? now / 1000) * 1000;
  const descending = input.ScanBy !== 'TimestampAscending';
  const results = (input.MetricDataQueries ?? []).map((query) => {
    const points = pointsOf(query, figures, fromMs, toMs, now);
    const ordered = [...points].sort(([a], [b]) => (descending ? b - a : a - b));
    return {
      Id: query.Id,
      Label: query.Label ?? query.MetricStat?.Metric.MetricName ?? query.Id,
      Timestamps: ordered.map(([at]) => at / 1000),
      Values: ordered.map(([, value]) => value),
      StatusCode: 'Complete',
    };
  });
  return { status: 200, body: JSON.stringify({ MetricDataResults: results, Messages: [] }) };
}

function pointsOf(
  query: MetricDataQuery,
  figures: SandboxFigures,
  fromMs: number,
  toMs: number,
  now: number,
): Map<number, number> {
  const stat = query.MetricStat;
  const dimension = (name: string) => stat?.Metric.Dimensions?.find((d) => d.Name === name)?.Value;
  if (!stat) return new Map();
  const { Namespace, MetricName = '' } = stat.Metric;
  const functionName = dimension('FunctionName');
  if (Namespace === 'AWS/Lambda' && LAMBDA_METRICS.has(MetricName) && functionName !== undefined) {
    const byMinute = figures.functions.points(functionName, MetricName as FunctionMetricName, fromMs, toMs);
    return byPeriod(byMinute, stat.Period);
  }
  const queueName = dimension('QueueName');
  if (Namespace === 'AWS/SQS' && MetricName === 'ApproximateAgeOfOldestMessage' && queueName !== undefined) {
    // An empty queue's age is 0, as SQS reports it for an active queue.
    const sentAt = figures.oldestSentAt().get(queueName) ?? now;
    const minute = Math.floor(now / 60_000) * 60_000;
    if (minute < Math.floor(fromMs / 60_000) * 60_000 || minute >= toMs) return new Map();
    return new Map([[minute, Math.max(0, Math.floor((now - sentAt) / 1000))]]);
  }
  return new Map();
}

/** One-minute counts summed into `periodSeconds` points, each at its period's start. */
function byPeriod(byMinute: Map<number, number>, periodSeconds: number): Map<number, number> {
  const periodMs = Math.max(60, periodSeconds) * 1000;
  const points = new Map<number, number>();
  for (const [at, count] of byMinute) {
    const start = Math.floor(at / periodMs) * periodMs;
    points.set(start, (points.get(start) ?? 0) + count);
  }
  return points;
}

function error(status: number, type: string, message: string): JsonAnswer {
  return { status, errorType: type, body: JSON.stringify({ __type: type, message }) };
}
