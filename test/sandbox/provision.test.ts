import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { DescribeStreamCommand, DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EXPIRES_AT_ATTRIBUTE,
  UNRESOLVED_ATTRIBUTE,
  UPDATED_AT_ATTRIBUTE,
} from '../../lambdas/idempotency/record.js';
import { LAMBDA_ASSET_PACKAGE_JSON, lambdaBundleFile } from '../../lib/constructs/bundling.js';
import type { AsyncAttempt } from '../../sandbox/async-invocation.js';
import type { CloudFormationTemplate } from '../../sandbox/cloudformation.js';
import { LocalFunctionRuntime } from '../../sandbox/function-runtime.js';
import type { InvocationResult } from '../../sandbox/lambda-context.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type ProvisionedStack, provisionTemplate } from '../../sandbox/provision.js';
import { startScheduleRunner } from '../../sandbox/schedule-runner.js';
import { type CloudAssembly, synthesizeApp } from '../../sandbox/synthesize.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
const dynamodb = new DynamoDBClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
/** Where the hand-written templates' assets are: `aws:asset:path` `functions` is the fixtures' handlers. */
const FIXTURES = resolve('test/sandbox/fixtures');
let assembly: CloudAssembly | undefined;
let provisioned: ProvisionedStack;

const provision = (
  template: CloudFormationTemplate,
  options: { assemblyDirectory?: string; exports?: ReadonlyMap<string, string> } = {},
) =>
  provisionTemplate(template, {
    sqs,
    dynamodb,
    stackName: uniqueName('Prov'),
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    assemblyDirectory: options.assemblyDirectory ?? FIXTURES,
    exports: options.exports,
  });

beforeAll(async () => {
  // The example shop, synthesised as `oncely local` does (the app's sandbox defaults, bundling on),
  // with a context value of the command line's over those defaults.
  assembly = await synthesizeApp({
    appDirectory: '.',
    context: { notificationUrl: 'http://127.0.0.1:9/notify', consumerTimeoutSeconds: '5' },
  });
  const [stack] = assembly.stacks;
  provisioned = await provision(stack.template, { assemblyDirectory: stack.assemblyDirectory });
}, 240_000);

afterAll(() => {
  assembly?.remove();
  sqs.destroy();
  dynamodb.destroy();
});

