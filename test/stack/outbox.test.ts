import { App, type CfnElement, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AttributeType, StreamViewType, Table } from 'aws-cdk-lib/aws-dynamodb';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import { OUTBOX_ENVIRONMENT } from '../../lambdas/outbox/environment.js';
import { OUTBOX_ATTRIBUTES, OUTBOX_PENDING_INDEX } from '../../lambdas/outbox/layout.js';
import { OUTBOX_METRICS } from '../../lambdas/outbox/metrics.js';
import { OncelyOutbox, type OncelyOutboxProps } from '../../lib/constructs/oncely-outbox.js';
import { OncelyPipeline } from '../../lib/constructs/oncely-pipeline.js';
import { OUTBOX_LOG_GROUP_OUTPUTS, OUTBOX_OUTPUTS } from '../../lib/constructs/outbox-outputs.js';
import { SANDBOX_CONTEXT } from '../../lib/constructs/sandbox-context.js';
import { buildOutboxStack, FIXTURE_CONSUMER } from './build-stack.js';

const { app, stack, outbox, template } = buildOutboxStack();

const logicalId = (element: { node: { defaultChild?: unknown } }, inStack: Stack = stack) =>
  inStack.getLogicalId(element.node.defaultChild as CfnElement);

/** A function's properties, by the construct id it was built under (`Relay`, `Sweeper`). */
function functionProperties(from: Template, id: string) {
  const [found] = Object.entries(from.findResources('AWS::Lambda::Function')).filter(([logical]) =>
    logical.startsWith(`Outbox${id}`),
  );
  if (!found) throw new Error(`no Outbox${id} function`);
  return found[1].Properties;
}

const environmentOf = (from: Template, id: string): Record<string, unknown> =>
  functionProperties(from, id).Environment.Variables;

/** The statements of a role's policies, by the construct id of its function. */
function statementsOf(from: Template, id: string): { Action: string | string[]; [key: string]: unknown }[] {
  return Object.entries(from.findResources('AWS::IAM::Policy'))
    .filter(([logical]) => logical.startsWith(`Outbox${id}Role`))
    .flatMap(([, policy]) => policy.Properties.PolicyDocument.Statement);
}

const actionsOf = (from: Template, id: string) =>
  statementsOf(from, id)
    .flatMap((statement) => [statement.Action].flat())
    .sort();

/** The tables of a template other than the pipeline's idempotency table. */
/** The stuck alarm's metric, inside its math (a period without a sweep counts as stuck). */
const stuckMetricOf = (alarm: { Metrics?: { MetricStat?: { Metric: { MetricName: string } } }[] }) =>
  alarm.Metrics?.find((m) => m.MetricStat?.Metric.MetricName === OUTBOX_METRICS.stuck)?.MetricStat?.Metric;
const stuckMetric = (from: Template) =>
  Object.values(from.findResources('AWS::CloudWatch::Alarm'))
    .map((alarm) => stuckMetricOf(alarm.Properties))
    .find(Boolean);

const outboxTables = (from: Template) =>
  Object.entries(from.findResources('AWS::DynamoDB::Table')).filter(
    ([logical]) => !logical.startsWith('PipelineIdempotencyTable'),
  );

const LEADING_KEYS = {
  'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['oncely-outbox#*', 'oncely-outbox-group#*'] },
};

/** A producer's own table in `stack`, keyed as given; a NEW_AND_OLD_IMAGES stream and TTL on expiresAt unless told. */
function producerTable(
  stack: Stack,
  keys: { partition: AttributeType; sort?: AttributeType },
  options: { stream?: StreamViewType | 'none'; ttl?: boolean } = {},
) {
  const stream = options.stream ?? StreamViewType.NEW_AND_OLD_IMAGES;
  return new Table(stack, 'Orders', {
    partitionKey: { name: 'PK', type: keys.partition },
    ...(keys.sort ? { sortKey: { name: 'SK', type: keys.sort } } : {}),
    ...(stream === 'none' ? {} : { stream }),
    ...(options.ttl === false ? {} : { timeToLiveAttribute: 'expiresAt' }),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
  });
}

