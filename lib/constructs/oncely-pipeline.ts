import { CfnOutput, Duration } from 'aws-cdk-lib';
import {
  AttributeType,
  BillingMode,
  type ITable,
  ProjectionType,
  Table,
  TableEncryption,
} from 'aws-cdk-lib/aws-dynamodb';
import type { IVpc } from 'aws-cdk-lib/aws-ec2';
import { Rule, Schedule } from 'aws-cdk-lib/aws-events';
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets';
import { type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IKey } from 'aws-cdk-lib/aws-kms';
import { type IFunction, Function as LambdaFunctionResource } from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type { NodejsFunction, NodejsFunctionProps } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import {
  DeduplicationScope,
  FifoThroughputLimit,
  type IQueue,
  Queue,
  QueueEncryption,
} from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type KnownKeys, unknownKeyProblems } from '../../lambdas/common/known-keys.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import {
  EXPIRES_AT_ATTRIBUTE,
  ID_ATTRIBUTE,
  LEGACY_UNRESOLVED_INDEX_NAME,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_INDEX_ATTRIBUTES,
  UNRESOLVED_INDEX_NAME,
  UPDATED_AT_ATTRIBUTE,
} from '../../lambdas/idempotency/record.js';
import { MONITOR_ENVIRONMENT } from '../../lambdas/monitor/environment.js';
import { PUBLISHER_ENVIRONMENT } from '../../lambdas/publisher/environment.js';
import { constructScope } from './construct-scope.js';
import { invalidProps, refuseUnknownProps } from './invalid-props.js';
import { LeaseRecordsNetwork, type LeaseRecordsStore } from './lease-records-network.js';
import { leaseRecordsProblems, vpcAccessStatement } from './lease-records-props.js';
import { type OncelyFunctionOptions, oncelyFunction } from './oncely-function.js';
import { outputPrefixProblems } from './output-prefix.js';
import { packageEntry } from './package-entries.js';
import { assertGrantable, passedConsumerProblems, reservedConcurrencyProblems } from './passed-function.js';
import { PipelineAlarms } from './pipeline-alarms.js';
import {
  PIPELINE_CACHE_OUTPUTS,
  PIPELINE_LOG_GROUP_OUTPUTS,
  PIPELINE_OUTPUTS,
  type PipelineOutputKey,
} from './pipeline-outputs.js';
import {
  PIPELINE_SETTINGS_KEYS,
  type PipelineSettings,
  pipelineSettingsProblems,
  type ResolvedSettings,
  resolveSettings,
} from './pipeline-settings.js';
import { recordStatement } from './record-grants.js';
import { ValkeyLeaseCache } from './valkey-lease-cache.js';

/** The module that provides a consumer's default Valkey store (`leaseRecords: 'valkey'`). */
const VALKEY_DEFAULT_STORE_ENTRY = '../../lambdas/consumer/valkey-default-store';
/** The module that lets the monitor count the cache's unresolved records (`leaseRecords: 'valkey'`). */
const VALKEY_DEFAULT_COUNTER_ENTRY = '../../lambdas/monitor/valkey-default-counter';

/** Your consumer, built by the construct: the handler's file and the NodejsFunction options you want. */
export interface OncelyConsumerEntry
  extends Omit<NodejsFunctionProps, 'entry' | 'role' | 'logGroup' | 'timeout' | 'memorySize' | 'runtime'> {
  /**
   * Your handler's file (TypeScript or JavaScript), e.g. `src/consumer.ts`, bundled like Oncely's
   * own functions (`LAMBDA_BUNDLING` under your `bundling` options: esbuild, an ES module with the
   * AWS SDK inside, minified with names kept, Node.js 24, ARM64 unless you say otherwise).
   */
  readonly entry: string;
  /**
   * The exported handler.
   * @default 'handler'
   */
  readonly handler?: string;
}

/** Your consumer, built by you: the construct attaches the queue to it and grants it what it needs. */
export interface OncelyConsumerFunction {
  /**
   * The function. If it is a `lambda.Function` (NodejsFunction included), the construct sets its
   * environment; otherwise set it yourself (see {@link OncelyPipeline.consumerEnvironment}). It
   * needs a role for the grants (import one with `Function.fromFunctionAttributes({ functionArn, role })`),
   * and a timeout of at most the visibility timeout ÷ 6: set `consumerTimeout` to its timeout. The
   * synth fails otherwise.
   */
  readonly function: IFunction;
}