/** A Node.js function whose asset is the fixtures' handlers, as `cdk synth` describes one. */
function nodeFunction(properties: Record<string, unknown> = {}, assetPath = 'functions') {
  return {
    Type: 'AWS::Lambda::Function',
    Properties: { Handler: 'functions.echo', Runtime: 'nodejs24.x', ...properties },
    Metadata: { 'aws:asset:path': assetPath, 'aws:asset:is-bundled': true, 'aws:asset:property': 'Code' },
  };
}

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
      // 6 × the consumer's timeout, from the command line's context.
      VisibilityTimeout: '30',
      MessageRetentionPeriod: String(4 * 86400),
      MaximumMessageSize: '262144',
    });
    expect(JSON.parse(String(Attributes?.RedrivePolicy))).toEqual({
      deadLetterTargetArn: dlq.arn,
      // maxAttempts × batchSize: the backstop behind the consumer's own count (DESIGN §5).
      maxReceiveCount: 50,
    });
  });

  it('creates the tables with their key schema', async () => {
    // The ledger and the idempotency table, keyed by id; the orders table, which holds the outbox.
    expect(provisioned.tables).toHaveLength(3);
    for (const table of provisioned.tables) {
      const { Table } = await dynamodb.send(new DescribeTableCommand({ TableName: table.name }));
      expect(Table?.KeySchema).toEqual(
        table.logicalId.includes('Orders')
          ? [
              { AttributeName: 'pk', KeyType: 'HASH' },
              { AttributeName: 'sk', KeyType: 'RANGE' },
            ]
          : [{ AttributeName: 'id', KeyType: 'HASH' }],
      );
    }
  });

  it('keeps an item past its TTL readable, as AWS may for two days, where DynamoDB Local deletes it in seconds', async () => {
    const idempotency = provisioned.tables.find((t) => t.logicalId.includes('Idempotency'));
    // A table with TTL on in DynamoDB Local shows when its sweep has deleted the expired item.
    const control = uniqueName('TtlControl');
    await dynamodb.send(
      new CreateTableCommand({
        TableName: control,
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: control,
        TimeToLiveSpecification: { AttributeName: EXPIRES_AT_ATTRIBUTE, Enabled: true },
      }),
    );
    // An unresolved record, in the table's sparse index: DynamoDB Local's sweep skips items outside a
    // table's global indexes.
    const expired = {
      id: { S: uniqueName('expired') },
      [EXPIRES_AT_ATTRIBUTE]: { N: String(Math.floor(Date.now() / 1000) - 3600) },
      [UNRESOLVED_ATTRIBUTE]: { S: 'IN_DOUBT' },
      [UPDATED_AT_ATTRIBUTE]: { N: String(Date.now() - 3_600_000) },
    };
    const read = async (table: string) =>
      (
        await dynamodb.send(
          new GetItemCommand({ TableName: table, Key: { id: expired.id }, ConsistentRead: true }),
        )
      ).Item;
    await dynamodb.send(new PutItemCommand({ TableName: String(idempotency?.name), Item: expired }));
    // Two sweeps of DynamoDB Local's: one that may have been under way when the item was written, then
    // one wholly after it.
    const deadline = Date.now() + 30_000;
    for (let sweep = 0; sweep < 2; sweep++) {
      await dynamodb.send(new PutItemCommand({ TableName: control, Item: expired }));
      while ((await read(control)) !== undefined) {
        if (Date.now() > deadline) throw new Error('DynamoDB Local never deleted the expired control item');
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }

    expect(await read(String(idempotency?.name))).toEqual(expired);
    const { TimeToLiveDescription } = await dynamodb.send(
      new DescribeTimeToLiveCommand({ TableName: String(idempotency?.name) }),
    );
    expect(TimeToLiveDescription?.TimeToLiveStatus).toBe('DISABLED');
    await dynamodb.send(new DeleteTableCommand({ TableName: control }));
  });

  it('runs each function from its bundled asset in the cloud assembly', () => {
    // Publisher, consumer, monitor; the outbox's relay and sweeper; PlaceOrder.
    expect(provisioned.functions).toHaveLength(6);
    for (const fn of provisioned.functions) {
      expect(fn.codeDirectory.startsWith(join(String(assembly?.directory), 'asset.'))).toBe(true);
      expect(fn.handler).toBe('index.handler');
      expect(existsSync(join(fn.codeDirectory, lambdaBundleFile()))).toBe(true);
      expect(JSON.parse(readFileSync(join(fn.codeDirectory, 'package.json'), 'utf8'))).toEqual(
        LAMBDA_ASSET_PACKAGE_JSON,
      );
    }
  });

  it('resolves each function’s environment to the local resources', () => {
    const publisher = provisioned.functions.find((f) => f.logicalId.includes('Publisher'));
    const consumer = provisioned.functions.find((f) => f.logicalId.includes('Consumer'));
    const idempotency = provisioned.tables.find((t) => t.logicalId.includes('Idempotency'));
    expect(publisher).toMatchObject({
      timeoutSeconds: 30,
      environment: { QUEUE_URL: queueNamed('PipelineQueue').url, IDEMPOTENCY_TABLE_NAME: idempotency?.name },
    });
    expect(consumer).toMatchObject({
      timeoutSeconds: 5,
      environment: {
        DLQ_URL: queueNamed('DeadLetterQueue').url,
        NOTIFICATION_URL: 'http://127.0.0.1:9/notify',
      },
    });
  });

  it('describes the event source mapping with Lambda’s settings', () => {
    expect(provisioned.eventSources).toEqual([
      expect.objectContaining({
        queue: queueNamed('PipelineQueue'),
        functionName: provisioned.functions.find((f) => f.logicalId.includes('Consumer'))?.name,
        batchSize: 10,
        reportBatchItemFailures: true,
        // The shop's own default inside the sandbox (lib/shop-settings.ts).
        maxConcurrency: 4,
      }),
    ]);
  });

  it('describes the schedule rules that run the unresolved-records monitor and the outbox sweeper', () => {
    const monitor = provisioned.functions.find((f) => f.logicalId.includes('Monitor'));
    const sweeper = provisioned.functions.find((f) => f.logicalId.includes('Sweeper'));
    expect(provisioned.schedules).toHaveLength(2);
    expect(provisioned.schedules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          logicalId: expect.stringContaining('SweepSchedule'),
          expression: 'rate(1 minute)',
          functionNames: [sweeper?.name],
        }),
      ]),
    );
    expect(
      provisioned.schedules.filter((rule) => rule.logicalId.includes('UnresolvedCheckSchedule')),
    ).toEqual([
      {
        logicalId: expect.stringContaining('UnresolvedCheckSchedule'),
        name: expect.any(String),
        arn: expect.stringMatching(/^arn:aws:events:us-east-1:123456789012:rule\//),
        expression: 'rate(5 minutes)',
        intervalMs: 5 * 60_000,
        functionNames: [monitor?.name],
      },
    ]);
    for (const rule of provisioned.schedules) expect(rule.arn.endsWith(`/${rule.name}`)).toBe(true);
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

  it('names each log group as deployed, so the outputs naming them resolve (issue 41)', () => {
    const output = (key: string) => provisioned.outputs.find((o) => o.OutputKey === key)?.OutputValue;
    for (const key of ['ConsumerLogGroupName', 'PublisherLogGroupName', 'MonitorLogGroupName']) {
      expect(output(key)).toMatch(/^[\w-]+-\w+Logs[0-9A-F]{8}$/);
    }
    expect(new Set(['Consumer', 'Publisher', 'Monitor'].map((fn) => output(`${fn}LogGroupName`))).size).toBe(
      3,
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
        Job: nodeFunction({ FunctionName: 'job' }),
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
      stackName: expect.any(String),
      logicalId: 'Every',
      type: 'AWS::Events::Rule',
      note: expect.stringMatching(note),
    });
  });
});

