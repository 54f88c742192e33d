import { CfnOutput } from 'aws-cdk-lib';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Rule } from 'aws-cdk-lib/aws-events';
import { Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam';
import { type IFunction, Function as LambdaFunctionResource } from 'aws-cdk-lib/aws-lambda';
import type { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { ITopic } from 'aws-cdk-lib/aws-sns';
import type { CfnQueue, IQueue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { type KnownKeys, unknownKeyProblems } from '../../lambdas/common/known-keys.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import { OUTBOX_ENVIRONMENT } from '../../lambdas/outbox/environment.js';
import { OUTBOX_KEY_PREFIXES, OUTBOX_PENDING_INDEX, type OutboxLayout } from '../../lambdas/outbox/layout.js';
import { constructScope } from './construct-scope.js';
import { invalidProps, refuseUnknownProps } from './invalid-props.js';
import type { OncelyPipeline } from './oncely-pipeline.js';
import { OutboxAlarms } from './outbox-alarms.js';
import { createOutboxRelay, createOutboxSweeper } from './outbox-functions.js';
import { OUTBOX_LOG_GROUP_OUTPUTS, OUTBOX_OUTPUTS, type OutboxOutputKey } from './outbox-outputs.js';
import {
  OUTBOX_SETTINGS_KEYS,
  type OutboxSettings,
  outboxSettingsProblems,
  type ResolvedOutboxSettings,
  resolveOutboxSettings,
} from './outbox-settings.js';
import {
  addPendingIndex,
  createOutboxTable,
  pendingIndexScalingProblems,
  producerTableProblems,
  stringKeysOf,
  warnWithoutTtl,
} from './outbox-table.js';
import { outputPrefixProblems } from './output-prefix.js';
import { assertGrantable } from './passed-function.js';
import { inSandbox } from './sandbox-context.js';

/** An `OncelyOutbox`: the queue it publishes to, its table, where alarms go, and the `OutboxSettings`. */
export interface OncelyOutboxProps extends OutboxSettings {
  /**
   * The queue the outbox publishes to: FIFO (each group in order, with deduplication ids) or standard
   * (a fair queue's tenant key from the group, no order). Give this or `pipeline`, not both.
   * @default the queue of `pipeline`
   */
  readonly queue?: IQueue;
  /**
   * The pipeline whose queue the outbox publishes to, with its message size limit and (unless set
   * here) its `removalPolicy` and `deletionProtection`. Give this or `queue`, not both.
   * @default none: then `queue` is required
   */
  readonly pipeline?: OncelyPipeline;
  /**
   * Your own table, to commit the outbox items in the same transactions as your writes to it: it
   * needs a string partition key, a string sort key and a stream with new images (NEW_IMAGE or
   * NEW_AND_OLD_IMAGES), and should have its TTL on `expiresAt`.
   * @default a table of the outbox's own
   */
  readonly table?: Table;
  /**
   * Where the alarms notify.
   * @default none (the alarms still show in CloudWatch)
   */
  readonly alarmTopic?: ITopic;
  /**
   * The functions' metrics namespace and the prefix of their `service` dimension.
   * @default 'oncely'
   */
  readonly serviceName?: string;
  /**
   * Put before the logical ids of the stack outputs the outbox adds (`OutboxTableName`, …): needed
   * only for a second outbox in one stack.
   * @default '' (none)
   */
  readonly outputPrefix?: string;
}

const OUTBOX_PROP_KEYS = {
  ...OUTBOX_SETTINGS_KEYS,
  queue: true,
  pipeline: true,
  table: true,
  alarmTopic: true,
  serviceName: true,
  outputPrefix: true,
} satisfies KnownKeys<OncelyOutboxProps>;

/** A table holds at most one outbox: two relays would send every message twice. */
const TABLES_WITH_OUTBOX = new WeakSet<Table>();

/**
 * The transactional outbox (DESIGN §9) of a producing service: the table (yours, or its own) with the
 * sparse index of pending messages, the relay on the table's stream (only new pending markers invoke
 * it; partial batch responses, bounded retries, failed batches kept in a queue), the sweeper on an
 * EventBridge schedule, least-privilege grants confined to the outbox's keys, the stuck alarm and
 * stack outputs. `grantWrite` lets a producer write messages with `new Outbox()` from `oncely/outbox`.
 *
 * @example
 * ```ts
 * import { OncelyOutbox, OncelyPipeline } from 'oncely/cdk';
 *
 * const pipeline = new OncelyPipeline(this, 'Pipeline', { consumer: { entry: 'src/consumer.ts' } });
 * new OncelyOutbox(this, 'Outbox', { pipeline }).grantWrite(orderService);
 * ```
 */
export class OncelyOutbox extends Construct {
  /** The settings with their defaults filled in. */
  readonly settings: ResolvedOutboxSettings;
  /** The table holding the outbox: yours, or the one the construct created. */
  readonly table: Table;
  /** The table's name and key attributes, as `oncely/outbox` takes them. */
  readonly layout: OutboxLayout;
  /** The FIFO queue the messages go to: `queue`, or the pipeline's. */
  readonly queue: IQueue;
  /** Sends new pending messages, invoked by the table's stream. */
  readonly relay: IFunction;
  /** Keeps the description of each relay batch Lambda gave up on (its messages stay pending). */
  readonly relayFailureQueue: IQueue;
  /** Sends what the relay left pending, every `sweepInterval`, and counts the stuck messages. */
  readonly sweeper: IFunction;
  /** The EventBridge schedule that runs {@link OncelyOutbox.sweeper}. */
  readonly sweepSchedule: Rule;
  /** The outbox's alarms, notifying `alarmTopic` when given. */
  readonly alarms: OutboxAlarms;
  /** What `oncely/outbox` reads (`OUTBOX_TABLE_NAME`, …): set on a `lambda.Function` by {@link OncelyOutbox.grantWrite}. */
  readonly producerEnvironment: Readonly<Record<string, string>>;

  constructor(scope: Construct, id: string, props: OncelyOutboxProps) {
    super(scope, id);
    refuseUnknownProps('OncelyOutbox', this, unknownKeyProblems(props, OUTBOX_PROP_KEYS, 'prop'));
    const pipelineSettings = props.pipeline?.settings;
    const settings = resolveOutboxSettings(props, {
      sandbox: inSandbox(this),
      removalPolicy: pipelineSettings?.removalPolicy,
      deletionProtection: pipelineSettings?.deletionProtection,
    });
    this.settings = settings;
    const serviceName = props.serviceName ?? 'oncely';
    const problems = [
      ...targetProblems(props),
      ...(props.table ? producerTableProblems(props.table) : []),
      ...(props.table && TABLES_WITH_OUTBOX.has(props.table)
        ? [`the table ${props.table.node.path} already holds an OncelyOutbox: one table, one outbox.`]
        : []),
      ...outboxSettingsProblems(settings),
      ...outputPrefixProblems(props.outputPrefix),
    ];
    if (problems.length > 0) throw invalidProps('OncelyOutbox', this, problems);
    this.queue = (props.queue ?? props.pipeline?.queue) as IQueue;
    const maxMessageBytes = pipelineSettings?.maxMessageSizeBytes ?? declaredMaxMessageSize(this.queue);

    const table = props.table ?? createOutboxTable(this, 'Table', settings);
    if (props.table) {
      warnWithoutTtl(this, props.table);
      TABLES_WITH_OUTBOX.add(props.table);
      const yours = props.table;
      this.node.addValidation({ validate: () => pendingIndexScalingProblems(yours) });
    }
    addPendingIndex(table);
    this.table = table;
    // Strings: checked above for your table, and so declared for the outbox's own.
    const keys = stringKeysOf(table) as { partitionKey: string; sortKey: string };
    this.layout = { tableName: table.tableName, ...keys };

    this.producerEnvironment = {
      [OUTBOX_ENVIRONMENT.tableName]: this.layout.tableName,
      [OUTBOX_ENVIRONMENT.partitionKey]: this.layout.partitionKey,
      [OUTBOX_ENVIRONMENT.sortKey]: this.layout.sortKey,
      // Unknown for a queue built elsewhere: oncely/outbox then keeps to SQS's classic 256 KiB.
      ...(maxMessageBytes === undefined
        ? {}
        : { [OUTBOX_ENVIRONMENT.maxMessageBytes]: String(maxMessageBytes) }),
      [OUTBOX_ENVIRONMENT.pendingShards]: String(settings.pendingShards),
    };
    // The relay and the sweeper read every shard: the producers' count is theirs alone.
    const { [OUTBOX_ENVIRONMENT.pendingShards]: _producersOnly, ...sharedEnvironment } =
      this.producerEnvironment;
    // Every metric the relay and the sweeper publish carries it, and the outbox's alarms select it.
    const scopeName = constructScope(this);
    const metricsScope = { [METRICS_SCOPE_ENVIRONMENT.outbox]: scopeName };
    const functionProps = {
      table,
      settings,
      environment: {
        ...sharedEnvironment,
        [OUTBOX_ENVIRONMENT.queueUrl]: this.queue.queueUrl,
        POWERTOOLS_METRICS_NAMESPACE: serviceName,
        ...metricsScope,
      },
      serviceName: `${serviceName}-outbox`,
    };
    const { relay, failureQueue } = createOutboxRelay(this, functionProps);
    this.relay = relay;
    this.relayFailureQueue = failureQueue;
    const { sweeper, schedule } = createOutboxSweeper(this, functionProps);
    this.sweeper = sweeper;
    this.sweepSchedule = schedule;
    this.#grantLeastPrivilege();

    this.alarms = new OutboxAlarms(this, 'Alarms', {
      relay: this.relay,
      metricsNamespace: serviceName,
      scopeDimensions: { outbox: scopeName },
      sweeperServiceName: `${serviceName}-outbox-sweeper`,
      sweepInterval: settings.sweepInterval,
      topic: props.alarmTopic,
    });
    this.#addOutputs(props.outputPrefix ?? '', { relay, sweeper });
  }

  /**
   * Lets a producer write messages to the outbox (`dynamodb:PutItem`; `dynamodb:Query` for its
   * groups' newest pending message; `dynamodb:BatchGetItem` for the check of a retried write's
   * token: on the outbox's keys only; its own writes in the same transaction need their own grants), and — for a `lambda.Function` — sets `producerEnvironment`
   * on it, so that `new Outbox()` needs no options. A function without a role is refused.
   */
  grantWrite(producer: IGrantable): Grant {
    assertGrantable(producer, 'grantWrite: the producer');
    const grant = Grant.addToPrincipal({
      grantee: producer,
      actions: ['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
      resourceArns: [this.table.tableArn],
      conditions: OUTBOX_KEYS_ONLY,
    });
    this.table.encryptionKey?.grantEncryptDecrypt(producer);
    if (producer instanceof LambdaFunctionResource) {
      for (const [name, value] of Object.entries(this.producerEnvironment))
        producer.addEnvironment(name, value);
    }
    return grant;
  }

  /** The relay and the sweeper get exactly the actions they use, on the outbox's keys only. */
  #grantLeastPrivilege(): void {
    for (const sender of [this.relay, this.sweeper]) {
      // Claims and releases are UpdateItem; a SENT mark is a transaction of an Update (the item)
      // and a Delete (its marker); a group's pending markers are a Query of its partition.
      sender.addToRolePolicy(
        new PolicyStatement({
          actions: ['dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
          resources: [this.table.tableArn],
          conditions: OUTBOX_KEYS_ONLY,
        }),
      );
      this.table.encryptionKey?.grantEncryptDecrypt(sender);
      sender.addToRolePolicy(
        new PolicyStatement({ actions: ['sqs:SendMessage'], resources: [this.queue.queueArn] }),
      );
      // What SendMessage needs of a queue encrypted with a KMS key.
      this.queue.encryptionMasterKey?.grant(sender, 'kms:GenerateDataKey', 'kms:Decrypt');
    }
    // The sweeper finds old pending messages in the sparse index, which holds nothing but markers.
    this.sweeper.addToRolePolicy(
      new PolicyStatement({
        actions: ['dynamodb:Query'],
        resources: [`${this.table.tableArn}/index/${OUTBOX_PENDING_INDEX}`],
      }),
    );
  }

  #addOutputs(prefix: string, functions: { relay: NodejsFunction; sweeper: NodejsFunction }): void {
    const values: Record<OutboxOutputKey, string> = {
      tableName: this.layout.tableName,
      partitionKey: this.layout.partitionKey,
      sortKey: this.layout.sortKey,
      stuckAfterSeconds: String(this.settings.stuckAfter.toSeconds()),
    };
    const logGroups = {
      [OUTBOX_LOG_GROUP_OUTPUTS.relay]: functions.relay.logGroup.logGroupName,
      [OUTBOX_LOG_GROUP_OUTPUTS.sweeper]: functions.sweeper.logGroup.logGroupName,
    };
    const named = Object.entries(values).map(([key, value]) => [
      OUTBOX_OUTPUTS[key as OutboxOutputKey],
      value,
    ]);
    for (const [name, value] of [...named, ...Object.entries(logGroups)] as [string, string][]) {
      // Stable, short names `oncely outbox list` and the runbook look up: not the construct path's hash.
      new CfnOutput(this, name, { value }).overrideLogicalId(`${prefix}${name}`);
    }
  }
}

/**
 * Confines item actions to the outbox's key space: the table may be yours, and the outbox's
 * functions and producers have no business with your items.
 */
const OUTBOX_KEYS_ONLY = {
  'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': OUTBOX_KEY_PREFIXES.map((prefix) => `${prefix}*`) },
};

function targetProblems(props: OncelyOutboxProps): string[] {
  if (props.queue && props.pipeline) {
    return ['give `queue` or `pipeline`, not both: the outbox publishes to one queue.'];
  }
  const queue = props.queue ?? props.pipeline?.queue;
  if (!queue) return ['give the queue to publish to: `queue`, or `pipeline` for its queue.'];
  return [];
}

/** The maximum message size a queue built in this app declares; undefined when it does not say. */
function declaredMaxMessageSize(queue: IQueue): number | undefined {
  const size = (queue.node.defaultChild as CfnQueue | undefined)?.maximumMessageSize;
  return typeof size === 'number' ? size : undefined;
}