describe('the outbox table of its own', () => {
  it('is keyed by string pk and sk, on-demand, with PITR, a NEW_IMAGE stream and TTL on expiresAt', () => {
    const [[, table]] = outboxTables(template) as [[string, { Properties: Record<string, unknown> }]];
    expect(table.Properties).toMatchObject({
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      StreamSpecification: { StreamViewType: 'NEW_IMAGE' },
      TimeToLiveSpecification: { AttributeName: OUTBOX_ATTRIBUTES.expiresAt, Enabled: true },
      DeletionProtectionEnabled: false,
    });
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ]),
    );
  });

  it('has the sparse index of pending markers, projecting what the sweeper reads', () => {
    const [[, table]] = outboxTables(template) as [[string, { Properties: Record<string, unknown> }]];
    expect(table.Properties.GlobalSecondaryIndexes).toEqual([
      {
        IndexName: OUTBOX_PENDING_INDEX,
        KeySchema: [
          { AttributeName: OUTBOX_ATTRIBUTES.pending, KeyType: 'HASH' },
          { AttributeName: OUTBOX_ATTRIBUTES.pendingSince, KeyType: 'RANGE' },
        ],
        Projection: {
          ProjectionType: 'INCLUDE',
          NonKeyAttributes: [OUTBOX_ATTRIBUTES.key, OUTBOX_ATTRIBUTES.groupId],
        },
      },
    ]);
    expect(table.Properties.AttributeDefinitions).toEqual(
      expect.arrayContaining([
        { AttributeName: OUTBOX_ATTRIBUTES.pending, AttributeType: 'S' },
        { AttributeName: OUTBOX_ATTRIBUTES.pendingSince, AttributeType: 'S' },
      ]),
    );
  });

  it('is retained on stack deletion, or follows the pipeline’s removal policy and deletion protection', () => {
    const [[, retained]] = outboxTables(template);
    expect(retained).toMatchObject({ DeletionPolicy: 'Retain', UpdateReplacePolicy: 'Retain' });
    const { template: destroyed } = buildOutboxStack({ removalPolicy: RemovalPolicy.DESTROY });
    expect(outboxTables(destroyed)[0]?.[1]).toMatchObject({ DeletionPolicy: 'Delete' });
    const { template: protectedTable } = buildOutboxStack({ deletionProtection: true });
    expect(outboxTables(protectedTable)[0]?.[1].Properties.DeletionProtectionEnabled).toBe(true);
  });
});

describe('the relay', () => {
  const mapping = () => {
    const [found] = Object.values(template.findResources('AWS::Lambda::EventSourceMapping')).filter(
      (resource) => resource.Properties.EventSourceArn['Fn::GetAtt']?.[1] === 'StreamArn',
    );
    return found?.Properties;
  };

  it('reads the table’s stream from its start, 100 records at a time, with partial batch responses', () => {
    expect(mapping()).toMatchObject({
      EventSourceArn: { 'Fn::GetAtt': [logicalId(outbox.table), 'StreamArn'] },
      FunctionName: { Ref: logicalId(outbox.relay) },
      StartingPosition: 'TRIM_HORIZON',
      BatchSize: 100,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('is invoked only for newly inserted pending markers', () => {
    const patterns = mapping().FilterCriteria.Filters.map((filter: { Pattern: string }) =>
      JSON.parse(filter.Pattern),
    );
    expect(patterns).toEqual([
      // `PENDING` or any of its shards, `PENDING#<s>` (DESIGN §9.1).
      {
        eventName: ['INSERT'],
        dynamodb: { NewImage: { [OUTBOX_ATTRIBUTES.pending]: { S: [{ prefix: 'PENDING' }] } } },
      },
    ]);
  });

  it('retries a failed batch 10 times, then keeps its description in an encrypted failure queue', () => {
    expect(mapping()).toMatchObject({
      MaximumRetryAttempts: 10,
      DestinationConfig: {
        OnFailure: { Destination: { 'Fn::GetAtt': [logicalId(outbox.relayFailureQueue), 'Arn'] } },
      },
    });
    template.hasResourceProperties('AWS::SQS::Queue', {
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86400,
      FifoQueue: Match.absent(),
    });
    template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: logicalId(outbox.relayFailureQueue) }],
      PolicyDocument: {
        Statement: [
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
        ],
      },
    });
  });

  it('follows relayBatchSize, relayRetryAttempts and relayParallelization (1 by default)', () => {
    expect(mapping()).toMatchObject({ ParallelizationFactor: 1 });
    const { template: tuned } = buildOutboxStack({
      relayBatchSize: 500,
      relayRetryAttempts: 2,
      relayParallelization: 4,
    });
    tuned.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 500,
      MaximumRetryAttempts: 2,
      ParallelizationFactor: 4,
    });
  });
});

