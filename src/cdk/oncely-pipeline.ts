import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type CfnResource, Duration } from 'aws-cdk-lib';
import { AttributeType, BillingMode, ProjectionType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { type IGrantable, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, type IFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { CONSUMER_ENVIRONMENT } from '../../examples/shop/consumer/environment.js';
import { MONITOR_ENVIRONMENT } from '../monitor/environment.js';
import { PUBLISHER_ENVIRONMENT } from '../publisher/environment.js';
import {
  EXPIRES_AT_ATTRIBUTE,
  ID_ATTRIBUTE,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_INDEX_NAME,
  UPDATED_AT_ATTRIBUTE,
} from '../idempotency/record.js';
import { LAMBDA_BUNDLING } from './bundling.js';
import { PipelineAlarms } from './pipeline-alarms.js';
import { type PipelineSettings, type ResolvedSettings, resolveSettings } from './pipeline-settings.js';

const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Metadata key on each function's CloudFormation resource naming its TypeScript entry (relative to
 * the project root): the local sandbox runs that module in-process instead of the bundled asset.
 */
export const ENTRY_METADATA_KEY = 'oncely:entry';

export interface OncelyPipelineProps extends PipelineSettings {
  /** Where the example consumer POSTs notifications (an e-mail gateway in real life). */
  readonly notificationUrl: string;
  /** Where alarms notify; none by default (they still show in CloudWatch). */
  readonly alarmTopic?: ITopic;
  /** The functions' metrics namespace and the prefix of their `service` dimension. Default `oncely`. */
  readonly serviceName?: string;
}

/**
 * The whole Oncely pipeline (DESIGN §7): FIFO queue + FIFO DLQ, idempotency and ledger tables,
 * publisher and consumer Lambdas, the SQS event source, the scheduled monitor of unresolved records,
 * least-privilege grants and alarms.
 * Drop it into any stack; `grantPublish` lets another service invoke the publisher.
 */
export class OncelyPipeline extends Construct {
  readonly settings: ResolvedSettings;
  readonly queue: Queue;
  readonly deadLetterQueue: Queue;
  readonly idempotencyTable: Table;
  readonly ledgerTable: Table;
  readonly publisher: NodejsFunction;
  readonly consumer: NodejsFunction;
  /** Counts the unresolved idempotency records every `unresolvedCheckInterval` for the in-doubt alarm. */
  readonly unresolvedMonitor: NodejsFunction;
  /** The EventBridge schedule that runs {@link unresolvedMonitor}. */
  readonly unresolvedCheckSchedule: Rule;
  readonly alarms: PipelineAlarms;

  constructor(scope: Construct, id: string, props: OncelyPipelineProps) {
    super(scope, id);
    const settings = resolveSettings(props);
    this.settings = settings;
    const serviceName = props.serviceName ?? 'oncely';

    this.deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      fifo: true,
      retentionPeriod: settings.dlqRetention,
      maxMessageSizeBytes: settings.maxMessageSizeBytes,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      removalPolicy: settings.removalPolicy,
    });
    this.queue = new Queue(this, 'Queue', {
      fifo: true,
      // High-throughput FIFO: deduplication and throughput are per message group.
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      retentionPeriod: settings.queueRetention,
      visibilityTimeout: settings.visibilityTimeout,
      maxMessageSizeBytes: settings.maxMessageSizeBytes,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
      removalPolicy: settings.removalPolicy,
    });

    this.idempotencyTable = this.#table('IdempotencyTable', settings, EXPIRES_AT_ATTRIBUTE);
    // Sparse: only records an operator must resolve carry the key, so listing them never scans.
    this.idempotencyTable.addGlobalSecondaryIndex({
      indexName: UNRESOLVED_INDEX_NAME,
      partitionKey: { name: UNRESOLVED_ATTRIBUTE, type: AttributeType.STRING },
      sortKey: { name: UPDATED_AT_ATTRIBUTE, type: AttributeType.NUMBER },
      projectionType: ProjectionType.ALL,
    });
    this.ledgerTable = this.#table('LedgerTable', settings);

    this.publisher = this.#function('Publisher', 'publisher', {
      timeout: Duration.seconds(30),
      memorySize: 256,
      environment: {
        [PUBLISHER_ENVIRONMENT.queueUrl]: this.queue.queueUrl,
        // The same figure as the queue's limit, so the publisher refuses exactly what SQS would.
        [PUBLISHER_ENVIRONMENT.queueMaxMessageBytes]: String(settings.maxMessageSizeBytes),
        [PUBLISHER_ENVIRONMENT.idempotencyTableName]: this.idempotencyTable.tableName,
        [PUBLISHER_ENVIRONMENT.idempotencyTtlSeconds]: String(settings.idempotencyTtl.toSeconds()),
        POWERTOOLS_SERVICE_NAME: `${serviceName}-publisher`,
      },
    });
    this.consumer = this.#function('Consumer', 'consumer', {
      timeout: settings.consumerTimeout,
      memorySize: settings.consumerMemoryMiB,
      environment: {
        [CONSUMER_ENVIRONMENT.idempotencyTableName]: this.idempotencyTable.tableName,
        [CONSUMER_ENVIRONMENT.idempotencyTtlSeconds]: String(settings.idempotencyTtl.toSeconds()),
        [CONSUMER_ENVIRONMENT.ledgerTableName]: this.ledgerTable.tableName,
        [CONSUMER_ENVIRONMENT.dlqUrl]: this.deadLetterQueue.queueUrl,
        [CONSUMER_ENVIRONMENT.queueUrl]: this.queue.queueUrl,
        [CONSUMER_ENVIRONMENT.notificationUrl]: props.notificationUrl,
        [CONSUMER_ENVIRONMENT.maxConcurrentGroups]: String(settings.maxConcurrentGroups),
        [CONSUMER_ENVIRONMENT.notificationMode]: settings.notificationMode,
        POWERTOOLS_SERVICE_NAME: `${serviceName}-consumer`,
        POWERTOOLS_METRICS_NAMESPACE: serviceName,
      },
    });
    this.consumer.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: settings.batchSize,
        reportBatchItemFailures: true,
        maxConcurrency: settings.maxConcurrency,
      }),
    );
    this.unresolvedMonitor = this.#function('Monitor', 'monitor', {
      timeout: Duration.minutes(1),
      memorySize: 256,
      environment: {
        [MONITOR_ENVIRONMENT.idempotencyTableName]: this.idempotencyTable.tableName,
        POWERTOOLS_SERVICE_NAME: `${serviceName}-monitor`,
        POWERTOOLS_METRICS_NAMESPACE: serviceName,
      },
    });
    this.unresolvedCheckSchedule = new Rule(this, 'UnresolvedCheckSchedule', {
      description: 'Runs the unresolved-records monitor, whose counts keep the in-doubt alarm current.',
      schedule: Schedule.rate(settings.unresolvedCheckInterval),
      // A count older than one interval is superseded by the next run: not worth EventBridge's retries.
      targets: [
        new LambdaFunction(this.unresolvedMonitor, { maxEventAge: settings.unresolvedCheckInterval }),
      ],
    });
    this.#grantLeastPrivilege();

    this.alarms = new PipelineAlarms(this, 'Alarms', {
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      consumer: this.consumer,
      metricsNamespace: serviceName,
      monitorServiceName: `${serviceName}-monitor`,
      unresolvedCheckInterval: settings.unresolvedCheckInterval,
      oldestMessageAgeThreshold: settings.oldestMessageAgeThreshold,
      topic: props.alarmTopic,
    });
  }

  /** Lets another service's role or function publish by invoking the publisher. */
  grantPublish(grantee: IGrantable) {
    return this.publisher.grantInvoke(grantee);
  }

  #table(id: string, settings: ResolvedSettings, timeToLiveAttribute?: string): Table {
    return new Table(this, id, {
      partitionKey: { name: ID_ATTRIBUTE, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute,
      deletionProtection: settings.deletionProtection,
      removalPolicy: settings.removalPolicy,
    });
  }

  #function(
    id: string,
    folder: string,
    options: { timeout: Duration; memorySize: number; environment: Record<string, string> },
  ): NodejsFunction {
    // Its own role, allowed to write only its own log group (instead of AWS's managed policy,
    // which may create any log group in the account).
    const logGroup = new LogGroup(this, `${id}Logs`, {
      retention: RetentionDays.ONE_MONTH,
      removalPolicy: this.settings.removalPolicy,
    });
    const role = new Role(this, `${id}Role`, { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    const entry = join('lambdas', folder, 'handler.ts');
    const fn = new NodejsFunction(this, id, {
      entry: join(PROJECT_ROOT, entry),
      role,
      logGroup,
      handler: 'handler',
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      timeout: options.timeout,
      memorySize: options.memorySize,
      environment: { ...options.environment, NODE_OPTIONS: '--enable-source-maps' },
      // Minified ESM for node24 with names kept (error names survive): see lib/bundling.ts.
      bundling: LAMBDA_BUNDLING,
    });
    (fn.node.defaultChild as CfnResource).addMetadata(ENTRY_METADATA_KEY, entry);
    return fn;
  }

  /** Each function gets exactly the actions it uses, on exactly its resources. */
  #grantLeastPrivilege(): void {
    allow(this.publisher, ['sqs:SendMessage'], [this.queue.queueArn]);
    allow(this.publisher, ['dynamodb:PutItem', 'dynamodb:UpdateItem'], [this.idempotencyTable.tableArn]);
    allow(this.consumer, ['sqs:SendMessage'], [this.deadLetterQueue.queueArn]);
    allow(
      this.consumer,
      ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
      [this.idempotencyTable.tableArn],
    );
    // Transactional mode: TransactWriteItems is authorised per item action (the ledger puts and updates).
    allow(this.consumer, ['dynamodb:PutItem', 'dynamodb:UpdateItem'], [this.ledgerTable.tableArn]);
    // Only the sparse index: the monitor counts unresolved records and never reads the table itself.
    allow(
      this.unresolvedMonitor,
      ['dynamodb:Query'],
      [`${this.idempotencyTable.tableArn}/index/${UNRESOLVED_INDEX_NAME}`],
    );
  }
}

function allow(fn: IFunction, actions: string[], resources: string[]): void {
  fn.addToRolePolicy(new PolicyStatement({ actions, resources }));
}
