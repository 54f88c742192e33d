import { DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { EXPIRES_AT_ATTRIBUTE } from '../../src/idempotency/index.js';
import { ENTRY_METADATA_KEY } from '../../src/cdk/oncely-pipeline.js';
import type { CloudFormationTemplate } from '../../src/sandbox/cloudformation.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from '../../src/sandbox/local-aws-config.js';
import { type ProvisionedStack, provisionTemplate } from '../../src/sandbox/provision.js';
import { synthesizeTemplate } from '../../src/sandbox/synthesize.js';
import { uniqueName } from '../support/dynamodb.js';

const sqs = new SQSClient(localAwsConfig(inject('sqsEndpoint')));
const dynamodb = new DynamoDBClient(localAwsConfig(inject('dynamodbEndpoint')));
let provisioned: ProvisionedStack;

const provision = (template: CloudFormationTemplate) =>
  provisionTemplate(template, {
    sqs,
    dynamodb,
    stackName: uniqueName('Prov'),
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
  });

beforeAll(async () => {
  const { template } = synthesizeTemplate({ notificationUrl: 'http://127.0.0.1:9/notify' });
  provisioned = await provision(template);
});

afterAll(() => {
  sqs.destroy();
  dynamodb.destroy();
});

const queueNamed = (part: string) => {
  const queue = provisioned.queues.find((q) => q.logicalId.includes(part));
  if (!queue) throw new Error(`no queue ${part}`);
  return queue;
};

describe('provisioning the synthesized stack into the emulators', () => {
  it('creates the FIFO queue with its real properties and a redrive policy to the local DLQ', async () => {
    const queue = queueNamed('PipelineQueue');
    const dlq = queueNamed('DeadLetterQueue');
    expect(queue.name).toMatch(/\.fifo$/);
    const { Attributes } = await sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['All'] }),
    );
    expect(Attributes).toMatchObject({
      FifoQueue: 'true',
      DeduplicationScope: 'messageGroup',
      FifoThroughputLimit: 'perMessageGroupId',
      VisibilityTimeout: '180',
      MessageRetentionPeriod: String(4 * 86400),
      MaximumMessageSize: '262144',
    });
    expect(JSON.parse(String(Attributes?.RedrivePolicy))).toEqual({
      deadLetterTargetArn: dlq.arn,
      maxReceiveCount: 5,
    });
  });

  it('creates the tables with their key schema and the TTL attribute', async () => {
    expect(provisioned.tables).toHaveLength(2);
    for (const table of provisioned.tables) {
      const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table.name }));
      expect(Table?.KeySchema).toEqual([{ AttributeName: 'id', KeyType: 'HASH' }]);
    }
    const idempotency = provisioned.tables.find((t) => t.logicalId.includes('Idempotency'));
    const { TimeToLiveDescription } = await dynamodb.send(
      new DescribeTimeToLiveCommand({ TableName: String(idempotency?.name) }),
    );
    expect(TimeToLiveDescription).toMatchObject({
      AttributeName: EXPIRES_AT_ATTRIBUTE,
      TimeToLiveStatus: 'ENABLED',
    });
  });

  it('resolves each function’s environment to the local resources', () => {
    const publisher = provisioned.functions.find((f) => f.logicalId.includes('Publisher'));
    const consumer = provisioned.functions.find((f) => f.logicalId.includes('Consumer'));
    const idempotency = provisioned.tables.find((t) => t.logicalId.includes('Idempotency'));
    expect(publisher).toMatchObject({
      entry: 'lambdas/publisher/handler.ts',
      exportName: 'handler',
      timeoutSeconds: 30,
      environment: { QUEUE_URL: queueNamed('PipelineQueue').url, IDEMPOTENCY_TABLE_NAME: idempotency?.name },
    });
    expect(consumer?.environment).toMatchObject({
      DLQ_URL: queueNamed('DeadLetterQueue').url,
      NOTIFICATION_URL: 'http://127.0.0.1:9/notify',
    });
  });

  it('describes the event source mapping with Lambda’s settings', () => {
    expect(provisioned.eventSources).toEqual([
      expect.objectContaining({
        queue: queueNamed('PipelineQueue'),
        functionName: provisioned.functions.find((f) => f.logicalId.includes('Consumer'))?.name,
        batchSize: 10,
        reportBatchItemFailures: true,
        maxConcurrency: 10,
      }),
    ]);
  });

  it('describes the schedule rule that runs the unresolved-records monitor', () => {
    const monitor = provisioned.functions.find((f) => f.logicalId.includes('Monitor'));
    expect(monitor).toMatchObject({ entry: 'lambdas/monitor/handler.ts', exportName: 'handler' });
    expect(provisioned.schedules).toEqual([
      {
        logicalId: expect.stringContaining('UnresolvedCheckSchedule'),
        name: expect.any(String),
        arn: expect.stringMatching(/^arn:aws:events:us-east-1:123456789012:rule\//),
        expression: 'rate(5 minutes)',
        intervalMs: 5 * 60_000,
        functionNames: [monitor?.name],
      },
    ]);
    expect(provisioned.schedules[0].arn.endsWith(`/${provisioned.schedules[0].name}`)).toBe(true);
  });

  it('lists what it does not emulate instead of skipping it silently', () => {
    const types = new Set(provisioned.notEmulated.map((r) => r.type));
    expect([...types].sort()).toEqual(
      [
        'AWS::CloudWatch::Alarm',
        'AWS::IAM::Policy',
        'AWS::IAM::Role',
        'AWS::Logs::LogGroup',
        'AWS::SQS::QueuePolicy',
      ].sort(),
    );
  });
});