describe('the sweeper', () => {
  it('runs on an EventBridge schedule every minute, its runs expiring with the interval', () => {
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [logicalId(outbox.sweeper), 'Arn'] },
          RetryPolicy: { MaximumEventAgeInSeconds: 60 },
        }),
      ],
    });
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalId(outbox.sweeper), 'Arn'] },
      SourceArn: { 'Fn::GetAtt': [logicalId(outbox.sweepSchedule), 'Arn'] },
    });
  });

  it('follows sweepInterval, which is also the stuck alarm’s period', () => {
    const { template: slow } = buildOutboxStack({ sweepInterval: Duration.minutes(5) });
    slow.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(5 minutes)',
      Targets: [Match.objectLike({ RetryPolicy: { MaximumEventAgeInSeconds: 300 } })],
    });
    slow.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Metrics: Match.arrayWith([
        Match.objectLike({
          MetricStat: Match.objectLike({
            Metric: Match.objectLike({ MetricName: OUTBOX_METRICS.stuck }),
            Period: 300,
          }),
        }),
      ]),
    });
  });
});

describe('functions', () => {
  it('run on Node.js 24, ARM64, each with its own log group', () => {
    for (const id of ['Relay', 'Sweeper']) {
      expect(functionProperties(template, id)).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        LoggingConfig: { LogGroup: { Ref: expect.stringMatching(`^Outbox${id}Logs`) } },
      });
    }
  });

  it('set every variable their handler reads: the sweeper its bounds, both the table, keys, queue and size', () => {
    const names = (id: string) =>
      Object.keys(environmentOf(template, id))
        .filter((name) => !name.startsWith('POWERTOOLS_') && name !== 'NODE_OPTIONS')
        .sort();
    // pendingShards is the producers' alone: the relay and the sweeper read every shard (DESIGN §9.1).
    // ONCELY_OUTBOX is the dimension their metrics carry, which the outbox's alarms select.
    const { sweepAfterSeconds, stuckAfterSeconds, pendingShards, ...relayVariables } = {
      ...OUTBOX_ENVIRONMENT,
      scope: METRICS_SCOPE_ENVIRONMENT.outbox,
    };
    expect(names('Relay')).toEqual(Object.values(relayVariables).sort());
    expect(names('Sweeper')).toEqual(
      Object.values({ ...relayVariables, sweepAfterSeconds, stuckAfterSeconds }).sort(),
    );
    expect(environmentOf(template, 'Sweeper')).toMatchObject({
      [OUTBOX_ENVIRONMENT.tableName]: { Ref: logicalId(outbox.table) },
      [OUTBOX_ENVIRONMENT.partitionKey]: 'pk',
      [OUTBOX_ENVIRONMENT.sortKey]: 'sk',
      [OUTBOX_ENVIRONMENT.queueUrl]: { Ref: logicalId(outbox.queue) },
      [OUTBOX_ENVIRONMENT.maxMessageBytes]: '262144',
      [sweepAfterSeconds]: '60',
      [stuckAfterSeconds]: '300',
      POWERTOOLS_SERVICE_NAME: 'oncely-outbox-sweeper',
      POWERTOOLS_METRICS_NAMESPACE: 'oncely',
    });
    expect(environmentOf(template, 'Relay')).toMatchObject({
      POWERTOOLS_SERVICE_NAME: 'oncely-outbox-relay',
      POWERTOOLS_METRICS_NAMESPACE: 'oncely',
    });
  });

  it('take the message size limit from the pipeline, or from a queue that declares one', () => {
    const sizeOf = (built: ReturnType<typeof buildOutboxStack>) =>
      environmentOf(built.template, 'Relay')[OUTBOX_ENVIRONMENT.maxMessageBytes];
    const declared = buildOutboxStack((own) => ({
      queue: new Queue(own, 'Events', { fifo: true, maxMessageSizeBytes: 1_048_576 }),
    }));
    expect(sizeOf(declared)).toBe('1048576');
    // Imported: the size is not known here, and oncely/outbox keeps to its default.
    const imported = buildOutboxStack((own) => ({
      queue: Queue.fromQueueArn(own, 'Imported', 'arn:aws:sqs:eu-west-1:123456789012:events.fifo'),
    }));
    expect(sizeOf(imported)).toBeUndefined();
    expect(imported.outbox.producerEnvironment).not.toHaveProperty(OUTBOX_ENVIRONMENT.maxMessageBytes);
  });

  it('use serviceName for their namespace and service dimensions', () => {
    const { template: named } = buildOutboxStack({ serviceName: 'orders' });
    expect(environmentOf(named, 'Sweeper')).toMatchObject({
      POWERTOOLS_SERVICE_NAME: 'orders-outbox-sweeper',
      POWERTOOLS_METRICS_NAMESPACE: 'orders',
    });
    expect(stuckMetric(named)).toMatchObject({
      Namespace: 'orders',
      Dimensions: [
        { Name: 'outbox', Value: 'Test/Outbox' },
        { Name: 'service', Value: 'orders-outbox-sweeper' },
      ],
    });
  });
});

