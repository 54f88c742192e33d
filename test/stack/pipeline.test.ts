import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Code, Function as LambdaFunction, Runtime } from 'aws-cdk-lib/aws-lambda';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { OncelyConfigurationError } from '../../lambdas/common/configuration-error.js';
import { METRICS_SCOPE_ENVIRONMENT } from '../../lambdas/common/metrics-scope.js';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment.js';
import { CONSUMER_METRICS } from '../../lambdas/consumer/telemetry.js';
import {
  EXPIRES_AT_ATTRIBUTE,
  LEGACY_UNRESOLVED_INDEX_NAME,
  UNRESOLVED_INDEX_NAME,
} from '../../lambdas/idempotency/record.js';
import { MONITOR_ENVIRONMENT } from '../../lambdas/monitor/environment.js';
import { UNRESOLVED_METRICS } from '../../lambdas/monitor/metrics.js';
import { PUBLISHER_ENVIRONMENT } from '../../lambdas/publisher/environment.js';
import { PUBLISHER_METRICS } from '../../lambdas/publisher/metrics.js';
import { OncelyPipeline } from '../../lib/constructs/oncely-pipeline.js';
import { PIPELINE_LOG_GROUP_OUTPUTS, PIPELINE_OUTPUTS } from '../../lib/constructs/pipeline-outputs.js';
import { buildStack, FIXTURE_CONSUMER } from './build-stack.js';

const { app, stack, template, pipeline } = buildStack();

/** The construct dropped into a user's own stack, next to their own resources. */
function pipelineInOwnStack() {
  const own = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'UserStack');
  const topic = new Topic(own, 'Ops');
  const pipeline = new OncelyPipeline(own, 'Events', {
    consumer: { entry: FIXTURE_CONSUMER },
    alarmTopic: topic,
  });
  return { stack: own, pipeline, topic };
}

const logicalId = (element: { node: { defaultChild?: unknown } }) =>
  stack.getLogicalId(element.node.defaultChild as CfnElement);

function queues() {
  const all = template.findResources('AWS::SQS::Queue');
  const [[queueId, queue]] = Object.entries(all).filter(([, q]) => q.Properties.RedrivePolicy);
  const [[dlqId, dlq]] = Object.entries(all).filter(([, q]) => !q.Properties.RedrivePolicy);
  return { queueId, queue: queue.Properties, dlqId, dlq: dlq.Properties };
}

describe('queues', () => {
  it('is a FIFO queue redriving to a FIFO DLQ after maxReceiveCount: maxAttempts × batchSize by default', () => {
    const { queue, dlq, dlqId } = queues();
    expect(queue.FifoQueue).toBe(true);
    expect(dlq.FifoQueue).toBe(true);
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
      maxReceiveCount: 50,
    });
  });

  it('derives the backstop from maxAttempts and batchSize, and tells the consumer maxAttempts (MAX_ATTEMPTS)', () => {
    const { template: own } = buildStack({ maxAttempts: 3, batchSize: 4 });
    own.hasResourceProperties('AWS::SQS::Queue', {
      RedrivePolicy: Match.objectLike({ maxReceiveCount: 12 }),
    });
    own.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [CONSUMER_ENVIRONMENT.maxAttempts]: '3' }) },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: { Variables: Match.objectLike({ [CONSUMER_ENVIRONMENT.maxAttempts]: '5' }) },
    });
  });

  it('uses high-throughput FIFO, SSE, a deliberate size limit and a 6× visibility timeout', () => {
    const { queue, dlq } = queues();
    expect(queue).toMatchObject({
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      SqsManagedSseEnabled: true,
      MaximumMessageSize: 262144,
      VisibilityTimeout: 180,
      MessageRetentionPeriod: 4 * 86400,
    });
    expect(dlq).toMatchObject({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 86400 });
  });

  it('denies every request that is not over TLS, on both queues', () => {
    const policies = template.findResources('AWS::SQS::QueuePolicy');
    expect(Object.keys(policies)).toHaveLength(2);
    for (const policy of Object.values(policies)) {
      expect(policy.Properties.PolicyDocument.Statement).toContainEqual(
        expect.objectContaining({
          Effect: 'Deny',
          Condition: { Bool: { 'aws:SecureTransport': 'false' } },
        }),
      );
    }
  });
});

