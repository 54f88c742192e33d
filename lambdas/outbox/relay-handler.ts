import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { Context, DynamoDBBatchResponse, DynamoDBStreamEvent } from 'aws-lambda';
import { metricsScope } from '../common/metrics-scope.js';
import { OUTBOX_METRICS } from './metrics.js';
import { relayBatch } from './relay.js';
import { invocationTimes, senderFromEnvironment } from './sender-environment.js';

let sender: ReturnType<typeof senderFromEnvironment> | undefined;
const metrics = new Metrics({ defaultDimensions: metricsScope() });

/** The relay's Lambda entry point, on the outbox table's stream (built on first use, then kept). */
export async function handler(event: DynamoDBStreamEvent, context: Context): Promise<DynamoDBBatchResponse> {
  sender ??= senderFromEnvironment('relay');
  const response = await relayBatch(event, {
    ...sender,
    ...invocationTimes(context),
    onReport: (report) => {
      const count = (pick: (group: (typeof report.groups)[number]) => string[]) =>
        report.groups.reduce((sum, group) => sum + pick(group).length, 0);
      metrics.addMetric(
        OUTBOX_METRICS.relayed,
        MetricUnit.Count,
        count((group) => group.sent),
      );
      metrics.addMetric(
        OUTBOX_METRICS.unsent,
        MetricUnit.Count,
        count((group) => [...group.notSent, ...group.sentUnmarked]),
      );
      if (report.errors.length > 0 || report.groups.some((group) => group.markErrors.length > 0)) {
        console.error(JSON.stringify({ message: 'outbox relay: groups left pending', ...report }));
      }
    },
  });
  metrics.publishStoredMetrics();
  return response;
}