describe('provisioning schedule rules', () => {
  /** One function, and one rule invoking it with the permission CDK's LambdaFunction target adds. */
  function scheduledTemplate(rule: Record<string, unknown>, withPermission = true): CloudFormationTemplate {
    const permission = {
      Type: 'AWS::Lambda::Permission',
      Properties: {
        Action: 'lambda:InvokeFunction',
        FunctionName: { 'Fn::GetAtt': ['Job', 'Arn'] },
        Principal: 'events.amazonaws.com',
        SourceArn: { 'Fn::GetAtt': ['Every', 'Arn'] },
      },
    };
    return {
      Resources: {
        Job: {
          Type: 'AWS::Lambda::Function',
          Properties: { FunctionName: 'job', Handler: 'index.handler' },
          Metadata: { [ENTRY_METADATA_KEY]: 'lambdas/monitor/handler.ts' },
        },
        Every: {
          Type: 'AWS::Events::Rule',
          Properties: { Targets: [{ Id: 'Target0', Arn: { 'Fn::GetAtt': ['Job', 'Arn'] } }], ...rule },
        },
        ...(withPermission && { Allow: permission }),
      },
    };
  }

  it.each([
    ['rate(1 minute)', 60_000],
    ['rate(2 hours)', 2 * 3_600_000],
    ['rate(1 day)', 86_400_000],
  ])(
    'runs %s every %d ms, and counts the rule and its permission as emulated',
    async (expression, intervalMs) => {
      const { schedules, notEmulated } = await provision(
        scheduledTemplate({ ScheduleExpression: expression }),
      );
      expect(schedules).toEqual([
        expect.objectContaining({ expression, intervalMs, functionNames: ['job'] }),
      ]);
      expect(notEmulated).toEqual([]);
    },
  );

  it.each([
    [
      { ScheduleExpression: 'cron(0 12 * * ? *)' },
      true,
      /cron\(0 12 \* \* \? \*\) is not emulated; only rate/,
    ],
    [{ EventPattern: { source: ['aws.s3'] } }, true, /event-pattern rules are not emulated/],
    [
      { ScheduleExpression: 'rate(5 minutes)' },
      false,
      /no AWS::Lambda::Permission lets EventBridge invoke job/,
    ],
  ])('does not run %o (permission: %s), and says why', async (rule, withPermission, note) => {
    const { schedules, notEmulated } = await provision(scheduledTemplate(rule, withPermission));
    expect(schedules).toEqual([]);
    expect(notEmulated).toContainEqual({
      logicalId: 'Every',
      type: 'AWS::Events::Rule',
      note: expect.stringMatching(note),
    });
  });
});