describe('the idempotency table', () => {
  it('is on-demand with point-in-time recovery, and its TTL is the runtime’s attribute', () => {
    const tables = Object.values(template.findResources('AWS::DynamoDB::Table')).map((t) => t.Properties);
    expect(tables).toHaveLength(1);
    for (const table of tables) {
      expect(table).toMatchObject({
        BillingMode: 'PAY_PER_REQUEST',
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      });
    }
    const withTtl = tables.filter((t) => t.TimeToLiveSpecification);
    expect(withTtl.map((t) => t.TimeToLiveSpecification)).toEqual([
      { AttributeName: EXPIRES_AT_ATTRIBUTE, Enabled: true },
    ]);
  });
});

describe('functions', () => {
  it('run on the current Node.js runtime on ARM64', () => {
    const functions = Object.values(template.findResources('AWS::Lambda::Function')).map((f) => f.Properties);
    expect(functions).toHaveLength(3);
    for (const fn of functions) expect(fn).toMatchObject({ Runtime: 'nodejs24.x', Architectures: ['arm64'] });
  });

  it('set every variable their handler reads, and none it does not', () => {
    const environments = Object.entries(template.findResources('AWS::Lambda::Function')).map(([id, fn]) => ({
      id,
      names: Object.keys(fn.Properties.Environment.Variables).filter(
        (name) => !name.startsWith('POWERTOOLS_') && name !== 'NODE_OPTIONS',
      ),
    }));
    const publisher = environments.find((e) => e.id.includes('Publisher'))?.names.sort();
    const consumer = environments.find((e) => e.id.includes('Consumer'))?.names.sort();
    const monitor = environments.find((e) => e.id.includes('Monitor'))?.names.sort();
    expect(publisher).toEqual(
      [...Object.values(PUBLISHER_ENVIRONMENT), METRICS_SCOPE_ENVIRONMENT.pipeline].sort(),
    );
    // MAX_CONCURRENT_RECORDS is standardBatch's (standard-pipeline.test.ts). ONCELY_PIPELINE is
    // the dimension the metrics they publish carry, which the pipeline's alarms select.
    expect(consumer).toEqual(
      [...Object.values(CONSUMER_ENVIRONMENT), METRICS_SCOPE_ENVIRONMENT.pipeline]
        .filter((name) => name !== CONSUMER_ENVIRONMENT.maxConcurrentRecords)
        // The cache's, set only with leaseRecords: 'valkey' (valkey-lease-records.test.ts).
        .filter((name) => !name.startsWith('IDEMPOTENCY_VALKEY_'))
        .sort(),
    );
    expect(monitor).toEqual(
      [...Object.values(MONITOR_ENVIRONMENT), METRICS_SCOPE_ENVIRONMENT.pipeline]
        .filter((name) => !name.startsWith('IDEMPOTENCY_VALKEY_'))
        .sort(),
    );
  });

  it('consume the queue with partial batch responses and no batching window', () => {
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: 10 },
      MaximumBatchingWindowInSeconds: Match.absent(),
    });
  });

  it('never get a wildcard action or a wildcard resource', () => {
    for (const policy of Object.values(template.findResources('AWS::IAM::Policy'))) {
      for (const statement of policy.Properties.PolicyDocument.Statement) {
        for (const action of [statement.Action].flat()) expect(action).not.toMatch(/\*/);
        for (const resource of [statement.Resource].flat()) expect(resource).not.toBe('*');
      }
    }
  });

  it('get exactly the data actions they use', () => {
    const actionsOf = (logicalIdPart: string) =>
      Object.entries(template.findResources('AWS::IAM::Policy'))
        .filter(([id]) => id.includes(logicalIdPart))
        .flatMap(([, p]) =>
          p.Properties.PolicyDocument.Statement.flatMap((s: { Action: string }) => s.Action),
        )
        .sort();
    expect(actionsOf('Publisher')).toEqual([
      'dynamodb:DeleteItem',
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:SendMessage',
    ]);
    expect(actionsOf('Monitor')).toEqual([
      'dynamodb:Query',
      'dynamodb:UpdateItem',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
    ]);
    expect(actionsOf('Consumer')).toEqual(
      [
        'dynamodb:DeleteItem',
        'dynamodb:GetItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
        'logs:CreateLogStream',
        'logs:PutLogEvents',
        'sqs:ChangeMessageVisibility',
        'sqs:DeleteMessage',
        'sqs:GetQueueAttributes',
        'sqs:GetQueueUrl',
        'sqs:ReceiveMessage',
        'sqs:SendMessage',
      ].sort(),
    );
  });

  it("let the consumer send every request the idempotency store's code sends", () => {
    // Read from the store's own imports, so a request added there without its grant fails here
    // (the emulators enforce no IAM: only a deployed consumer would be refused).
    const source = readFileSync(new URL('../../lambdas/idempotency/store.ts', import.meta.url), 'utf8');
    const commands = /import \{([^}]*)\} from '@aws-sdk\/lib-dynamodb'/.exec(source)?.[1] ?? '';
    const actionOf: Record<string, string> = {
      GetCommand: 'dynamodb:GetItem',
      PutCommand: 'dynamodb:PutItem',
      UpdateCommand: 'dynamodb:UpdateItem',
      DeleteCommand: 'dynamodb:DeleteItem',
      // A transaction is authorised per item: the store's items are the record's Put.
      TransactWriteCommand: 'dynamodb:PutItem',
    };
    const sent = [...commands.matchAll(/\b(\w+Command)\b/g)].map(([, name]) => name as string);
    expect(sent.filter((name) => !(name in actionOf))).toEqual([]);
    const table = { 'Fn::GetAtt': [logicalId(pipeline.idempotencyTable), 'Arn'] };
    const granted = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([id]) => id.includes('Consumer'))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement)
      .filter(
        (statement: { Resource: unknown }) => JSON.stringify(statement.Resource) === JSON.stringify(table),
      )
      .flatMap((statement: { Action: string | string[] }) => [statement.Action].flat());
    expect(sent.map((name) => actionOf[name]).filter((action) => !granted.includes(action))).toEqual([]);
  });

  it('let the monitor query only the unresolved index, and update (never read) operation records', () => {
    const monitorStatements = Object.entries(template.findResources('AWS::IAM::Policy'))
      .filter(([id]) => id.includes('Monitor'))
      .flatMap(([, p]) => p.Properties.PolicyDocument.Statement)
      .filter((statement: { Action: string }) => String(statement.Action).startsWith('dynamodb:'));
    expect(monitorStatements).toEqual([
      expect.objectContaining({
        Action: 'dynamodb:Query',
        Effect: 'Allow',
        // The unresolved index, and the earlier versions' one it falls back on while the new one backfills.
        Resource: [UNRESOLVED_INDEX_NAME, LEGACY_UNRESOLVED_INDEX_NAME].map((index) => ({
          'Fn::Join': [
            '',
            [{ 'Fn::GetAtt': [logicalId(pipeline.idempotencyTable), 'Arn'] }, `/index/${index}`],
          ],
        })),
      }),
      expect.objectContaining({
        Action: 'dynamodb:UpdateItem',
        Effect: 'Allow',
        Resource: { 'Fn::GetAtt': [logicalId(pipeline.idempotencyTable), 'Arn'] },
        Condition: {
          'ForAllValues:StringNotLike': { 'dynamodb:LeadingKeys': ['publish#*', 'oncely/dead-lettered#*'] },
        },
      }),
    ]);
  });

  it('lets another principal invoke the publisher through grantPublish', () => {
    const { stack: own, pipeline } = pipelineInOwnStack();
    const role = new Role(own, 'OtherService', {
      assumedBy: new ServicePrincipal('ecs-tasks.amazonaws.com'),
    });
    pipeline.grantPublish(role);
    Template.fromStack(own).hasResourceProperties('AWS::IAM::Policy', {
      Roles: [{ Ref: own.getLogicalId(role.node.defaultChild as CfnElement) }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: 'lambda:InvokeFunction',
            Resource: Match.arrayWith([
              { 'Fn::GetAtt': [own.getLogicalId(pipeline.publisher.node.defaultChild as CfnElement), 'Arn'] },
            ]),
          }),
        ]),
      },
    });
  });
});

