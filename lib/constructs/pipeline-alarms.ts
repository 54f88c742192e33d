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

  readonly #props: PipelineAlarmsProps;
  readonly #action: IAlarmAction | undefined;

  /** @internal `OncelyPipeline` creates its alarms: see `OncelyPipeline.alarms`. */
  constructor(scope: Construct, id: string, props: PipelineAlarmsProps) {
    super(scope, id);
    this.#props = props;
    this.#action = props.topic ? new SnsAction(props.topic) : undefined;
    this.deadLetterQueueNotEmpty = this.#deadLetterQueueNotEmpty();
    this.inDoubtRecords = this.#inDoubtRecords();
    this.unresolvedMonitorSilent = this.#unresolvedMonitorSilent();
    this.consumerErrors = this.#consumerErrors();
    this.recordLivesNotExtended = this.#recordLivesNotExtended();
    this.retryPendingRecords = this.#retryPendingRecords();
    this.publisherErrors = this.#publisherErrors();
    this.oldestMessageAge = this.#oldestMessageAge();
  }

  #deadLetterQueueNotEmpty(): Alarm {
    return this.#alarm(
      'DeadLetterQueueNotEmpty',
      'Messages are in the DLQ: inspect them with `oncely dlq list`, fix the cause, `oncely dlq redrive`.',
      this.#props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum' }),
      0,
    );
  }

  /**
   * The monitor publishes the live count every interval, so this stays raised while any IN_DOUBT
   * record exists. IGNORE: a rate schedule is not aligned to CloudWatch's periods, so a healthy
   * monitor can leave a period empty; that must neither clear a raised alarm (it would notify
   * again a period later) nor raise one. A monitor that stops reporting is the next alarm's job.
   */
  #inDoubtRecords(): Alarm {
    return this.#alarm(
      'InDoubtRecords',
      'At-most-once effects may or may not have happened: check each, then `oncely in-doubt resolve`.',
      this.#monitorMetric('Maximum'),
      0,
      { treatMissingData: TreatMissingData.IGNORE },
    );
  }

  /**
   * No count for several intervals in a row (the monitor fails, is throttled or is not invoked):
   * the in-doubt alarm can then neither raise nor clear, so silence must not look healthy.
   */
  #unresolvedMonitorSilent(): Alarm {
    return this.#alarm(
      'UnresolvedMonitorSilent',
      'The unresolved-records monitor has stopped reporting, so the InDoubtRecords alarm cannot be trusted: ' +
        'see the monitor’s logs and errors, and `oncely in-doubt list` meanwhile.',
      silentPeriods(this.#monitorMetric('SampleCount'), this.#props.unresolvedCheckInterval),
      1,
      {
        comparisonOperator: ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluationPeriods: MONITOR_SILENT_INTERVALS,
        treatMissingData: TreatMissingData.IGNORE,
      },
    );
  }

  #consumerErrors(): Alarm {
    return this.#alarm(
      'ConsumerErrors',
      'The consumer failed whole batches (e.g. DynamoDB unreachable): see its logs.',
      this.#props.consumer.metricErrors({ statistic: 'Sum' }),
      0,
    );
  }

  /**
   * DESIGN §2: a copy going back to SQS could not make its key's record outlive its dedup horizon.
   * Its next delivery tries again; only if none ever does can a redrive after the record expired
   * run it twice, so each failure is worth an operator's look before redriving.
   */
  #recordLivesNotExtended(): Alarm {
    return this.#alarm(
      'RecordLivesNotExtended',
      "A message went back to SQS but its key's idempotency record could not be made to outlive its " +
        'dedup horizon: see the consumer’s logs, and do not redrive its DLQ copies after that record expired.',
      this.#serviceMetric(this.#props.consumerServiceName, CONSUMER_METRICS.recordLifeNotExtended),
      0,
    );
  }

  /**
   * DESIGN §3: as for IN_DOUBT, the monitor's live count, so it stays raised while any record's
   * retry is unfinished (its message perhaps never sent), and missing periods change nothing.
   */
  #retryPendingRecords(): Alarm {
    return this.#alarm(
      'RetryPendingRecords',
      'A `oncely in-doubt resolve --as retry` did not finish: the message may not be back on the queue. ' +
        'See `oncely in-doubt list`, and run the same command again.',
      this.#monitorMetric('Maximum', UNRESOLVED_METRICS.retryPending),
      0,
      { treatMissingData: TreatMissingData.IGNORE },
    );
  }

  /**
   * A caller of a failed or throttled invocation gets an error, not a status per message: it does
   * not know what was sent until it retries. Lambda's Errors also count the requests the publisher
   * refuses (invalid, a requestId reused with other messages, one still in progress): a caller's
   * bug or race, not a fault, so they are subtracted; the publisher counts them with the
   * invocation's timestamp, as Lambda does its Errors. Missing data (no invocations) is zero.
   */
  #publisherErrors(): Alarm {
    const { publisher, publisherServiceName } = this.#props;
    return this.#alarm(
      'PublisherErrors',
      'The publisher failed or was throttled on invocations (refused requests excluded): see its logs ' +
        'and its concurrency.',
      new MathExpression({
        expression: 'FILL(errors, 0) - FILL(refused, 0) + FILL(throttles, 0)',
        usingMetrics: {
          errors: publisher.metricErrors({ statistic: 'Sum' }),
          refused: this.#serviceMetric(publisherServiceName, PUBLISHER_METRICS.refused),
          throttles: publisher.metricThrottles({ statistic: 'Sum' }),
        },
        label: 'Publisher faults and throttles',
      }),
      0,
    );
  }

  #oldestMessageAge(): Alarm {
    return this.#alarm(
      'OldestMessageAge',
      'Messages wait too long: a message group is blocked or the consumer falls behind.',
      this.#props.queue.metricApproximateAgeOfOldestMessage({ statistic: 'Maximum' }),
      this.#props.oldestMessageAgeThreshold.toSeconds(),
    );
  }

  /** Raised above `threshold` for one period, missing data not breaching, unless `options` say otherwise. */
  #alarm(
    alarmId: string,
    description: string,
    metric: Metric | MathExpression,
    threshold: number,
    options: Partial<CreateAlarmOptions> = {},
  ): Alarm {
    const created = metric.createAlarm(this, alarmId, {
      alarmDescription: description,
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      ...options,
    });
    if (this.#action) created.addAlarmAction(this.#action);
    return created;
  }

  /** A count the unresolved-records monitor publishes every `unresolvedCheckInterval`. */
  #monitorMetric(statistic: string, metricName: string = UNRESOLVED_METRICS.inDoubt): Metric {
    return new Metric({
      namespace: this.#props.metricsNamespace,
      metricName,
      dimensionsMap: { service: this.#props.monitorServiceName, ...this.#props.scopeDimensions },
      statistic,
      period: this.#props.unresolvedCheckInterval,
    });
  }

  /** The sum of a metric one of the pipeline's functions (`serviceName`) publishes. */
  #serviceMetric(serviceName: string, metricName: string): Metric {
    return new Metric({
      namespace: this.#props.metricsNamespace,
      metricName,
      dimensionsMap: { service: serviceName, ...this.#props.scopeDimensions },
      statistic: 'Sum',
    });
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