describe('a standard (or fair) queue', () => {
  // The relay and the sweeper tell the queue's type from its URL at run time (DESIGN §5.1): the
  // construct passes it as for FIFO, which also serves an imported queue whose name is a token.
  it('is published to like a FIFO one: its URL to both functions, SendMessage on it', () => {
    const built = buildOutboxStack((own) => ({ queue: new Queue(own, 'Events') }));
    const queueRef = { Ref: built.stack.getLogicalId(built.outbox.queue.node.defaultChild as CfnElement) };
    for (const id of ['Relay', 'Sweeper']) {
      expect(environmentOf(built.template, id)[OUTBOX_ENVIRONMENT.queueUrl]).toEqual(queueRef);
      const sends = statementsOf(built.template, id).filter((statement) =>
        [statement.Action].flat().includes('sqs:SendMessage'),
      );
      expect(sends).toContainEqual(
        expect.objectContaining({ Resource: { 'Fn::GetAtt': [queueRef.Ref, 'Arn'] } }),
      );
    }
  });

  it("is a standard pipeline's queue when given the pipeline", () => {
    const own = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Standard');
    const pipeline = new OncelyPipeline(own, 'Pipeline', {
      consumer: { entry: FIXTURE_CONSUMER },
      queueType: 'standard',
    });
    const standardOutbox = new OncelyOutbox(own, 'Outbox', { pipeline });
    expect(standardOutbox.queue).toBe(pipeline.queue);
    expect(pipeline.queue.fifo).toBe(false);
    expect(environmentOf(Template.fromStack(own), 'Relay')[OUTBOX_ENVIRONMENT.queueUrl]).toEqual({
      Ref: own.getLogicalId(pipeline.queue.node.defaultChild as CfnElement),
    });
  });
});

