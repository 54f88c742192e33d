import { resolve } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';
import type { CloudFormationTemplate } from '../../sandbox/cloudformation.js';
import { LOCAL_ACCOUNT_ID, LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import { provisionTemplate } from '../../sandbox/provision.js';
import { InvalidEventSourceMappingError } from '../../sandbox/queue-source.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// SQS event source mappings as the sandbox reads them from a template: what AWS refuses to create
// is refused at start with AWS's reason, and what it accepts runs with its settings.

const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
const dynamodb = new DynamoDBClient(localAwsConfig(emulatorEndpoint('dynamodbEndpoint')));
afterAll(() => {
  sqs.destroy();
  dynamodb.destroy();
});

/** A queue, a function of the fixtures' handlers, and a mapping of the one to the other. */
const template = (
  mapping: Record<string, unknown>,
  options: { queue?: Record<string, unknown>; functionTimeout?: number } = {},
): CloudFormationTemplate => ({
  Resources: {
    Queue: { Type: 'AWS::SQS::Queue', Properties: { ...options.queue } },
    Reader: {
      Type: 'AWS::Lambda::Function',
      Properties: {
        FunctionName: uniqueName('reader'),
        Handler: 'functions.echo',
        Runtime: 'nodejs24.x',
        Timeout: options.functionTimeout ?? 3,
      },
      Metadata: { 'aws:asset:path': 'functions', 'aws:asset:property': 'Code' },
    },
    Mapping: {
      Type: 'AWS::Lambda::EventSourceMapping',
      Properties: {
        EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] },
        FunctionName: { Ref: 'Reader' },
        ...mapping,
      },
    },
  },
});

const provision = (stack: CloudFormationTemplate) =>
  provisionTemplate(stack, {
    sqs,
    dynamodb,
    stackName: uniqueName('Queues'),
    region: LOCAL_REGION,
    accountId: LOCAL_ACCOUNT_ID,
    assemblyDirectory: resolve('test/sandbox/fixtures'),
  });

const FIFO = { FifoQueue: true, QueueName: `${uniqueName('fifo')}.fifo` };

describe('an SQS event source mapping of the template', () => {
  it.each([
    [
      'a function timeout longer than the queue’s visibility timeout',
      template({}, { functionTimeout: 40 }),
      'InvalidParameterValueException: Queue visibility timeout: 30 seconds is less than Function timeout: 40 seconds',
    ],
    [
      'a BatchSize over 10 without a batching window',
      template({ BatchSize: 11 }),
      'InvalidParameterValueException: Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10',
    ],
    [
      'a FIFO queue’s BatchSize over 10, with a batching window',
      template({ BatchSize: 20, MaximumBatchingWindowInSeconds: 1 }, { queue: FIFO }),
      'InvalidParameterValueException: Batching window is not supported for FIFO queues',
    ],
    [
      'a BatchSize over 10,000',
      template({ BatchSize: 10_001, MaximumBatchingWindowInSeconds: 1 }),
      "Value '10001' at 'batchSize' failed to satisfy constraint: Member must have value less than or equal to 10000",
    ],
    [
      'a batching window over 300 seconds',
      template({ MaximumBatchingWindowInSeconds: 301 }),
      "Value '301' at 'maximumBatchingWindowInSeconds' failed to satisfy constraint: Member must have value less than or equal to 300",
    ],
    [
      'a MaximumConcurrency under 2',
      template({ ScalingConfig: { MaximumConcurrency: 1 } }),
      "Value '1' at 'scalingConfig.maximumConcurrency' failed to satisfy constraint: Member must have value greater than or equal to 2",
    ],
  ])('is refused with AWS’s reason, naming the mapping: %s', async (_what, stack, reason) => {
    const error = await provision(stack).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(InvalidEventSourceMappingError);
    const { message } = error as Error;
    expect(message).toMatch(
      /^Event source mapping Mapping of stack Queues-\S+ \(queue \S+ → function reader-\S+\)/,
    );
    expect(message).toContain(reason);
  });

  it('runs with Lambda’s defaults and the template’s settings; a disabled one is deployed but not enabled', async () => {
    const [plain] = (await provision(template({}))).eventSources;
    expect(plain).toMatchObject({
      batchSize: 10,
      maximumBatchingWindowInSeconds: 0,
      maxConcurrency: 1000,
      maxConcurrencySet: false,
      filterPatterns: [],
      enabled: true,
    });
    const pattern = JSON.stringify({ body: { kind: ['order'] } });
    const { eventSources, notEmulated } = await provision(
      template(
        {
          BatchSize: 5000,
          MaximumBatchingWindowInSeconds: 5,
          ScalingConfig: { MaximumConcurrency: 3 },
          FilterCriteria: { Filters: [{ Pattern: pattern }] },
          Enabled: false,
        },
        { queue: { VisibilityTimeout: 60 }, functionTimeout: 60 },
      ),
    );
    expect(notEmulated).toEqual([]);
    expect(eventSources).toEqual([
      expect.objectContaining({
        batchSize: 5000,
        maximumBatchingWindowInSeconds: 5,
        maxConcurrency: 3,
        maxConcurrencySet: true,
        filterPatterns: [pattern],
        enabled: false,
      }),
    ]);
  });

  it('does not run a mapping whose filter uses an operator the sandbox does not emulate, and says why', async () => {
    const { eventSources, notEmulated } = await provision(
      template({ FilterCriteria: { Filters: [{ Pattern: '{"body":{"kind":[{"suffix":"er"}]}}' }] } }),
    );
    expect(eventSources).toEqual([]);
    expect(notEmulated).toEqual([
      expect.objectContaining({
        logicalId: 'Mapping',
        note: expect.stringContaining('is not an operator the sandbox emulates'),
      }),
    ]);
  });
});