describe('provisioning asynchronous-invocation configs (a function’s retryAttempts and maxEventAge)', () => {
  /** The failing fixture function, scheduled every minute, with CDK's EventInvokeConfig for it. */
  function template(invokeConfig: Record<string, unknown>): CloudFormationTemplate {
    return {
      Resources: {
        Job: nodeFunction({ FunctionName: 'failing-job', Handler: 'functions.fail' }),
        JobEventInvokeConfig: {
          Type: 'AWS::Lambda::EventInvokeConfig',
          Properties: { FunctionName: { Ref: 'Job' }, Qualifier: '$LATEST', ...invokeConfig },
        },
        Every: {
          Type: 'AWS::Events::Rule',
          Properties: {
            ScheduleExpression: 'rate(1 minute)',
            Targets: [{ Id: 'Target0', Arn: { 'Fn::GetAtt': ['Job', 'Arn'] } }],
          },
        },
        Allow: {
          Type: 'AWS::Lambda::Permission',
          Properties: {
            Action: 'lambda:InvokeFunction',
            FunctionName: { 'Fn::GetAtt': ['Job', 'Arn'] },
            Principal: 'events.amazonaws.com',
            SourceArn: { 'Fn::GetAtt': ['Every', 'Arn'] },
          },
        },
      },
    };
  }

  it('runs a scheduled function that fails as many times as its MaximumRetryAttempts says, in a worker', async () => {
    const { functions, schedules, notEmulated } = await provision(template({ MaximumRetryAttempts: 1 }));
    expect(notEmulated).toEqual([]);
    const [fn] = functions;
    expect(fn.asyncInvokeConfig).toEqual({ maximumRetryAttempts: 1, maximumEventAgeSeconds: 21_600 });

    // What startSandbox wires: the function in a worker, the rule's runner with the function's config.
    const runtime = new LocalFunctionRuntime({ ...fn, environment: {} });
    const attempts: { result: InvocationResult; attempt: AsyncAttempt }[] = [];
    const runner = startScheduleRunner({
      schedule: schedules[0],
      intervalMs: 100,
      region: LOCAL_REGION,
      accountId: LOCAL_ACCOUNT_ID,
      invoke: (_name, event, awsRequestId) => runtime.invoke(event, awsRequestId),
      asyncInvokeConfigOf: (name) => (name === fn.name ? fn.asyncInvokeConfig : undefined),
      asyncRetryDelaysMs: [20, 20],
      onRun: (_name, result, attempt) => attempts.push({ result, attempt }),
    });
    try {
      const deadline = Date.now() + 10_000;
      while (!attempts.some(({ attempt }) => !attempt.retrying) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await runner.stop();
      await runtime.stop();
    }
    const first = attempts.filter(({ attempt }) => attempt.awsRequestId === attempts[0].attempt.awsRequestId);
    expect(first.map(({ attempt }) => [attempt.number, attempt.retrying])).toEqual([
      [1, true],
      [2, false],
    ]);
    expect(first[1].result).toMatchObject({ ok: false, error: { errorType: 'PaymentDeclinedError' } });
  });

  it('takes Lambda’s defaults for what a config leaves out', async () => {
    const { functions } = await provision(template({ MaximumEventAgeInSeconds: 60 }));
    expect(functions[0].asyncInvokeConfig).toEqual({ maximumRetryAttempts: 2, maximumEventAgeSeconds: 60 });
  });

  it.each([
    [
      { DestinationConfig: { OnFailure: { Destination: 'arn:aws:sqs:us-east-1:123456789012:dlq' } } },
      /its destinations are not emulated/,
      true,
    ],
    [{ Qualifier: 'live' }, /only \$LATEST runs locally/, false],
  ])('lists a config %o whose effect is not emulated, and says why', async (config, note, applied) => {
    const { functions, notEmulated } = await provision(template({ MaximumRetryAttempts: 0, ...config }));
    expect(notEmulated).toContainEqual({
      stackName: expect.any(String),
      logicalId: 'JobEventInvokeConfig',
      type: 'AWS::Lambda::EventInvokeConfig',
      note: expect.stringMatching(note),
    });
    expect(functions[0].asyncInvokeConfig?.maximumRetryAttempts).toBe(applied ? 0 : undefined);
  });
});

describe('provisioning what does not run locally, and stacks that import from one another', () => {
  it('lists a function it cannot run, and the event source and schedule that would invoke it, with the reason', async () => {
    const { functions, eventSources, notEmulated } = await provision({
      Resources: {
        Python: nodeFunction({ Runtime: 'python3.13' }),
        Inline: {
          Type: 'AWS::Lambda::Function',
          Properties: { Runtime: 'nodejs24.x', Code: { ZipFile: '…' } },
        },
        Zipped: nodeFunction({}, 'functions/functions.mjs'),
        Queue: { Type: 'AWS::SQS::Queue', Properties: {} },
        Source: {
          Type: 'AWS::Lambda::EventSourceMapping',
          Properties: { EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] }, FunctionName: { Ref: 'Python' } },
        },
        Stream: {
          Type: 'AWS::Lambda::EventSourceMapping',
          Properties: {
            EventSourceArn: 'arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/1',
            FunctionName: { Ref: 'Zipped' },
          },
        },
      },
    });
    expect(functions).toEqual([]);
    expect(eventSources).toEqual([]);
    const note = (logicalId: string) =>
      notEmulated.find((resource) => resource.logicalId === logicalId)?.note;
    expect(note('Python')).toBe('runtime python3.13: only Node.js functions run locally');
    expect(note('Inline')).toBe('its code is not an asset of the cloud assembly (inline or from S3)');
    expect(note('Zipped')).toBe('its asset functions/functions.mjs is not a directory of the cloud assembly');
    expect(note('Source')).toMatch(/^its function .*Python.* does not run locally$/);
    expect(note('Stream')).toBe(
      'it reads arn:aws:dynamodb:us-east-1:123456789012:table/t/stream/1; only SQS queues and DynamoDB table streams of the stack are polled locally',
    );
  });

  it('resolves Fn::ImportValue to what an earlier stack exports', async () => {
    const producer = await provision({
      Resources: { Queue: { Type: 'AWS::SQS::Queue', Properties: {} } },
      Outputs: {
        QueueUrl: {
          Value: { Ref: 'Queue' },
          Export: { Name: { 'Fn::Join': ['-', [{ Ref: 'AWS::StackName' }, 'url']] } },
        },
      },
    });
    const [[exportName, url]] = [...producer.exports];
    expect(url).toBe(producer.queues[0].url);
    const consumer = await provision(
      {
        Resources: {
          Reader: nodeFunction({
            Environment: { Variables: { QUEUE_URL: { 'Fn::ImportValue': exportName } } },
          }),
        },
      },
      { exports: producer.exports },
    );
    expect(consumer.functions[0].environment).toEqual({ QUEUE_URL: url });
    await expect(
      provision({
        Resources: {
          Reader: nodeFunction({
            Environment: { Variables: { QUEUE_URL: { 'Fn::ImportValue': 'nobody-exports-this' } } },
          }),
        },
      }),
    ).rejects.toThrow(
      'The environment of function Reader: Fn::ImportValue nobody-exports-this: no stack of the app exports it',
    );
  });

  it('leaves out an output it has no local value for, and says why', async () => {
    const { outputs, notEmulated } = await provision({
      Resources: {
        Queue: { Type: 'AWS::SQS::Queue', Properties: {} },
        Api: { Type: 'AWS::ApiGateway::RestApi', Properties: {} },
      },
      Outputs: {
        QueueName: { Value: { 'Fn::GetAtt': ['Queue', 'QueueName'] } },
        ApiUrl: { Value: { 'Fn::Join': ['', ['https://', { Ref: 'Api' }, '.execute-api.amazonaws.com/']] } },
      },
    });
    expect(outputs.map((output) => output.OutputKey)).toEqual(['QueueName']);
    expect(notEmulated).toContainEqual({
      stackName: expect.any(String),
      logicalId: 'ApiUrl',
      type: 'Output',
      note: 'Ref Api: not a resource the sandbox emulates',
    });
  });
});