/** An `OncelyPipeline`: your consumer, where alarms go, and the `PipelineSettings`. */
export interface OncelyPipelineProps extends PipelineSettings {
  /** The Lambda that consumes the queue: its entry file, or a function you built. Required. */
  readonly consumer: OncelyConsumerEntry | OncelyConsumerFunction;
  /**
   * Where alarms notify.
   * @default none (the alarms still show in CloudWatch)
   */
  readonly alarmTopic?: ITopic;
  /**
   * The functions' metrics namespace and the prefix of their `service` dimension.
   * @default 'oncely'
   */
  readonly serviceName?: string;
  /**
   * Put before the logical ids of the stack outputs the pipeline adds (`PublisherFunctionName`, …):
   * needed only for a second pipeline in one stack. Letters and digits only.
   * @default '' (none)
   */
  readonly outputPrefix?: string;
  /**
   * A customer-managed KMS key that encrypts the queue, the DLQ and the idempotency table (and,
   * with `leaseRecords: 'valkey'`, the cache's data at rest); the pipeline's functions are granted its use. The key's policy must let SQS and DynamoDB use it
   * (a key made with `new kms.Key(...)` in the same account does).
   * @default none: SQS-managed encryption for the queues, an AWS-owned key for the table
   */
  readonly encryptionKey?: IKey;
  /**
   * Where the consumer keeps its lease-mode records (DESIGN §3.1). `'valkey'`: in an ElastiCache
   * Serverless cache for Valkey the construct provisions, reached over TLS with IAM authentication,
   * for consumers whose effects are not DynamoDB writes and who would rather pay Valkey's round trip
   * than DynamoDB's. The consumer then runs in a VPC (`vpc`); transactional operations still keep
   * their records in the idempotency table, as do the publisher and the monitor. Needs a
   * `consumer.entry` (the construct must place the function in the VPC). docs/construct.md says
   * what it provisions and costs.
   * @default 'dynamodb': the idempotency table, and no VPC
   */
  readonly leaseRecords?: LeaseRecordsStore;
  /**
   * With `leaseRecords: 'valkey'`: the VPC of the cache and the consumer, which go in its private
   * isolated subnets (else its private subnets with egress), one per AZ.
   * @default a new VPC of 2 AZs with private isolated subnets only: no internet gateway, no NAT gateway
   */
  readonly vpc?: IVpc;
  /**
   * With `leaseRecords: 'valkey'`: add the VPC endpoints the consumer reaches AWS through (a DynamoDB
   * gateway endpoint, an SQS interface endpoint). Set `false` when your `vpc` has them already, or a
   * NAT gateway: a second SQS endpoint with private DNS in one VPC fails to deploy.
   * @default true
   */
  readonly vpcEndpoints?: boolean;
}

const PIPELINE_PROP_KEYS = {
  ...PIPELINE_SETTINGS_KEYS,
  consumer: true,
  alarmTopic: true,
  serviceName: true,
  outputPrefix: true,
  encryptionKey: true,
  leaseRecords: true,
  vpc: true,
  vpcEndpoints: true,
} satisfies KnownKeys<OncelyPipelineProps>;

const CONSUMER_FUNCTION_KEYS = { function: true } satisfies KnownKeys<OncelyConsumerFunction>;

/**
 * The props' unknown keys, and a built consumer's. An `OncelyConsumerEntry`'s are CDK's
 * `NodejsFunctionProps`, which CDK does not check either: they are left to the compiler.
 */
function unknownPipelineProps(props: OncelyPipelineProps): string[] {
  const consumer: object | undefined = props.consumer;
  return [
    ...unknownKeyProblems(props, PIPELINE_PROP_KEYS, 'prop'),
    ...(consumer && 'function' in consumer
      ? unknownKeyProblems(consumer, CONSUMER_FUNCTION_KEYS, 'consumer prop')
      : []),
  ];
}

