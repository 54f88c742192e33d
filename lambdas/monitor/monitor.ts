import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { metricsScope } from '../common/metrics-scope.js';
import { UNRESOLVED_METRICS } from './metrics.js';
import { surveyUnresolved, type UnresolvedCounts } from './unresolved-counts.js';
import { removeUnresolvedExpiries } from './unresolved-expiries.js';

export interface MonitorDependencies {
  dynamodb: DynamoDBClient;
  idempotencyTableName: string;
  /**
   * With `leaseRecords: 'valkey'`: the cache keeping the lease-mode records, whose unresolved ones
   * are counted with the table's (which keeps the transactional ones).
   * @default none: the table keeps every record
   */
  valkey?: UnresolvedCounter;
  /**
   * Powertools reads its namespace and service from the environment when not given; the default
   * also carries the pipeline's dimension (`ONCELY_PIPELINE`).
   */
  metrics?: Metrics;
}

/** A store that counts its own unresolved records: `ValkeyIdempotencyStore`. */
export interface UnresolvedCounter {
  countUnresolved(): Promise<UnresolvedCounts>;
}

/**
 * The unresolved-records monitor (DESIGN §3, §3.1): on each scheduled run it counts the live IN_DOUBT and
 * RETRY_PENDING records and publishes both counts, zeros included, so an alarm on them stays raised
 * while any record exists and a missing data point means the monitor did not run. First it removes
 * the expiry of any such record parked by an older version, which gave them one: unresolved, a
 * record must not expire with the message it keeps. One read of the index per reason finds both.
 * The counts go out last: a run that fails publishes nothing, and its silence raises
 * `UnresolvedMonitorSilent`, the only alarm on the monitor (a failure after them would look healthy).
 */
export function createMonitorHandler({
  dynamodb,
  idempotencyTableName,
  valkey,
  metrics = new Metrics({ defaultDimensions: metricsScope() }),
}: MonitorDependencies): () => Promise<UnresolvedCounts> {
  return async () => {
    const [{ counts: tableCounts, expiring }, valkeyCounts] = await Promise.all([
      surveyUnresolved(dynamodb, idempotencyTableName, Math.floor(Date.now() / 1000)),
      valkey?.countUnresolved(),
    ]);
    await removeUnresolvedExpiries(dynamodb, idempotencyTableName, expiring, Math.floor(Date.now() / 1000));
    const counts: UnresolvedCounts = {
      inDoubt: tableCounts.inDoubt + (valkeyCounts?.inDoubt ?? 0),
      retryPending: tableCounts.retryPending + (valkeyCounts?.retryPending ?? 0),
    };
    metrics.addMetric(UNRESOLVED_METRICS.inDoubt, MetricUnit.Count, counts.inDoubt);
    metrics.addMetric(UNRESOLVED_METRICS.retryPending, MetricUnit.Count, counts.retryPending);
    metrics.publishStoredMetrics();
    return counts;
  };
}