describe('the unresolved-records monitor', () => {
  it('runs on an EventBridge schedule, every 5 minutes by default', () => {
    const rules = Object.values(template.findResources('AWS::Events::Rule')).map((r) => r.Properties);
    expect(rules).toEqual([
      expect.objectContaining({
        ScheduleExpression: 'rate(5 minutes)',
        State: 'ENABLED',
        Targets: [
          expect.objectContaining({
            Arn: { 'Fn::GetAtt': [logicalId(pipeline.unresolvedMonitor), 'Arn'] },
            RetryPolicy: { MaximumEventAgeInSeconds: 300 },
          }),
        ],
      }),
    ]);
  });

  it('may be invoked by that rule alone', () => {
    template.hasResourceProperties('AWS::Lambda::Permission', {
      Action: 'lambda:InvokeFunction',
      Principal: 'events.amazonaws.com',
      FunctionName: { 'Fn::GetAtt': [logicalId(pipeline.unresolvedMonitor), 'Arn'] },
      SourceArn: { 'Fn::GetAtt': [logicalId(pipeline.unresolvedCheckSchedule), 'Arn'] },
    });
    expect(Object.keys(template.findResources('AWS::Lambda::Permission'))).toHaveLength(1);
  });

  it('publishes under the pipeline’s namespace with its own service name, from its own log group', () => {
    template.hasResourceProperties('AWS::Lambda::Function', {
      Environment: {
        Variables: Match.objectLike({
          POWERTOOLS_SERVICE_NAME: 'oncely-monitor',
          POWERTOOLS_METRICS_NAMESPACE: 'oncely',
        }),
      },
      LoggingConfig: { LogGroup: { Ref: Match.stringLikeRegexp('PipelineMonitorLogs') } },
    });
  });

  it('follows unresolvedCheckInterval, in whole minutes', () => {
    const { template: hourly } = buildStack({ unresolvedCheckInterval: Duration.hours(1) });
    hourly.hasResourceProperties('AWS::Events::Rule', { ScheduleExpression: 'rate(1 hour)' });
    hourly.hasResourceProperties('AWS::CloudWatch::Alarm', {
      MetricName: UNRESOLVED_METRICS.inDoubt,
      Statistic: 'Maximum',
      Period: 3600,
    });
  });
});