/**
 * The Oncely pipeline (DESIGN §7) around your consumer: FIFO queue + FIFO DLQ (or, with
 * `queueType: 'standard'`, standard ones), the idempotency table with its index of unresolved
 * records, the publisher Lambda, the SQS event source with partial batch responses, the scheduled
 * monitor of unresolved records, least-privilege grants, alarms and stack outputs. Your consumer's
 * environment tells `fifoBatch` (or `standardBatch`) everything it needs. With
 * `leaseRecords: 'valkey'`, also an ElastiCache Serverless cache for the consumer's lease records,
 * and the VPC and endpoints the consumer reaches it and AWS through.
 * `grantPublish` lets another service publish; `grantIdempotency` lets another function use the core.
 *
 * @example
 * ```ts
 * import { OncelyPipeline } from 'oncely/cdk';
 *
 * const pipeline = new OncelyPipeline(this, 'Pipeline', { consumer: { entry: 'src/consumer.ts' } });
 * pipeline.grantPublish(orderService);
 * ```
 */
export class OncelyPipeline extends Construct {
  /** The settings with their defaults filled in. */
  readonly settings: ResolvedSettings;
  /** The queue (FIFO, or standard) the publisher sends to and the consumer reads. */
  readonly queue: IQueue;
  /** The dead-letter queue, of the queue's type: records that cannot succeed, and messages past `maxReceiveCount`. */
  readonly deadLetterQueue: IQueue;
  /** The idempotency table (DESIGN §3). */
  readonly idempotencyTable: ITable;
  /** The publisher Lambda that `oncely/client`'s `publish` invokes. */
  readonly publisher: IFunction;
  /** Your consumer: the function built from `consumer.entry`, or the one you gave. */
  readonly consumer: IFunction;
  /** Counts the unresolved idempotency records every `unresolvedCheckInterval` for the in-doubt alarm. */
  readonly unresolvedMonitor: IFunction;
  /** The EventBridge schedule that runs {@link OncelyPipeline.unresolvedMonitor}. */
  readonly unresolvedCheckSchedule: Rule;
  /** The pipeline's alarms, notifying `alarmTopic` when given. */
  readonly alarms: PipelineAlarms;
  /** The customer-managed key of the queues and the table, when `encryptionKey` gave one. */
  readonly encryptionKey?: IKey;
  /** The environment the consumer reads (`CONSUMER_ENVIRONMENT`): set on it by the construct when it can. */
  readonly consumerEnvironment: Readonly<Record<string, string>>;
  /** With `leaseRecords: 'valkey'`: the cache keeping the consumer's lease records, its security group and user. */
  readonly leaseRecordsCache?: ValkeyLeaseCache;
  /** With `leaseRecords: 'valkey'`: the consumer's VPC, its subnets, security group and endpoints. */
  readonly leaseRecordsNetwork?: LeaseRecordsNetwork;

  constructor(scope: Construct, id: string, props: OncelyPipelineProps) {
    super(scope, id);
    refuseUnknownProps('OncelyPipeline', this, unknownPipelineProps(props));
    const settings = resolveSettings(props);
    const problems = [
      ...pipelineSettingsProblems(settings, props),
      ...('function' in props.consumer
        ? passedConsumerProblems(props.consumer.function, settings)
        : reservedConcurrencyProblems(props.consumer.reservedConcurrentExecutions, settings.maxConcurrency)),
      ...outputPrefixProblems(props.outputPrefix),
      ...leaseRecordsProblems(props),
    ];
    if (problems.length > 0) throw invalidProps('OncelyPipeline', this, problems);
    this.settings = settings;
    const serviceName = props.serviceName ?? 'oncely';
    // Every metric the pipeline's functions publish carries it, and its alarms select it.
    const scopeName = constructScope(this);
    const telemetryOf = (role: string) => ({
      POWERTOOLS_SERVICE_NAME: `${serviceName}-${role}`,
      POWERTOOLS_METRICS_NAMESPACE: serviceName,
      [METRICS_SCOPE_ENVIRONMENT.pipeline]: scopeName,
    });
    this.encryptionKey = props.encryptionKey;
    const { queue, deadLetterQueue } = this.#queues();
    this.deadLetterQueue = deadLetterQueue;
    this.queue = queue;
    this.idempotencyTable = this.#idempotencyTable();
    this.publisher = this.#publisher(telemetryOf('publisher'));
    if (props.leaseRecords === 'valkey') {
      this.leaseRecordsNetwork = new LeaseRecordsNetwork(this, 'LeaseRecordsNetwork', {
        vpc: props.vpc,
        vpcEndpoints: props.vpcEndpoints ?? true,
      });
      this.leaseRecordsCache = new ValkeyLeaseCache(this, 'LeaseRecordsCache', {
        vpc: this.leaseRecordsNetwork.vpc,
        subnets: this.leaseRecordsNetwork.subnets,
        clientSecurityGroup: this.leaseRecordsNetwork.consumerSecurityGroup,
        removalPolicy: settings.removalPolicy,
        encryptionKey: this.encryptionKey,
      });
    }
    this.consumerEnvironment = this.#consumerEnvironmentOf(telemetryOf('consumer'));
    this.consumer = this.#consumer(props.consumer);
    this.#feedConsumer();
    this.unresolvedMonitor = this.#unresolvedMonitor(telemetryOf('monitor'));
    this.unresolvedCheckSchedule = this.#unresolvedCheckSchedule();
    this.#grantLeastPrivilege();
    this.alarms = this.#alarms(serviceName, scopeName, props.alarmTopic);
    this.#addOutputs(props.outputPrefix ?? '');
  }