describe('grants', () => {
  it('give the relay and the sweeper exactly the data actions they use', () => {
    const logs = ['logs:CreateLogStream', 'logs:PutLogEvents'];
    const items = ['dynamodb:DeleteItem', 'dynamodb:Query', 'dynamodb:UpdateItem'];
    expect(actionsOf(template, 'Relay')).toEqual(
      [
        ...logs,
        ...items,
        // The stream, by the event source.
        'dynamodb:DescribeStream',
        'dynamodb:GetRecords',
        'dynamodb:GetShardIterator',
        'dynamodb:ListStreams',
        'sqs:SendMessage',
        // The failure queue, by the event source's on-failure destination.
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:SendMessage',
      ].sort(),
    );
    expect(actionsOf(template, 'Sweeper')).toEqual(
      [...logs, ...items, 'dynamodb:Query', 'sqs:SendMessage'].sort(),
    );
  });

  it('confine item actions to the outbox’s keys, on the table; the sweeper’s index query to the index', () => {
    for (const id of ['Relay', 'Sweeper']) {
      expect(statementsOf(template, id)).toContainEqual(
        expect.objectContaining({
          Action: ['dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:Query'],
          Resource: { 'Fn::GetAtt': [logicalId(outbox.table), 'Arn'] },
          Condition: LEADING_KEYS,
        }),
      );
    }
    expect(statementsOf(template, 'Sweeper')).toContainEqual(
      expect.objectContaining({
        Action: 'dynamodb:Query',
        Resource: {
          'Fn::Join': [
            '',
            [{ 'Fn::GetAtt': [logicalId(outbox.table), 'Arn'] }, `/index/${OUTBOX_PENDING_INDEX}`],
          ],
        },
      }),
    );
  });

  it('send to the queue only, and use no wildcard but the stream listing IAM cannot scope', () => {
    for (const id of ['Relay', 'Sweeper']) {
      expect(statementsOf(template, id)).toContainEqual(
        expect.objectContaining({
          Action: 'sqs:SendMessage',
          Resource: { 'Fn::GetAtt': [logicalId(outbox.queue), 'Arn'] },
        }),
      );
      for (const statement of statementsOf(template, id)) {
        for (const action of [statement.Action].flat()) expect(action).not.toMatch(/\*/);
        if (statement.Resource === '*') expect(statement.Action).toBe('dynamodb:ListStreams');
      }
    }
  });

  it('let a producer put outbox items and query its groups only, and set its environment, through grantWrite', () => {
    let producer: LambdaFunction | undefined;
    const built = buildOutboxStack(
      {},
      {
        after: (outbox, own) => {
          producer = new LambdaFunction(own, 'OrderService', {
            runtime: Runtime.NODEJS_24_X,
            handler: 'index.handler',
            code: Code.fromInline('export const handler = async () => 1;'),
          });
          outbox.grantWrite(producer);
        },
      },
    );
    const role = (producer as LambdaFunction).role as Role;
    built.template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: logicalId(role, built.stack) }],
      PolicyDocument: {
        Statement: [
          {
            Action: ['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
            Effect: 'Allow',
            Resource: { 'Fn::GetAtt': [logicalId(built.outbox.table, built.stack), 'Arn'] },
            Condition: LEADING_KEYS,
          },
        ],
      },
    });
    built.template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Environment: { Variables: built.stack.resolve(built.outbox.producerEnvironment) },
    });
    expect(Object.keys(built.outbox.producerEnvironment).sort()).toEqual(
      [
        OUTBOX_ENVIRONMENT.tableName,
        OUTBOX_ENVIRONMENT.partitionKey,
        OUTBOX_ENVIRONMENT.sortKey,
        OUTBOX_ENVIRONMENT.maxMessageBytes,
        OUTBOX_ENVIRONMENT.pendingShards,
      ].sort(),
    );
    expect(built.outbox.producerEnvironment[OUTBOX_ENVIRONMENT.pendingShards]).toBe('8');
  });

  it("sets the producers' pendingShards, and only theirs: the relay and the sweeper read every shard", () => {
    const built = buildOutboxStack({ pendingShards: 20 });
    expect(built.outbox.settings.pendingShards).toBe(20);
    expect(built.outbox.producerEnvironment).toMatchObject({ [OUTBOX_ENVIRONMENT.pendingShards]: '20' });
    expect(environmentOf(built.template, 'Relay')).not.toHaveProperty(OUTBOX_ENVIRONMENT.pendingShards);
    expect(environmentOf(built.template, 'Sweeper')).not.toHaveProperty(OUTBOX_ENVIRONMENT.pendingShards);
  });

  it('let any principal put outbox items through grantWrite', () => {
    let role: Role | undefined;
    const built = buildOutboxStack(
      {},
      {
        after: (outbox, own) => {
          role = new Role(own, 'Service', { assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com') });
          outbox.grantWrite(role);
        },
      },
    );
    built.template.hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: logicalId(role as Role, built.stack) }],
      PolicyDocument: {
        Statement: [
          Match.objectLike({
            Action: ['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'],
            Condition: LEADING_KEYS,
          }),
        ],
      },
    });
  });
});

