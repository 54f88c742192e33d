import type { Duration } from 'aws-cdk-lib';
import {
  type Alarm,
  ComparisonOperator,
  type CreateAlarmOptions,
  type IAlarmAction,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CONSUMER_METRICS } from '../../lambdas/consumer/telemetry.js';
import { UNRESOLVED_METRICS } from '../../lambdas/monitor/metrics.js';
import { PUBLISHER_METRICS } from '../../lambdas/publisher/metrics.js';
import { MONITOR_SILENT_INTERVALS } from './pipeline-settings.js';

export interface PipelineAlarmsProps {
  queue: IQueue;
  deadLetterQueue: IQueue;
  consumer: IFunction;
  publisher: IFunction;
  /** Where the monitor's EMF metrics go (POWERTOOLS_METRICS_NAMESPACE). */
  metricsNamespace: string;
  /** The pipeline's own dimension (`METRICS_SCOPE_ENVIRONMENT`), which its functions' metrics carry. */
  scopeDimensions: Record<string, string>;
  /** The unresolved-records monitor's `service` dimension (POWERTOOLS_SERVICE_NAME). */
  monitorServiceName: string;
  /** The consumer's `service` dimension (POWERTOOLS_SERVICE_NAME). */
  consumerServiceName: string;
  /** The publisher's `service` dimension (POWERTOOLS_SERVICE_NAME). */
  publisherServiceName: string;
  /** How often the monitor publishes its counts: the period of the alarms on them. */
  unresolvedCheckInterval: Duration;
  oldestMessageAgeThreshold: Duration;
  topic?: ITopic;
}

/**
 * The things an operator must hear about: poison, in-doubt effects (and a monitor that no longer
 * counts them), errors, a stuck queue.
 */
export class PipelineAlarms extends Construct {
  /** Messages are in the DLQ (`oncely dlq list`). */
  readonly deadLetterQueueNotEmpty: Alarm;
  /** At-most-once effects are IN_DOUBT (`oncely in-doubt list`), as the monitor counts them. */
  readonly inDoubtRecords: Alarm;
  /** The unresolved-records monitor stopped reporting: `inDoubtRecords` cannot be trusted. */
  readonly unresolvedMonitorSilent: Alarm;
  /** The consumer failed whole batches. */
  readonly consumerErrors: Alarm;
  /** A message went back to SQS but its record could not be made to outlive its dedup horizon. */
  readonly recordLivesNotExtended: Alarm;
  /** The oldest message has waited longer than `oldestMessageAgeThreshold`. */
  readonly oldestMessageAge: Alarm;
  /**
   * The publisher failed or was throttled: callers got an error instead of a result per message.
   * Requests it refused (`PublishRequestsRefused`) are not faults and do not count.
   */
  readonly publisherErrors: Alarm;
  /** A `resolve --as retry` did not finish: the record's message may not be back on the queue. */
  readonly retryPendingRecords: Alarm;