describe('alarms and outputs', () => {
  const alarms = () =>
    Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
  /** A custom metric's dimensions: its function's service, and the pipeline it belongs to (issue 41). */
  const dimensions = (service: string) => [
    { Name: 'pipeline', Value: 'Test/Pipeline' },
    { Name: 'service', Value: service },
  ];
  /** The metric of the monitor-silent alarm's math: the monitor's count of samples per interval. */
  const silentAlarm = () =>
    alarms().find((a) => a.Metrics?.some((m: { Expression?: string }) => m.Expression === 'FILL(counts, 0)'));

  it('alarm on DLQ depth, in-doubt and retry-pending records, a silent monitor, consumer and publisher errors, record lives not extended and the oldest message’s age', () => {
    expect(
      alarms()
        .map(
          (a) =>
            a.MetricName ??
            (a === silentAlarm() ? 'monitor silent (math)' : 'publisher faults + throttles (math)'),
        )
        .sort(),
    ).toEqual(
      [
        'ApproximateAgeOfOldestMessage',
        'ApproximateNumberOfMessagesVisible',
        'Errors',
        CONSUMER_METRICS.recordLifeNotExtended,
        UNRESOLVED_METRICS.inDoubt,
        'monitor silent (math)',
        UNRESOLVED_METRICS.retryPending,
        'publisher faults + throttles (math)',
      ].sort(),
    );
  });

  it('raise on any publisher fault or throttle, not on a refused request: Errors minus PublishRequestsRefused, plus Throttles', () => {
    const publisherAlarm = alarms().find((a) => a.Metrics !== undefined && a !== silentAlarm());
    const publisher = { Name: 'FunctionName', Value: { Ref: logicalId(pipeline.publisher) } };
    const [publisherFunction] = Object.values(template.findResources('AWS::Lambda::Function')).filter(
      (f) => f.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === 'oncely-publisher',
    );
    const variables = publisherFunction?.Properties.Environment.Variables;
    const metric = (id: string, namespace: string, name: string, dimensions: unknown[]) =>
      expect.objectContaining({
        Id: id,
        MetricStat: expect.objectContaining({
          Metric: { Namespace: namespace, MetricName: name, Dimensions: dimensions },
          Stat: 'Sum',
        }),
        ReturnData: false,
      });
    expect(publisherAlarm).toMatchObject({
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 1,
      TreatMissingData: 'notBreaching',
    });
    expect(publisherAlarm?.Metrics).toEqual(
      expect.arrayContaining([
        metric('errors', 'AWS/Lambda', 'Errors', [publisher]),
        // Counted by the publisher in the namespace and service it publishes to.
        metric(
          'refused',
          variables.POWERTOOLS_METRICS_NAMESPACE,
          PUBLISHER_METRICS.refused,
          dimensions(variables.POWERTOOLS_SERVICE_NAME),
        ),
        metric('throttles', 'AWS/Lambda', 'Throttles', [publisher]),
        expect.objectContaining({ Expression: 'FILL(errors, 0) - FILL(refused, 0) + FILL(throttles, 0)' }),
      ]),
    );
  });

  it('stay raised while any RETRY_PENDING record exists, as for IN_DOUBT ones', () => {
    expect(alarms().find((a) => a.MetricName === UNRESOLVED_METRICS.retryPending)).toMatchObject({
      Namespace: 'oncely',
      Dimensions: dimensions('oncely-monitor'),
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'ignore',
    });
  });

  it('raise on any record life not extended, in the namespace and service the consumer publishes to', () => {
    const alarm = alarms().find((a) => a.MetricName === CONSUMER_METRICS.recordLifeNotExtended);
    const [consumer] = Object.values(template.findResources('AWS::Lambda::Function')).filter(
      (f) => f.Properties.Environment?.Variables?.POWERTOOLS_SERVICE_NAME === 'oncely-consumer',
    );
    const variables = consumer?.Properties.Environment.Variables;
    expect(alarm).toMatchObject({
      Namespace: variables.POWERTOOLS_METRICS_NAMESPACE,
      Dimensions: dimensions(variables.POWERTOOLS_SERVICE_NAME),
      Statistic: 'Sum',
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('stay raised while any IN_DOUBT record exists: the monitor’s count over each interval, not events', () => {
    const inDoubt = alarms().find(
      (a) => a.MetricName === UNRESOLVED_METRICS.inDoubt && a.Statistic === 'Maximum',
    );
    expect(inDoubt).toMatchObject({
      Namespace: 'oncely',
      Dimensions: dimensions('oncely-monitor'),
      Period: 300,
      EvaluationPeriods: 1,
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
      TreatMissingData: 'ignore',
    });
  });

  it('raise when the monitor has reported nothing for three intervals', () => {
    const silent = silentAlarm();
    expect(silent).toMatchObject({
      EvaluationPeriods: 3,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'ignore',
    });
    expect(silent?.Metrics).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          MetricStat: {
            Metric: {
              Namespace: 'oncely',
              MetricName: UNRESOLVED_METRICS.inDoubt,
              Dimensions: dimensions('oncely-monitor'),
            },
            Period: 300,
            Stat: 'SampleCount',
          },
          ReturnData: false,
        }),
      ]),
    );
  });

  it('notify an SNS topic when one is given', () => {
    const { stack: own, topic } = pipelineInOwnStack();
    const alarms = Object.values(Template.fromStack(own).findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(8);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([
        { Ref: own.getLogicalId(topic.node.defaultChild as CfnElement) },
      ]);
    }
  });

  it('export every name another service needs, under stable ids (a prefix for a second pipeline)', () => {
    // The log groups too, for the runbook (as-aws-runs-it.test.ts checks their values).
    const names = [...Object.values(PIPELINE_OUTPUTS), ...Object.values(PIPELINE_LOG_GROUP_OUTPUTS)];
    const outputs = Object.keys(template.findOutputs('*'));
    expect(outputs.sort()).toEqual([...names].sort());
    const second = buildStack({ outputPrefix: 'Orders' }).template;
    expect(Object.keys(second.findOutputs('*')).sort()).toEqual(names.map((name) => `Orders${name}`).sort());
  });
});