describe('alarms', () => {
  const alarms = (from: Template = template) =>
    Object.values(from.findResources('AWS::CloudWatch::Alarm'))
      .map((alarm) => alarm.Properties)
      .filter((alarm) => stuckMetricOf(alarm) || /OutboxRelay/.test(JSON.stringify(alarm)));

  it('raise on any stuck message, and on two sweep intervals without the sweeper’s count', () => {
    const stuck = alarms().find((alarm) => stuckMetricOf(alarm));
    expect(stuck).toMatchObject({
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      EvaluationPeriods: 2,
      DatapointsToAlarm: 2,
      // A period without the sweeper's count is filled as one stuck message (issue 41): see
      // as-aws-runs-it.test.ts.
      TreatMissingData: 'ignore',
    });
    expect(stuck?.Metrics).toEqual(
      expect.arrayContaining([
        {
          Id: expect.any(String),
          MetricStat: {
            Metric: {
              Namespace: 'oncely',
              MetricName: OUTBOX_METRICS.stuck,
              Dimensions: [
                { Name: 'outbox', Value: 'Test/Outbox' },
                { Name: 'service', Value: 'oncely-outbox-sweeper' },
              ],
            },
            Period: 60,
            Stat: 'Maximum',
          },
          ReturnData: false,
        },
      ]),
    );
  });

  it('raise when the relay fails whole invocations', () => {
    expect(alarms().find((alarm) => alarm.MetricName === 'Errors')).toMatchObject({
      Namespace: 'AWS/Lambda',
      Dimensions: [{ Name: 'FunctionName', Value: { Ref: logicalId(outbox.relay) } }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
    expect(alarms()).toHaveLength(2);
  });

  it('notify the alarm topic when one is given', () => {
    const built = buildOutboxStack((own) => ({ alarmTopic: new Topic(own, 'Ops') }));
    const topic = built.stack.node.findChild('Ops') as Topic;
    const notified = alarms(built.template);
    expect(notified).toHaveLength(2);
    for (const alarm of notified)
      expect(alarm.AlarmActions).toEqual([{ Ref: logicalId(topic, built.stack) }]);
  });
});

describe('outputs', () => {
  it('name the table, its keys and the stuck bound under stable ids (a prefix for a second outbox)', () => {
    const outputs = template.findOutputs('*');
    // The log groups too, for the runbook (as-aws-runs-it.test.ts checks their values).
    const names = [...Object.values(OUTBOX_OUTPUTS), ...Object.values(OUTBOX_LOG_GROUP_OUTPUTS)];
    expect(
      Object.keys(outputs)
        .filter((key) => key.startsWith('Outbox'))
        .sort(),
    ).toEqual([...names].sort());
    expect(outputs).toMatchObject({
      OutboxTableName: { Value: { Ref: logicalId(outbox.table) } },
      OutboxPartitionKey: { Value: 'pk' },
      OutboxSortKey: { Value: 'sk' },
      OutboxStuckAfterSeconds: { Value: '300' },
    });
    const { template: second } = buildOutboxStack({ outputPrefix: 'Orders' });
    expect(
      Object.keys(second.findOutputs('*'))
        .filter((key) => key.startsWith('Orders'))
        .sort(),
    ).toEqual(names.map((name) => `Orders${name}`).sort());
  });
});

describe('in the sandbox', () => {
  it('sweeps after 10 s and counts as stuck after 30 s, unless told otherwise', () => {
    const local = buildOutboxStack({}, { context: { [SANDBOX_CONTEXT]: 'true' } });
    expect(environmentOf(local.template, 'Sweeper')).toMatchObject({
      [OUTBOX_ENVIRONMENT.sweepAfterSeconds]: '10',
      [OUTBOX_ENVIRONMENT.stuckAfterSeconds]: '30',
    });
    expect(local.template.findOutputs('OutboxStuckAfterSeconds').OutboxStuckAfterSeconds?.Value).toBe('30');
    const told = buildOutboxStack(
      { sweepAfter: Duration.seconds(20), stuckAfter: Duration.minutes(2) },
      { context: { [SANDBOX_CONTEXT]: 'true' } },
    );
    expect(environmentOf(told.template, 'Sweeper')).toMatchObject({
      [OUTBOX_ENVIRONMENT.sweepAfterSeconds]: '20',
      [OUTBOX_ENVIRONMENT.stuckAfterSeconds]: '120',
    });
  });
});

describe('on your own table', () => {
  const built = buildOutboxStack((own) => ({
    table: producerTable(own, { partition: AttributeType.STRING, sort: AttributeType.STRING }),
  }));

  it('adds the pending index to it and creates no table', () => {
    const tables = outboxTables(built.template);
    expect(tables).toHaveLength(1);
    expect(tables[0]?.[0]).toMatch(/^Orders/);
    expect(tables[0]?.[1].Properties.GlobalSecondaryIndexes).toEqual([
      expect.objectContaining({ IndexName: OUTBOX_PENDING_INDEX }),
    ]);
    expect(built.outbox.table.node.path).toBe('Test/Orders');
  });

  it('uses its key attributes: in the functions, for producers and in the outputs', () => {
    expect(built.outbox.layout).toMatchObject({ partitionKey: 'PK', sortKey: 'SK' });
    expect(environmentOf(built.template, 'Relay')).toMatchObject({
      [OUTBOX_ENVIRONMENT.partitionKey]: 'PK',
      [OUTBOX_ENVIRONMENT.sortKey]: 'SK',
    });
    expect(built.outbox.producerEnvironment).toMatchObject({
      [OUTBOX_ENVIRONMENT.partitionKey]: 'PK',
      [OUTBOX_ENVIRONMENT.sortKey]: 'SK',
    });
    expect(built.template.findOutputs('*')).toMatchObject({
      OutboxPartitionKey: { Value: 'PK' },
      OutboxSortKey: { Value: 'SK' },
    });
  });

  it('warns when sent items would never expire, its TTL not being on expiresAt', () => {
    const noTtl = buildOutboxStack((own) => ({
      table: producerTable(
        own,
        { partition: AttributeType.STRING, sort: AttributeType.STRING },
        { ttl: false },
      ),
    }));
    Annotations.fromStack(noTtl.stack).hasWarning('/Test/Outbox', Match.stringLikeRegexp('no TTL'));
    expect(Annotations.fromStack(built.stack).findWarning('*', Match.stringLikeRegexp('TTL'))).toEqual([]);
  });
});

describe('configuration errors, at synth', () => {
  const refused = (make: (stack: Stack) => Partial<OncelyOutboxProps>, message: RegExp) => {
    const build = () => buildOutboxStack(make);
    expect(build).toThrow(OncelyConfigurationError);
    expect(build).toThrow(/^Invalid OncelyOutbox Test\/Outbox: change these props and synthesize again:\n- /);
    expect(build).toThrow(message);
  };

  it.each([
    [
      'a numeric sort key',
      { partition: AttributeType.STRING, sort: AttributeType.NUMBER },
      StreamViewType.NEW_IMAGE,
      /keyed by PK \(S\) and SK \(N\): the outbox needs a string partition key and a string sort key/,
    ],
    [
      'no sort key',
      { partition: AttributeType.STRING },
      StreamViewType.NEW_IMAGE,
      /keyed by PK \(S\) alone: the outbox needs/,
    ],
    [
      'no stream',
      { partition: AttributeType.STRING, sort: AttributeType.STRING },
      'none' as const,
      /has no stream: .*Set `stream: StreamViewType.NEW_IMAGE`/,
    ],
    [
      'a stream without new images',
      { partition: AttributeType.STRING, sort: AttributeType.STRING },
      StreamViewType.KEYS_ONLY,
      /has a KEYS_ONLY stream: .*Set `stream: StreamViewType.NEW_IMAGE`/,
    ],
  ])('refuses your table with %s, saying what to change', (_, keys, stream, message) => {
    refused((own) => ({ table: producerTable(own, keys, { stream }) }), message);
  });

  it('refuses a table that already holds an outbox', () => {
    refused((own) => {
      const table = producerTable(own, { partition: AttributeType.STRING, sort: AttributeType.STRING });
      new OncelyOutbox(own, 'First', { queue: new Queue(own, 'Events', { fifo: true }), table });
      return { table };
    }, /already holds an OncelyOutbox: one table, one outbox/);
  });

  it('needs exactly one queue', () => {
    const { stack: own, pipeline } = buildOutboxStack();
    expect(() => new OncelyOutbox(own, 'Both', { pipeline, queue: pipeline.queue })).toThrow(
      /give `queue` or `pipeline`, not both/,
    );
    expect(() => new OncelyOutbox(own, 'Neither', {})).toThrow(/give the queue to publish to/);
  });

  it.each([
    [
      { sweepInterval: Duration.seconds(30) },
      /sweepInterval \(30 seconds\) must be a whole number of minutes/,
    ],
    [{ sweepInterval: Duration.hours(13) }, /sweepInterval \(13 hours\) must be a whole number of minutes/],
    [
      { sweepAfter: Duration.millis(1500) },
      /sweepAfter \(1 second 500 millis\) must be a whole number of seconds/,
    ],
    [
      { stuckAfter: Duration.seconds(60) },
      /stuckAfter \(1 minute\) must be longer than sweepAfter \(1 minute\)/,
    ],
    [{ relayBatchSize: 0 }, /relayBatchSize \(0\) must be a whole number from 1 to 10000/],
    [{ relayRetryAttempts: -1 }, /relayRetryAttempts \(-1\) must be a whole number from 0 to 10000: bounded/],
    [{ relayParallelization: 11 }, /relayParallelization \(11\) must be a whole number from 1 to 10/],
    [{ pendingShards: 33 }, /pendingShards \(33\) must be a whole number from 1 to 32/],
    [{ pendingShards: 0 }, /pendingShards \(0\) must be a whole number from 1 to 32/],
  ])('refuses %o with a clear message', (settings, message) => {
    refused(() => settings, message);
  });

  it('names every problem at once', () => {
    refused(
      (own) => ({
        table: producerTable(
          own,
          { partition: AttributeType.NUMBER, sort: AttributeType.STRING },
          { stream: 'none' },
        ),
        relayBatchSize: 0,
      }),
      /synthesize again:\n- .*keyed by[\s\S]*no stream[\s\S]*relayBatchSize/,
    );
  });
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the AWS Solutions pack, on either table', () => {
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
    const own = buildOutboxStack((s) => ({
      table: producerTable(s, { partition: AttributeType.STRING, sort: AttributeType.STRING }),
    }));
    expect(new AwsSolutionsChecks(own.app).validateScope(own.stack).violations).toEqual([]);
  });

  it('acknowledges only the two findings it explains', () => {
    const acknowledged = stack.node
      .findAll()
      .flatMap((construct) => construct.node.metadata)
      .filter((entry) => entry.type === 'aws:cdk:acknowledged-rules')
      .flatMap((entry) => Object.entries(entry.data as Record<string, string>));
    expect(acknowledged.map(([id]) => id.replace(/^annotation::/i, '')).sort()).toEqual([
      'AwsSolutions-IAM5[Resource::*]',
      'AwsSolutions-SQS3',
    ]);
    for (const [, reason] of acknowledged) expect(reason.length).toBeGreaterThan(60);
  });
});