describe('provisioning DynamoDB-stream event sources', () => {
  const streams = new DynamoDBStreamsClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
  let relayAssembly: CloudAssembly | undefined;
  let relay: ProvisionedStack;
  beforeAll(async () => {
    // An app whose DynamoEventSource sets every option the sandbox emulates.
    relayAssembly = await synthesizeApp({ appDirectory: 'test/sandbox/fixtures/apps/stream-relay' });
    const [stack] = relayAssembly.stacks;
    relay = await provision(stack.template, { assemblyDirectory: stack.assemblyDirectory });
  }, 240_000);
  afterAll(() => {
    relayAssembly?.remove();
    streams.destroy();
  });

  it('reads what DynamoEventSource synthesises, the stream being the table’s in DynamoDB Local', async () => {
    const outbox = relay.tables.find((table) => table.logicalId.startsWith('Outbox'));
    const seen = relay.tables.find((table) => table.logicalId.startsWith('Seen'));
    const fn = relay.functions.find((candidate) => candidate.logicalId.startsWith('Relay'));
    expect(seen?.streamArn).toBeUndefined();
    expect(relay.eventSources).toEqual([]);
    expect(relay.streamSources).toEqual([
      {
        logicalId: expect.stringContaining('DynamoDBEventSource'),
        table: outbox,
        streamArn: outbox?.streamArn,
        functionName: fn?.name,
        functionArn: fn?.arn,
        batchSize: 5,
        startingPosition: 'TRIM_HORIZON',
        maximumRetryAttempts: 2,
        maximumRecordAgeInSeconds: 3600,
        bisectBatchOnFunctionError: true,
        reportBatchItemFailures: true,
        filterPatterns: [
          JSON.stringify({
            eventName: ['INSERT'],
            dynamodb: { NewImage: { kind: { S: [{ prefix: 'order' }] } } },
          }),
        ],
        maximumBatchingWindowInSeconds: 1,
        parallelizationFactor: 1,
        onFailure: relay.queues.find((queue) => queue.logicalId.startsWith('RelayFailures')),
      },
    ]);
    const { StreamDescription } = await streams.send(
      new DescribeStreamCommand({ StreamArn: String(outbox?.streamArn) }),
    );
    expect(StreamDescription).toMatchObject({
      TableName: outbox?.name,
      StreamViewType: 'NEW_AND_OLD_IMAGES',
    });
    expect(relay.notEmulated.map((resource) => resource.type)).not.toContain(
      'AWS::Lambda::EventSourceMapping',
    );
  });

  /** A table with a stream, a function, and a mapping of the stream to it with `properties`. */
  const streamTemplate = (
    properties: Record<string, unknown>,
    extra: CloudFormationTemplate['Resources'] = {},
  ): CloudFormationTemplate => ({
    Resources: {
      Table: {
        Type: 'AWS::DynamoDB::Table',
        Properties: {
          KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
          AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
          BillingMode: 'PAY_PER_REQUEST',
          StreamSpecification: { StreamViewType: 'KEYS_ONLY' },
        },
      },
      Reader: nodeFunction({ FunctionName: 'reader' }),
      Mapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          EventSourceArn: { 'Fn::GetAtt': ['Table', 'StreamArn'] },
          FunctionName: { Ref: 'Reader' },
          StartingPosition: 'LATEST',
          ...properties,
        },
      },
      ...extra,
    },
  });

  it('gives what the template leaves out Lambda’s defaults for streams', async () => {
    const { streamSources, notEmulated } = await provision(streamTemplate({}));
    expect(notEmulated).toEqual([]);
    expect(streamSources).toEqual([
      expect.objectContaining({
        functionName: 'reader',
        batchSize: 100,
        startingPosition: 'LATEST',
        maximumRetryAttempts: -1,
        maximumRecordAgeInSeconds: -1,
        bisectBatchOnFunctionError: false,
        reportBatchItemFailures: false,
        filterPatterns: [],
        maximumBatchingWindowInSeconds: 0,
        parallelizationFactor: 1,
      }),
    ]);
    expect(streamSources[0]).not.toHaveProperty('onFailure');
  });

  it.each([
    [
      'an on-failure destination that is not a queue of the stack',
      { DestinationConfig: { OnFailure: { Destination: { Ref: 'Topic' } } } },
      /^its on-failure destination .* is not an SQS queue of the stack$/,
    ],
    [
      'a filter operator it does not emulate',
      { FilterCriteria: { Filters: [{ Pattern: '{"eventName":[{"suffix":"ERT"}]}' }] } },
      /is not an operator the sandbox emulates/,
    ],
    ['tumbling windows', { TumblingWindowInSeconds: 60 }, /tumbling windows/],
    ['a disabled mapping', { Enabled: false }, /^it is disabled/],
    ['a starting position streams do not have', { StartingPosition: 'AT_TIMESTAMP' }, /AT_TIMESTAMP/],
  ])('does not run a mapping with %s, and says why', async (_what, properties, note) => {
    const { streamSources, notEmulated } = await provision(
      streamTemplate(properties, { Topic: { Type: 'AWS::SNS::Topic', Properties: {} } }),
    );
    expect(streamSources).toEqual([]);
    expect(notEmulated).toContainEqual({
      stackName: expect.any(String),
      logicalId: 'Mapping',
      type: 'AWS::Lambda::EventSourceMapping',
      note: expect.stringMatching(note),
    });
  });

  it('does not run a mapping of a source it cannot resolve, and says why', async () => {
    const { notEmulated } = await provision({
      Resources: {
        Reader: nodeFunction({ FunctionName: 'reader' }),
        Kinesis: { Type: 'AWS::Kinesis::Stream', Properties: {} },
        Mapping: {
          Type: 'AWS::Lambda::EventSourceMapping',
          Properties: {
            EventSourceArn: { 'Fn::GetAtt': ['Kinesis', 'Arn'] },
            FunctionName: { Ref: 'Reader' },
          },
        },
      },
    });
    expect(notEmulated).toContainEqual(
      expect.objectContaining({
        logicalId: 'Mapping',
        note: 'its source: Fn::GetAtt Kinesis.Arn: not a resource the sandbox emulates',
      }),
    );
  });
});