describe('your consumer', () => {
  it('is bundled from your entry, with your options and the environment fifoBatch reads', () => {
    const { template: own } = buildStack({
      consumer: { entry: FIXTURE_CONSUMER, environment: { MY_SETTING: 'x' }, description: 'my consumer' },
    });
    own.hasResourceProperties('AWS::Lambda::Function', {
      Description: 'my consumer',
      Environment: {
        Variables: Match.objectLike({ MY_SETTING: 'x', [CONSUMER_ENVIRONMENT.dlqUrl]: Match.anyValue() }),
      },
    });
  });

  it('is bundled as an ES module (index.mjs), the asset package.json still written after your own hooks', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'oncely-hooks-'));
    try {
      const own = new Stack(new App({ outdir }), 'Own');
      const yours = (_inputDir: string, outputDir: string) => [
        `node -e "require('node:fs').writeFileSync(process.argv[1], 'yours')" "${join(outputDir, 'yours.txt')}"`,
      ];
      const hooks = { beforeBundling: () => [], beforeInstall: () => [], afterBundling: yours };
      new OncelyPipeline(own, 'Pipeline', {
        consumer: { entry: FIXTURE_CONSUMER, bundling: { commandHooks: hooks } },
      });
      (own.node.root as App).synth();
      const assets = readdirSync(outdir).filter((name) => name.startsWith('asset.'));
      const consumerAsset = assets.find((name) => existsSync(join(outdir, name, 'yours.txt')));
      expect(consumerAsset).toBeDefined();
      for (const asset of assets) {
        expect(existsSync(join(outdir, asset, 'index.mjs'))).toBe(true);
        expect(existsSync(join(outdir, asset, 'index.js'))).toBe(false);
        // For a CommonJS bundle, should you choose one: an index.mjs is an ES module by its name.
        expect(JSON.parse(readFileSync(join(outdir, asset, 'package.json'), 'utf8'))).toEqual({
          type: 'commonjs',
        });
      }
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
  });

  it('may be a function you built: the queue is attached to it and its environment set', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const own = new Stack(app, 'Own');
    const fn = new LambdaFunction(own, 'MyConsumer', {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => ({ batchItemFailures: [] });'),
    });
    const pipeline = new OncelyPipeline(own, 'Pipeline', { consumer: { function: fn } });
    expect(pipeline.consumer).toBe(fn);
    const template = Template.fromStack(own);
    template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: { Ref: own.getLogicalId(fn.node.defaultChild as CfnElement) },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Environment: {
        Variables: Match.objectLike({ [CONSUMER_ENVIRONMENT.idempotencyTableName]: Match.anyValue() }),
      },
    });
  });

  it('lets another function of yours use the idempotency core through grantIdempotency', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const own = new Stack(app, 'Own');
    const pipeline = new OncelyPipeline(own, 'Pipeline', { consumer: { entry: FIXTURE_CONSUMER } });
    const api = new LambdaFunction(own, 'Api', {
      runtime: Runtime.NODEJS_24_X,
      handler: 'index.handler',
      code: Code.fromInline('export const handler = async () => 1;'),
    });
    pipeline.grantIdempotency(api);
    const template = Template.fromStack(own);
    template.hasResourceProperties('AWS::IAM::Policy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Action: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
            Resource: {
              'Fn::GetAtt': [
                own.getLogicalId(pipeline.idempotencyTable.node.defaultChild as CfnElement),
                'Arn',
              ],
            },
          }),
        ]),
      },
    });
    template.hasResourceProperties('AWS::Lambda::Function', {
      Handler: 'index.handler',
      Environment: {
        Variables: Match.objectLike({
          [CONSUMER_ENVIRONMENT.idempotencyTableName]: Match.anyValue(),
          [CONSUMER_ENVIRONMENT.idempotencyTtlSeconds]: Match.anyValue(),
        }),
      },
    });
  });
});

