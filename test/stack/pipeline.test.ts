import { App, type CfnElement, Duration, Stack } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { CONSUMER_ENVIRONMENT } from '../../lambdas/consumer/environment';
import { PUBLISHER_ENVIRONMENT } from '../../lambdas/publisher/environment';
import { CONSUMER_METRICS } from '../../lambdas/runtime/consumer/telemetry';
import { EXPIRES_AT_ATTRIBUTE } from '../../lambdas/runtime/idempotency';
import { OncelyPipeline } from '../../lib/oncely-pipeline';
import { PipelineConfigurationError } from '../../lib/pipeline-settings';
import { STACK_OUTPUTS } from '../../lib/stack-outputs';
import { buildStack } from './build-stack';

const { app, stack, template } = buildStack();

/** The construct dropped into a user's own stack, next to their own resources. */
function pipelineInOwnStack() {
  const own = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'UserStack');
  const topic = new Topic(own, 'Ops');
  const pipeline = new OncelyPipeline(own, 'Events', {
    notificationUrl: 'https://mail.example.com',
    alarmTopic: topic,
  });
  return { stack: own, pipeline, topic };
}

function queues() {
  const all = template.findResources('AWS::SQS::Queue');
  const [[queueId, queue]] = Object.entries(all).filter(([, q]) => q.Properties.RedrivePolicy);
  const [[dlqId, dlq]] = Object.entries(all).filter(([, q]) => !q.Properties.RedrivePolicy);
  return { queueId, queue: queue.Properties, dlqId, dlq: dlq.Properties };
}

describe('queues', () => {
  it('is a FIFO queue redriving to a FIFO DLQ after maxReceiveCount', () => {
    const { queue, dlq, dlqId } = queues();
    expect(queue.FifoQueue).toBe(true);
    expect(dlq.FifoQueue).toBe(true);
    expect(queue.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
      maxReceiveCount: 5,
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

describe('tables', () => {
  it('are on-demand with point-in-time recovery; the idempotency TTL is the runtime’s attribute', () => {
    const tables = Object.values(template.findResources('AWS::DynamoDB::Table')).map((t) => t.Properties);
    expect(tables).toHaveLength(2);
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
    expect(functions).toHaveLength(2);
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
    expect(publisher).toEqual(Object.values(PUBLISHER_ENVIRONMENT).sort());
    const { notificationTimeoutMs: _default, ...setByStack } = CONSUMER_ENVIRONMENT;
    expect(consumer).toEqual(Object.values(setByStack).sort());
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
      'dynamodb:PutItem',
      'dynamodb:UpdateItem',
      'logs:CreateLogStream',
      'logs:PutLogEvents',
      'sqs:SendMessage',
    ]);
    expect(actionsOf('Consumer')).toEqual(
      [
        'dynamodb:DeleteItem',
        'dynamodb:PutItem',
        'dynamodb:PutItem',
        'dynamodb:UpdateItem',
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

describe('alarms and outputs', () => {
  it('alarm on DLQ depth, in-doubt records, consumer errors and the oldest message’s age', () => {
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')).map((a) => a.Properties);
    expect(alarms.map((a) => a.MetricName).sort()).toEqual(
      [
        'ApproximateAgeOfOldestMessage',
        'ApproximateNumberOfMessagesVisible',
        'Errors',
        CONSUMER_METRICS.inDoubt,
      ].sort(),
    );
    const inDoubt = alarms.find((a) => a.MetricName === CONSUMER_METRICS.inDoubt);
    expect(inDoubt).toMatchObject({
      Namespace: 'oncely',
      Dimensions: [{ Name: 'service', Value: 'oncely-consumer' }],
      Threshold: 0,
      ComparisonOperator: 'GreaterThanThreshold',
    });
  });

  it('notify an SNS topic when one is given', () => {
    const { stack: own, topic } = pipelineInOwnStack();
    const alarms = Object.values(Template.fromStack(own).findResources('AWS::CloudWatch::Alarm'));
    expect(alarms).toHaveLength(4);
    for (const alarm of alarms) {
      expect(alarm.Properties.AlarmActions).toEqual([
        { Ref: own.getLogicalId(topic.node.defaultChild as CfnElement) },
      ]);
    }
  });

  it('export every name another service needs', () => {
    const outputs = Object.keys(template.findOutputs('*'));
    expect(outputs.sort()).toEqual(Object.values(STACK_OUTPUTS).sort());
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
  ])('refuses %o with a clear message', (settings, message) => {
    expect(() => buildStack(settings)).toThrow(PipelineConfigurationError);
    expect(() => buildStack(settings)).toThrow(message);
  });

  it('names every problem at once', () => {
    expect(() => buildStack({ batchSize: 0, maxReceiveCount: 0 })).toThrow(/batchSize[\s\S]*maxReceiveCount/);
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