  /** Lets another service's role or function publish by invoking the publisher; a function without a role is refused. */
  grantPublish(grantee: IGrantable) {
    assertGrantable(grantee, 'grantPublish: the grantee');
    return this.publisher.grantInvoke(grantee);
  }

  /**
   * Lets another function of yours use the idempotency core on the pipeline's table (lease and
   * transactional mode, request idempotency): the requests it makes, on every record but the
   * publisher's and the consumer's DLQ marks, and — for a `lambda.Function` — the table's name and
   * TTL in `IDEMPOTENCY_TABLE_NAME` / `IDEMPOTENCY_TTL_SECONDS`. A function without a role is refused.
   */
  grantIdempotency(fn: IFunction): void {
    assertGrantable(fn, 'grantIdempotency: the function');
    fn.addToRolePolicy(recordStatement('core', this.idempotencyTable.tableArn));
    this.encryptionKey?.grantEncryptDecrypt(fn);
    if (fn instanceof LambdaFunctionResource) {
      for (const name of [
        CONSUMER_ENVIRONMENT.idempotencyTableName,
        CONSUMER_ENVIRONMENT.idempotencyTtlSeconds,
      ]) {
        fn.addEnvironment(name, this.consumerEnvironment[name] as string);
      }
    }
  }

  /**
   * High-throughput FIFO, the DLQ too (a poison storm on a busy pipeline must not be throttled at
   * 300 sends a second): deduplication and throughput are per message group. A standard queue has
   * neither setting, nor one for fairness: a message with a MessageGroupId makes it fair. A FIFO
   * queue's DLQ must be FIFO; a standard queue's must be standard.
   */
  #queues(): { queue: Queue; deadLetterQueue: Queue } {
    const { settings } = this;
    const queueKind =
      settings.queueType === 'fifo'
        ? {
            fifo: true,
            deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
            fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
          }
        : {};
    const encryption = this.encryptionKey
      ? { encryption: QueueEncryption.KMS, encryptionMasterKey: this.encryptionKey }
      : { encryption: QueueEncryption.SQS_MANAGED };
    const deadLetterQueue = new Queue(this, 'DeadLetterQueue', {
      ...queueKind,
      retentionPeriod: settings.dlqRetention,
      maxMessageSizeBytes: settings.maxMessageSizeBytes,
      ...encryption,
      enforceSSL: true,
      removalPolicy: settings.removalPolicy,
    });
    const queue = new Queue(this, 'Queue', {
      ...queueKind,
      retentionPeriod: settings.queueRetention,
      visibilityTimeout: settings.visibilityTimeout,
      maxMessageSizeBytes: settings.maxMessageSizeBytes,
      ...encryption,
      enforceSSL: true,
      deadLetterQueue: { queue: deadLetterQueue, maxReceiveCount: settings.maxReceiveCount },
      removalPolicy: settings.removalPolicy,
    });
    return { queue, deadLetterQueue };
  }

  /** The idempotency table (DESIGN §3) with its index of unresolved records. */
  #idempotencyTable(): Table {
    const table = new Table(this, 'IdempotencyTable', {
      partitionKey: { name: ID_ATTRIBUTE, type: AttributeType.STRING },
      billingMode: BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: EXPIRES_AT_ATTRIBUTE,
      ...(this.encryptionKey
        ? { encryption: TableEncryption.CUSTOMER_MANAGED, encryptionKey: this.encryptionKey }
        : {}),
      deletionProtection: this.settings.deletionProtection,
      removalPolicy: this.settings.removalPolicy,
    });
    // Sparse: only records an operator must resolve carry the key, so listing them never scans.
    // It projects what the monitor and `in-doubt list` read, not the kept messages, which counting
    // would otherwise read too (docs/capacity.md).
    table.addGlobalSecondaryIndex({
      indexName: UNRESOLVED_INDEX_NAME,
      partitionKey: { name: UNRESOLVED_ATTRIBUTE, type: AttributeType.STRING },
      sortKey: { name: UPDATED_AT_ATTRIBUTE, type: AttributeType.NUMBER },
      projectionType: ProjectionType.INCLUDE,
      nonKeyAttributes: [...UNRESOLVED_INDEX_ATTRIBUTES],
    });
    // The earlier versions' index, projecting everything: CloudFormation creates or deletes one
    // index per table update, so it goes in the next version; readers fall back on it meanwhile.
    table.addGlobalSecondaryIndex({
      indexName: LEGACY_UNRESOLVED_INDEX_NAME,
      partitionKey: { name: UNRESOLVED_ATTRIBUTE, type: AttributeType.STRING },
      sortKey: { name: UPDATED_AT_ATTRIBUTE, type: AttributeType.NUMBER },
      projectionType: ProjectionType.ALL,
    });
    return table;
  }

  /** `telemetry`: its Powertools service name and namespace, and the pipeline's metrics scope. */
  #publisher(telemetry: Record<string, string>): NodejsFunction {
    return this.#function('Publisher', packageEntry('../../lambdas/publisher/handler'), {
      timeout: Duration.seconds(30),
      memorySize: 256,
      environment: {
        [PUBLISHER_ENVIRONMENT.queueUrl]: this.queue.queueUrl,
        // The same figure as the queue's limit, so the publisher refuses exactly what SQS would.
        [PUBLISHER_ENVIRONMENT.queueMaxMessageBytes]: String(this.settings.maxMessageSizeBytes),
        [PUBLISHER_ENVIRONMENT.idempotencyTableName]: this.idempotencyTable.tableName,
        [PUBLISHER_ENVIRONMENT.idempotencyTtlSeconds]: String(this.settings.idempotencyTtl.toSeconds()),
        ...telemetry,
      },
    });
  }

  /** What the consumer reads (`CONSUMER_ENVIRONMENT`), with its `telemetry` as the publisher's. */
  #consumerEnvironmentOf(telemetry: Record<string, string>): Record<string, string> {
    const { settings } = this;
    return {
      [CONSUMER_ENVIRONMENT.idempotencyTableName]: this.idempotencyTable.tableName,
      [CONSUMER_ENVIRONMENT.idempotencyTtlSeconds]: String(settings.idempotencyTtl.toSeconds()),
      [CONSUMER_ENVIRONMENT.dlqUrl]: this.deadLetterQueue.queueUrl,
      [CONSUMER_ENVIRONMENT.queueUrl]: this.queue.queueUrl,
      // Each middleware's own bound: fifoBatch's groups, standardBatch's records (DESIGN §5.1).
      ...(settings.queueType === 'fifo'
        ? { [CONSUMER_ENVIRONMENT.maxConcurrentGroups]: String(settings.maxConcurrentGroups) }
        : { [CONSUMER_ENVIRONMENT.maxConcurrentRecords]: String(settings.maxConcurrentRecords) }),
      [CONSUMER_ENVIRONMENT.maxAttempts]: String(settings.maxAttempts),
      ...(this.leaseRecordsCache
        ? {
            [CONSUMER_ENVIRONMENT.valkeyEndpoint]: this.leaseRecordsCache.endpoint,
            [CONSUMER_ENVIRONMENT.valkeyUserId]: this.leaseRecordsCache.userId,
            [CONSUMER_ENVIRONMENT.valkeyCacheName]: this.leaseRecordsCache.cacheName,
          }
        : {}),
      ...telemetry,
    };
  }

  /** The queue's event source on the consumer, with partial batch responses. */
  #feedConsumer(): void {
    this.consumer.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: this.settings.batchSize,
        reportBatchItemFailures: true,
        maxConcurrency: this.settings.maxConcurrency,
        maxBatchingWindow: this.settings.maxBatchingWindow,
      }),
    );
  }

  #unresolvedMonitor(telemetry: Record<string, string>): NodejsFunction {
    const network = this.leaseRecordsNetwork;
    const cache = this.leaseRecordsCache;
    return this.#function('Monitor', packageEntry('../../lambdas/monitor/handler'), {
      timeout: Duration.minutes(1),
      memorySize: 256,
      // With the lease records in Valkey, the monitor counts the cache's unresolved records too: it
      // goes where the consumer is, in its security group (the only one the cache admits), and only
      // its bundle then carries a Valkey client.
      ...(network && cache
        ? {
            bundling: { inject: [packageEntry(VALKEY_DEFAULT_COUNTER_ENTRY)] },
            vpc: network.vpc,
            vpcSubnets: { subnets: network.subnets.subnets },
            securityGroups: [network.consumerSecurityGroup],
          }
        : {}),
      environment: {
        [MONITOR_ENVIRONMENT.idempotencyTableName]: this.idempotencyTable.tableName,
        ...(cache
          ? {
              [MONITOR_ENVIRONMENT.valkeyEndpoint]: cache.endpoint,
              [MONITOR_ENVIRONMENT.valkeyUserId]: cache.userId,
              [MONITOR_ENVIRONMENT.valkeyCacheName]: cache.cacheName,
            }
          : {}),
        ...telemetry,
      },
    });
  }

  #unresolvedCheckSchedule(): Rule {
    const interval = this.settings.unresolvedCheckInterval;
    return new Rule(this, 'UnresolvedCheckSchedule', {
      description: 'Runs the unresolved-records monitor, whose counts keep the in-doubt alarm current.',
      schedule: Schedule.rate(interval),
      // A count older than one interval is superseded by the next run: not worth EventBridge's retries.
      targets: [new LambdaFunction(this.unresolvedMonitor, { maxEventAge: interval })],
    });
  }

  #alarms(serviceName: string, scopeName: string, topic: ITopic | undefined): PipelineAlarms {
    return new PipelineAlarms(this, 'Alarms', {
      queue: this.queue,
      deadLetterQueue: this.deadLetterQueue,
      consumer: this.consumer,
      publisher: this.publisher,
      metricsNamespace: serviceName,
      scopeDimensions: { pipeline: scopeName },
      monitorServiceName: `${serviceName}-monitor`,
      consumerServiceName: `${serviceName}-consumer`,
      publisherServiceName: `${serviceName}-publisher`,
      unresolvedCheckInterval: this.settings.unresolvedCheckInterval,
      oldestMessageAgeThreshold: this.settings.oldestMessageAgeThreshold,
      topic,
    });
  }

  #consumer(consumer: OncelyConsumerEntry | OncelyConsumerFunction): IFunction {
    if ('function' in consumer) {
      if (consumer.function instanceof LambdaFunctionResource) {
        for (const [name, value] of Object.entries(this.consumerEnvironment)) {
          consumer.function.addEnvironment(name, value);
        }
      }
      return consumer.function;
    }
    const { entry, handler, environment, bundling, ...options } = consumer;
    const network = this.leaseRecordsNetwork;
    return this.#function('Consumer', entry, {
      ...options,
      // The module providing the default Valkey store, which only this consumer's bundle carries:
      // every other consumer's leaves out the store's scripts and iovalkey.
      bundling: network
        ? { ...bundling, inject: [...(bundling?.inject ?? []), packageEntry(VALKEY_DEFAULT_STORE_ENTRY)] }
        : bundling,
      ...(network
        ? {
            vpc: network.vpc,
            vpcSubnets: { subnets: network.subnets.subnets },
            securityGroups: [network.consumerSecurityGroup],
          }
        : {}),
      handler: handler ?? 'handler',
      timeout: this.settings.consumerTimeout,
      memorySize: this.settings.consumerMemoryMiB,
      environment: { ...environment, ...this.consumerEnvironment },
    });
  }

  #addOutputs(prefix: string): void {
    const values: Record<PipelineOutputKey, string> = {
      publisherFunctionName: this.publisher.functionName,
      publisherFunctionArn: this.publisher.functionArn,
      consumerFunctionName: this.consumer.functionName,
      queueUrl: this.queue.queueUrl,
      queueArn: this.queue.queueArn,
      dlqUrl: this.deadLetterQueue.queueUrl,
      dlqArn: this.deadLetterQueue.queueArn,
      idempotencyTableName: this.idempotencyTable.tableName,
      idempotencyTtlSeconds: String(this.settings.idempotencyTtl.toSeconds()),
    };
    const logGroups = {
      [PIPELINE_LOG_GROUP_OUTPUTS.consumer]: logGroupName(this.consumer),
      [PIPELINE_LOG_GROUP_OUTPUTS.publisher]: logGroupName(this.publisher),
      [PIPELINE_LOG_GROUP_OUTPUTS.monitor]: logGroupName(this.unresolvedMonitor),
    };
    const named = Object.entries(values).map(([key, value]) => [
      PIPELINE_OUTPUTS[key as PipelineOutputKey],
      value,
    ]);
    // With the lease records in Valkey, where `oncely in-doubt` and `oncely history` find them.
    const cache = this.leaseRecordsCache;
    const cacheOutputs = cache
      ? {
          [PIPELINE_CACHE_OUTPUTS.endpoint]: cache.endpoint,
          [PIPELINE_CACHE_OUTPUTS.name]: cache.cacheName,
          [PIPELINE_CACHE_OUTPUTS.userId]: cache.userId,
        }
      : {};
    for (const [name, value] of [...named, ...Object.entries(logGroups), ...Object.entries(cacheOutputs)] as [
      string,
      string,
    ][]) {
      // Stable, short names other services and tools look up: not the construct path's hash.
      new CfnOutput(this, name, { value }).overrideLogicalId(`${prefix}${name}`);
    }
  }

  #function(
    id: string,
    entry: string,
    options: Omit<OncelyFunctionOptions, 'removalPolicy'>,
  ): NodejsFunction {
    return oncelyFunction(this, id, entry, { ...options, removalPolicy: this.settings.removalPolicy });
  }

  /** Each function gets exactly the actions it uses, on exactly its resources. */
  #grantLeastPrivilege(): void {
    allow(this.publisher, ['sqs:SendMessage'], [this.queue.queueArn]);
    this.publisher.addToRolePolicy(recordStatement('publisher', this.idempotencyTable.tableArn));
    // Poison records go to the DLQ at once; the event source's own grant covers the queue.
    allow(this.consumer, ['sqs:SendMessage'], [this.deadLetterQueue.queueArn]);
    this.consumer.addToRolePolicy(recordStatement('consumer', this.idempotencyTable.tableArn));
    if (this.leaseRecordsCache) {
      for (const fn of [this.consumer, this.unresolvedMonitor]) {
        this.leaseRecordsCache.grantConnect(fn);
        // Its own role has no AWS managed policy: the network interfaces Lambda makes in the VPC.
        fn.addToRolePolicy(vpcAccessStatement(fn));
      }
    }
    // The monitor counts unresolved records on the sparse index and never reads the table itself;
    // it only removes the expiry an older version gave them.
    allow(
      this.unresolvedMonitor,
      ['dynamodb:Query'],
      [UNRESOLVED_INDEX_NAME, LEGACY_UNRESOLVED_INDEX_NAME].map(
        (index) => `${this.idempotencyTable.tableArn}/index/${index}`,
      ),
    );
    this.unresolvedMonitor.addToRolePolicy(recordStatement('monitor', this.idempotencyTable.tableArn));
    // A customer-managed key: sending to its queues and reading or writing its table need it (the
    // event source's own grant covers receiving from the queue).
    for (const fn of [this.publisher, this.consumer, this.unresolvedMonitor]) {
      this.encryptionKey?.grantEncryptDecrypt(fn);
    }
  }
}

/**
 * Where a function logs: the log group the construct gave it, or Lambda's default for one you built
 * without a log group (`/aws/lambda/<name>`).
 */
function logGroupName(fn: IFunction): string {
  return fn instanceof LambdaFunctionResource ? fn.logGroup.logGroupName : `/aws/lambda/${fn.functionName}`;
}

function allow(fn: IFunction, actions: string[], resources: string[]): void {
  fn.addToRolePolicy(new PolicyStatement({ actions, resources }));
}
