import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import { metricsScope } from '../common/metrics-scope.js';
import { OUTBOX_METRICS } from './metrics.js';
import { invocationTimes, senderFromEnvironment, sweepBoundsFromEnvironment } from './sender-environment.js';
import { type SweepReport, sweep } from './sweeper.js';

let sender: ReturnType<typeof senderFromEnvironment> | undefined;
let bounds: ReturnType<typeof sweepBoundsFromEnvironment> | undefined;
const metrics = new Metrics({ defaultDimensions: metricsScope() });

/**
 * The sweeper's Lambda entry point, run by an EventBridge schedule. It publishes the stuck count and
 * the oldest pending age on every run, zeros included, so a missing data point means it did not run.
 */
export async function handler(_event: unknown, context: Context): Promise<SweepReport> {
  sender ??= senderFromEnvironment('sweeper');
  bounds ??= sweepBoundsFromEnvironment();
  const report = await sweep({ ...sender, ...bounds, ...invocationTimes(context) });
  const swept = report.groups.reduce((sum, group) => sum + group.sent.length, 0);
  metrics.addMetric(OUTBOX_METRICS.swept, MetricUnit.Count, swept);
  metrics.addMetric(OUTBOX_METRICS.stuck, MetricUnit.Count, report.stuck);
  metrics.addMetric(OUTBOX_METRICS.oldestPendingAge, MetricUnit.Seconds, report.oldestPendingAgeSeconds);
  metrics.publishStoredMetrics();
  if (report.errors.length > 0)
    console.error(JSON.stringify({ message: 'outbox sweeper: groups left pending', ...report }));
  return report;
}