describe('synth-time checks', () => {
  it.each([
    [
      { idempotencyTtl: Duration.days(10) },
      /idempotencyTtl \(10 days\) is shorter than queueRetention \+ dlqRetention/,
    ],
    [
      { consumerTimeout: Duration.seconds(60), visibilityTimeout: Duration.seconds(300) },
      /at least 6 × consumerTimeout/,
    ],
    [{ batchSize: 11 }, /batchSize \(11\) must be a whole number from 1 to 10/],
    [{ maxAttempts: 0 }, /maxAttempts \(0\) must be a whole number of at least 1/],
    [
      { maxReceiveCount: 5 },
      /maxReceiveCount \(5\) must be at least maxAttempts × batchSize \(5 × 10 = 50\): a record can wait/,
    ],
    [
      { maxAttempts: 3, batchSize: 5, maxReceiveCount: 14 },
      /maxReceiveCount \(14\) must be at least maxAttempts × batchSize \(3 × 5 = 15\)/,
    ],
    [
      { unresolvedCheckInterval: Duration.seconds(30) },
      /unresolvedCheckInterval \(30 seconds\) must be a whole/,
    ],
    [
      { unresolvedCheckInterval: Duration.seconds(90) },
      /unresolvedCheckInterval \(1 minute 30 seconds\) must be a whole/,
    ],
    [{ unresolvedCheckInterval: Duration.hours(9) }, /unresolvedCheckInterval \(9 hours\) must be a whole/],
  ])('refuses %o with a clear message', (settings, message) => {
    expect(() => buildStack(settings)).toThrow(OncelyConfigurationError);
    expect(() => buildStack(settings)).toThrow(message);
  });

  it('names the construct and every problem at once', () => {
    const error = catchError(() => buildStack({ batchSize: 0, maxReceiveCount: 0 }));
    expect(error).toBeInstanceOf(OncelyConfigurationError);
    expect(error).toMatchObject({
      name: 'OncelyConfigurationError',
      retryable: false,
      sources: ['Test/Pipeline'],
    });
    expect((error as Error).message).toMatch(
      /^Invalid OncelyPipeline Test\/Pipeline: change these props and synthesize again:\n- batchSize[\s\S]*\n- maxReceiveCount/,
    );
  });
});

describe('cdk-nag', () => {
  it('finds nothing unacknowledged in the AWS Solutions pack', () => {
    const report = new AwsSolutionsChecks(app).validateScope(stack);
    expect(report.violations).toEqual([]);
    expect(report.success).toBe(true);
  });

  it('does report a finding when one is there (so the check above can fail)', () => {
    const { app: bad, stack: badStack } = buildStack();
    new Queue(badStack, 'Careless', { encryption: QueueEncryption.UNENCRYPTED });
    const report = new AwsSolutionsChecks(bad).validateScope(badStack);
    expect(report.success).toBe(false);
    expect(report.violations.map((v) => v.ruleName)).toEqual(
      expect.arrayContaining([expect.stringMatching(/SQS/)]),
    );
  });
});

function catchError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
}