  /** @internal `OncelyPipeline` creates its alarms: see `OncelyPipeline.alarms`. */
  constructor(scope: Construct, id: string, props: PipelineAlarmsProps) {
    super(scope, id);
    const action: IAlarmAction | undefined = props.topic ? new SnsAction(props.topic) : undefined;
    const alarm = (
      alarmId: string,
      description: string,
      metric: Metric | MathExpression,
      threshold: number,
      options: Partial<CreateAlarmOptions> = {},
    ): Alarm => {
      const created = metric.createAlarm(this, alarmId, {
        alarmDescription: description,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
        ...options,
      });
      if (action) created.addAlarmAction(action);
      return created;
    };
    const monitorMetric = (statistic: string, metricName: string = UNRESOLVED_METRICS.inDoubt) =>
      new Metric({
        namespace: props.metricsNamespace,
        metricName,
        dimensionsMap: { service: props.monitorServiceName, ...props.scopeDimensions },
        statistic,
        period: props.unresolvedCheckInterval,
      });

    this.deadLetterQueueNotEmpty = alarm(
      'DeadLetterQueueNotEmpty',
      'Messages are in the DLQ: inspect them with `oncely dlq list`, fix the cause, `oncely dlq redrive`.',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum' }),
      0,
    );
    // The monitor publishes the live count every interval, so this stays raised while any IN_DOUBT
    // record exists. IGNORE: a rate schedule is not aligned to CloudWatch's periods, so a healthy
    // monitor can leave a period empty; that must neither clear a raised alarm (it would notify
    // again a period later) nor raise one. A monitor that stops reporting is the next alarm's job.
    this.inDoubtRecords = alarm(
      'InDoubtRecords',
      'At-most-once effects may or may not have happened: check each, then `oncely in-doubt resolve`.',
      monitorMetric('Maximum'),
      0,
      { treatMissingData: TreatMissingData.IGNORE },
    );
    // No count for several intervals in a row (the monitor fails, is throttled or is not invoked):
    // the in-doubt alarm above can then neither raise nor clear, so silence must not look healthy.
    this.unresolvedMonitorSilent = alarm(
      'UnresolvedMonitorSilent',
      'The unresolved-records monitor has stopped reporting, so the InDoubtRecords alarm cannot be trusted: ' +
        'see the monitor’s logs and errors, and `oncely in-doubt list` meanwhile.',
      silentPeriods(monitorMetric('SampleCount'), props.unresolvedCheckInterval),
      1,
      {
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: MONITOR_SILENT_INTERVALS,
        treatMissingData: TreatMissingData.IGNORE,
      },
    );
    this.consumerErrors = alarm(
      'ConsumerErrors',
      'The consumer failed whole batches (e.g. DynamoDB unreachable): see its logs.',
      props.consumer.metricErrors({ statistic: 'Sum' }),
      0,
    );
    // DESIGN §2: a copy going back to SQS could not make its key's record outlive its dedup horizon.
    // Its next delivery tries again; only if none ever does can a redrive after the record expired
    // run it twice, so each failure is worth an operator's look before redriving.
    this.recordLivesNotExtended = alarm(
      'RecordLivesNotExtended',
      "A message went back to SQS but its key's idempotency record could not be made to outlive its " +
        'dedup horizon: see the consumer’s logs, and do not redrive its DLQ copies after that record expired.',
      new Metric({
        namespace: props.metricsNamespace,
        metricName: CONSUMER_METRICS.recordLifeNotExtended,
        dimensionsMap: { service: props.consumerServiceName, ...props.scopeDimensions },
        statistic: 'Sum',
      }),
      0,
    );
    // DESIGN §3: as for IN_DOUBT, the monitor's live count, so it stays raised while any record's
    // retry is unfinished (its message perhaps never sent), and missing periods change nothing.
    this.retryPendingRecords = alarm(
      'RetryPendingRecords',
      'A `oncely in-doubt resolve --as retry` did not finish: the message may not be back on the queue. ' +
        'See `oncely in-doubt list`, and run the same command again.',
      monitorMetric('Maximum', UNRESOLVED_METRICS.retryPending),
      0,
      { treatMissingData: TreatMissingData.IGNORE },
    );
    // A caller of a failed or throttled invocation gets an error, not a status per message: it does
    // not know what was sent until it retries. Lambda's Errors also count the requests the publisher
    // refuses (invalid, a requestId reused with other messages, one still in progress): a caller's
    // bug or race, not a fault, so they are subtracted; the publisher counts them with the
    // invocation's timestamp, as Lambda does its Errors. Missing data (no invocations) is zero.
    this.publisherErrors = alarm(
      'PublisherErrors',
      'The publisher failed or was throttled on invocations (refused requests excluded): see its logs ' +
        'and its concurrency.',
      new MathExpression({
        expression: 'FILL(errors, 0) - FILL(refused, 0) + FILL(throttles, 0)',
        usingMetrics: {
          errors: props.publisher.metricErrors({ statistic: 'Sum' }),
          refused: new Metric({
            namespace: props.metricsNamespace,
            metricName: PUBLISHER_METRICS.refused,
            dimensionsMap: { service: props.publisherServiceName, ...props.scopeDimensions },
            statistic: 'Sum',
          }),
          throttles: props.publisher.metricThrottles({ statistic: 'Sum' }),
        },
        label: 'Publisher faults and throttles',
      }),
      0,
    );
    this.oldestMessageAge = alarm(
      'OldestMessageAge',
      'Messages wait too long: a message group is blocked or the consumer falls behind.',
      props.queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum' }),
      props.oldestMessageAgeThreshold.toSeconds(),
    );
  }
}

/**
 * `counts` with each period that has none filled with 0, for an alarm on silence. Missing data
 * itself will not do: a breaching missing point pages on a fresh deploy before the first count,
 * and CloudWatch skips missing points while its evaluation range still holds enough real ones, so
 * the alarm fires later than its periods say. A filled series has a point every period once the
 * metric has one in range; with `TreatMissingData.IGNORE`, a metric never reported (a fresh deploy)
 * leaves the alarm as it is, and one whose last report fell out of range keeps it raised.
 */
export function silentPeriods(counts: Metric, period: Duration): MathExpression {
  return new MathExpression({
    expression: 'FILL(counts, 0)',
    usingMetrics: { counts },
    period,
    label: `${counts.metricName} per period, 0 when none`,
  });
}
