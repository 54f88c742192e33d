import type { Duration } from 'aws-cdk-lib';
import {
  type Alarm,
  ComparisonOperator,
  MathExpression,
  Metric,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import { OUTBOX_METRICS } from '../../lambdas/outbox/metrics.js';

export interface OutboxAlarmsProps {
  relay: IFunction;
  /** Where the sweeper's EMF metrics go (POWERTOOLS_METRICS_NAMESPACE). */
  metricsNamespace: string;
  /** The outbox's own dimension (`METRICS_SCOPE_ENVIRONMENT`), which its functions' metrics carry. */
  scopeDimensions: Record<string, string>;
  /** The sweeper's `service` dimension (POWERTOOLS_SERVICE_NAME). */
  sweeperServiceName: string;
  /** How often the sweeper publishes its counts: the period of the stuck alarm. */
  sweepInterval: Duration;
  topic?: ITopic;
}

/** Intervals the stuck alarm looks at; all must breach (see below). */
const STUCK_EVALUATION_INTERVALS = 2;

/** What an operator must hear about: messages that are not getting out, and a relay that fails. */
export class OutboxAlarms extends Construct {
  /**
   * The outbox-age alarm of DESIGN §7: messages pending longer than `stuckAfter`. The stuck count is
   * at least 1 exactly when the oldest pending message is older than the bound, so one alarm covers
   * both; the oldest age is published for dashboards.
   */
  readonly stuckMessages: Alarm;
  /** The relay failed whole invocations; the sweeper sends their messages later. */
  readonly relayErrors: Alarm;

  /** @internal `OncelyOutbox` creates its alarms: see `OncelyOutbox.alarms`. */
  constructor(scope: Construct, id: string, props: OutboxAlarmsProps) {
    super(scope, id);
    // The sweeper publishes the count on every run, zeros included. A period without it counts as
    // one stuck message: a sweeper that does not run leaves stuck messages unsent and uncounted. It
    // is filled in, not left missing, for the reasons of `silentPeriods`: no page on a fresh deploy
    // before the first sweep, and no delay past two periods once the sweeper stops. A rate schedule
    // is not aligned to CloudWatch's periods, so a healthy sweeper can leave one period empty: the
    // alarm needs two breaching periods in a row.
    const stuck = new Metric({
      namespace: props.metricsNamespace,
      metricName: OUTBOX_METRICS.stuck,
      dimensionsMap: { service: props.sweeperServiceName, ...props.scopeDimensions },
      statistic: 'Maximum',
      period: props.sweepInterval,
    });
    this.stuckMessages = new MathExpression({
      expression: 'FILL(stuck, 1)',
      usingMetrics: { stuck },
      period: props.sweepInterval,
      label: 'Stuck outbox messages, 1 for a period without a sweep',
    }).createAlarm(this, 'StuckMessages', {
      alarmDescription:
        'Outbox messages are pending longer than stuckAfter, or the sweeper has stopped reporting: see ' +
        '`oncely outbox list --stuck` (each message’s last error) and the sweeper’s logs.',
      threshold: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: STUCK_EVALUATION_INTERVALS,
      datapointsToAlarm: STUCK_EVALUATION_INTERVALS,
      treatMissingData: TreatMissingData.IGNORE,
    });
    // Partial failures are the relay's answer, not errors: this counts invocations that failed whole
    // (no permission, the queue gone, a timeout), whose messages wait for the sweeper meanwhile.
    this.relayErrors = props.relay.metricErrors({ statistic: 'Sum' }).createAlarm(this, 'RelayErrors', {
      alarmDescription:
        'The outbox relay failed whole invocations (see its logs); the sweeper sends their messages later.',
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (props.topic) {
      const action = new SnsAction(props.topic);
      for (const alarm of [this.stuckMessages, this.relayErrors]) alarm.addAlarmAction(action);
    }
  }
}
