import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context } from 'aws-lambda';
import {
  DEFAULT_STUCK_AFTER_SECONDS,
  DEFAULT_SWEEP_AFTER_SECONDS,
  integerVariable,
  OUTBOX_ENVIRONMENT,
} from './environment.js';
import { OUTBOX_METRICS } from './metrics.js';
import { invocationTimes, senderFromEnvironment } from './sender-environment.js';
import { type SweepReport, sweep } from './sweeper.js';

let sender: ReturnType<typeof senderFromEnvironment> | undefined;
const metrics = new Metrics();

/**
 * The sweeper's Lambda entry point, run by an EventBridge schedule. It publishes the stuck count and
 * the oldest pending age on every run, zeros included, so a missing data point means it did not run.
 */
export async function handler(_event: unknown, context: Context): Promise<SweepReport> {
  sender ??= senderFromEnvironment();
  const report = await sweep({
    ...sender,
    ...invocationTimes(context),
    sweepAfterMs:
      integerVariable(OUTBOX_ENVIRONMENT.sweepAfterSeconds, DEFAULT_SWEEP_AFTER_SECONDS, 0) * 1000,
    stuckAfterMs:
      integerVariable(OUTBOX_ENVIRONMENT.stuckAfterSeconds, DEFAULT_STUCK_AFTER_SECONDS, 1) * 1000,
  });
  const swept = report.groups.reduce((sum, group) => sum + group.sent.length, 0);
  metrics.addMetric(OUTBOX_METRICS.swept, MetricUnit.Count, swept);
  metrics.addMetric(OUTBOX_METRICS.stuck, MetricUnit.Count, report.stuck);
  metrics.addMetric(OUTBOX_METRICS.oldestPendingAge, MetricUnit.Seconds, report.oldestPendingAgeSeconds);
  metrics.publishStoredMetrics();
  if (report.errors.length > 0)
    console.error(JSON.stringify({ message: 'outbox sweeper: groups left pending', ...report }));
  return report;
}
