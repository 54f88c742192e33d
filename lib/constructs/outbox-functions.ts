import { Duration, Validations } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import type { IRole } from 'aws-cdk-lib/aws-iam';
import { FilterCriteria, FilterRule, StartingPosition } from 'aws-cdk-lib/aws-lambda';
import { DynamoEventSource, SqsDlq } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { OUTBOX_ENVIRONMENT } from '../../lambdas/outbox/environment.js';
import { OUTBOX_ATTRIBUTES, PENDING_PARTITION } from '../../lambdas/outbox/layout.js';
import { oncelyFunction } from './oncely-function.js';
import type { ResolvedOutboxSettings } from './outbox-settings.js';
import { packageEntry } from './package-entries.js';

export interface OutboxFunctionProps {
  table: Table;
  settings: ResolvedOutboxSettings;
  /** What both functions read: the table, its keys, the queue, the metrics namespace. */
  environment: Record<string, string>;
  /** Their `service` dimension, `<name>-relay` and `<name>-sweeper`. */
  serviceName: string;
}

/**
 * The relay's event filter. Only a new pending marker says there is something to send; every other
 * write to the table (SENT marks, claims, your own items) never invokes the relay. Exported for the
 * fleet bench, which runs the relay's mapping locally as the construct declares it.
 */
export const RELAY_FILTER = FilterCriteria.filter({
  eventName: FilterRule.isEqual('INSERT'),
  dynamodb: {
    // `PENDING`, or a shard of it, `PENDING#<s>` (DESIGN §9.1).
    NewImage: { [OUTBOX_ATTRIBUTES.pending]: { S: FilterRule.beginsWith(PENDING_PARTITION) } },
  },
});

/**
 * The relay, invoked by the table's stream with new pending markers only, and the queue that keeps
 * the description of each batch Lambda gave up on (its messages stay pending, for the sweeper).
 */
export function createOutboxRelay(
  scope: Construct,
  { table, settings, environment, serviceName }: OutboxFunctionProps,
): { relay: NodejsFunction; failureQueue: Queue } {
  const relay = oncelyFunction(scope, 'Relay', packageEntry('../../lambdas/outbox/relay-handler'), {
    timeout: Duration.minutes(1),
    memorySize: 256,
    removalPolicy: settings.removalPolicy,
    environment: { ...environment, POWERTOOLS_SERVICE_NAME: `${serviceName}-relay` },
  });
  const failureQueue = new Queue(scope, 'RelayFailures', {
    retentionPeriod: Duration.days(14),
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    removalPolicy: settings.removalPolicy,
  });
  Validations.of(failureQueue).acknowledge({
    id: 'AwsSolutions-SQS3',
    reason:
      'The on-failure destination of the relay’s event source: itself a dead-letter queue (of stream ' +
      'batches, read by operators), so it has no DLQ of its own.',
  });
  relay.addEventSource(
    new DynamoEventSource(table, {
      startingPosition: StartingPosition.TRIM_HORIZON,
      batchSize: settings.relayBatchSize,
      retryAttempts: settings.relayRetryAttempts,
      parallelizationFactor: settings.relayParallelization,
      reportBatchItemFailures: true,
      onFailure: new SqsDlq(failureQueue),
      filters: [RELAY_FILTER],
    }),
  );
  Validations.of(relay.role as IRole).acknowledge({
    id: 'AwsSolutions-IAM5[Resource::*]',
    reason:
      'dynamodb:ListStreams, which the DynamoEventSource grants for Lambda to find the stream, applies to no ' +
      'resource IAM can name; the stream’s records are readable from this table’s stream only.',
  });
  return { relay, failureQueue };
}

/** The sweeper, with its bounds, and the EventBridge schedule that runs it every `sweepInterval`. */
export function createOutboxSweeper(
  scope: Construct,
  { settings, environment, serviceName }: OutboxFunctionProps,
): { sweeper: NodejsFunction; schedule: Rule } {
  const sweeper = oncelyFunction(scope, 'Sweeper', packageEntry('../../lambdas/outbox/sweeper-handler'), {
    timeout: Duration.minutes(1),
    memorySize: 256,
    removalPolicy: settings.removalPolicy,
    environment: {
      ...environment,
      [OUTBOX_ENVIRONMENT.sweepAfterSeconds]: String(settings.sweepAfter.toSeconds()),
      [OUTBOX_ENVIRONMENT.stuckAfterSeconds]: String(settings.stuckAfter.toSeconds()),
      POWERTOOLS_SERVICE_NAME: `${serviceName}-sweeper`,
    },
  });
  const schedule = new Rule(scope, 'SweepSchedule', {
    description: 'Runs the outbox sweeper: it sends what the relay left pending and counts stuck messages.',
    schedule: Schedule.rate(settings.sweepInterval),
    // A run older than one interval is superseded by the next: not worth EventBridge's retries.
    targets: [new LambdaFunction(sweeper, { maxEventAge: settings.sweepInterval })],
  });
  return { sweeper, schedule };
}
