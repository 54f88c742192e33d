import type { Duration } from 'aws-cdk-lib';
import {
  type Alarm,
  ComparisonOperator,
  type IAlarmAction,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CONSUMER_METRICS } from '../lambdas/runtime/consumer/telemetry';

export interface PipelineAlarmsProps {
  queue: IQueue;
  deadLetterQueue: IQueue;
  consumer: IFunction;
  /** Where the consumer's EMF metrics go (POWERTOOLS_METRICS_NAMESPACE). */
  metricsNamespace: string;
  /** The consumer's `service` dimension (POWERTOOLS_SERVICE_NAME). */
  consumerServiceName: string;
  oldestMessageAgeThreshold: Duration;
  topic?: ITopic;
}

/** The four things an operator must hear about: poison, in-doubt effects, errors, a stuck queue. */
export class PipelineAlarms extends Construct {
  readonly deadLetterQueueNotEmpty: Alarm;
  readonly inDoubtRecords: Alarm;
  readonly consumerErrors: Alarm;
  readonly oldestMessageAge: Alarm;

  constructor(scope: Construct, id: string, props: PipelineAlarmsProps) {
    super(scope, id);
    const action: IAlarmAction | undefined = props.topic ? new SnsAction(props.topic) : undefined;
    const alarm = (alarmId: string, description: string, metric: Metric, threshold: number): Alarm => {
      const created = metric.createAlarm(this, alarmId, {
        alarmDescription: description,
        threshold,
        evaluationPeriods: 1,
        comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
        treatMissingData: TreatMissingData.NOT_BREACHING,
      });
      if (action) created.addAlarmAction(action);
      return created;
    };

    this.deadLetterQueueNotEmpty = alarm(
      'DeadLetterQueueNotEmpty',
      'Messages are in the DLQ: inspect them with `oncely dlq list`, fix the cause, `oncely dlq redrive`.',
      props.deadLetterQueue.metricApproximateNumberOfMessagesVisible({ statistic: 'Maximum' }),
      0,
    );
    this.inDoubtRecords = alarm(
      'InDoubtRecords',
      'An at-most-once effect may or may not have happened: check it, then `oncely in-doubt resolve`.',
      new Metric({
        namespace: props.metricsNamespace,
        metricName: CONSUMER_METRICS.inDoubt,
        dimensionsMap: { service: props.consumerServiceName },
        statistic: 'Sum',
      }),
      0,
    );
    this.consumerErrors = alarm(
      'ConsumerErrors',
      'The consumer failed whole batches (e.g. DynamoDB unreachable): see its logs.',
      props.consumer.metricErrors({ statistic: 'Sum' }),
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
