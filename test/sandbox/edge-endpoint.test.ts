import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import {
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { InvokeCommand, LambdaClient, RequestTooLargeException } from '@aws-sdk/client-lambda';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { Logger } from '@smithy/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type EdgeEndpoint, startEdgeEndpoint } from '../../sandbox/edge-endpoint.js';
import { inProcessFunction } from '../../sandbox/in-process-function.js';
import {
  type LambdaInvokeEndpoint,
  startLambdaInvokeEndpoint,
} from '../../sandbox/lambda-invoke-endpoint.js';
import { LOCAL_REGION, localAwsConfig, localFunctionArn } from '../../sandbox/local-aws-config.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// The edge in front of the run's emulators and a Lambda endpoint, reached through the AWS SDK with
// nothing but the edge's address: as an explicit endpoint, or as AWS_ENDPOINT_URL alone.

let lambdaEndpoint: LambdaInvokeEndpoint;
let edge: EdgeEndpoint;
const cleanups: (() => Promise<unknown>)[] = [];
const previousEndpoint = process.env.AWS_ENDPOINT_URL;
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

beforeAll(async () => {
  lambdaEndpoint = await startLambdaInvokeEndpoint({
    functions: {
      echo: inProcessFunction({
        name: 'echo',
        arn: localFunctionArn('echo'),
        timeoutMs: 5_000,
        handler: async (event) => event,
      }),
    },
  });
  edge = await startEdgeEndpoint({
    targets: {
      dynamodb: emulatorEndpoint('dynamodbEndpoint'),
      sqs: emulatorEndpoint('sqsEndpoint'),
      lambda: lambdaEndpoint.endpoint,
    },
  });
  process.env.AWS_ENDPOINT_URL = edge.endpoint;
});

afterAll(async () => {
  if (previousEndpoint === undefined) delete process.env.AWS_ENDPOINT_URL;
  else process.env.AWS_ENDPOINT_URL = previousEndpoint;
  await Promise.all(cleanups.map((cleanup) => cleanup()));
  await edge.stop();
  await lambdaEndpoint.stop();
});

/** A client configured as a user's would be with AWS_ENDPOINT_URL set: no endpoint of its own. */
function fromEnvironment<T>(Client: new (config: object) => T, config: object = {}): T {
  return new Client({ region: LOCAL_REGION, credentials, maxAttempts: 1, ...config });
}

/** Collects what the SDK warns about. */
function warnings(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    debug: () => undefined,
    info: () => undefined,
    warn: (line) => lines.push(String(line)),
    error: () => undefined,
  };
}

describe('the edge endpoint', () => {
  it('serves DynamoDB to a client configured with AWS_ENDPOINT_URL alone', async () => {
    const dynamodb = fromEnvironment(DynamoDBClient);
    const TableName = uniqueName('edge');
    await dynamodb.send(
      new CreateTableCommand({
        TableName,
        AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    cleanups.push(() =>
      new DynamoDBClient(localAwsConfig(edge.endpoint)).send(new DeleteTableCommand({ TableName })),
    );
    await dynamodb.send(new PutItemCommand({ TableName, Item: { id: { S: 'a' }, n: { N: '1' } } }));
    expect((await dynamodb.send(new GetItemCommand({ TableName, Key: { id: { S: 'a' } } }))).Item).toEqual({
      id: { S: 'a' },
      n: { N: '1' },
    });
    dynamodb.destroy();
  });

  it('serves DynamoDB Streams, which DynamoDB Local answers on the same port', async () => {
    const response = await fetch(edge.endpoint, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-amz-json-1.0',
        'X-Amz-Target': 'DynamoDBStreams_20120810.ListStreams',
        // DynamoDB Local wants a signature, and checks none.
        Authorization:
          'AWS4-HMAC-SHA256 Credential=local/20250101/us-east-1/dynamodb/aws4_request, Signature=0',
      },
      body: '{}',
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ Streams: expect.any(Array) });
  });

  it('serves SQS, FIFO sends and receives, with the edge as the client’s endpoint whatever host a queue URL names', async () => {
    const sqs = new SQSClient({ ...localAwsConfig(edge.endpoint), maxAttempts: 1 });
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${uniqueName('edge')}.fifo`,
        Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
      }),
    );
    cleanups.push(() =>
      new SQSClient(localAwsConfig(edge.endpoint)).send(new DeleteQueueCommand({ QueueUrl })),
    );
    // With an endpoint of its own the SDK ignores a queue URL's host: one nothing listens on still works.
    const unreachable = new URL(new URL(String(QueueUrl)).pathname, 'http://127.0.0.1:1').href;
    await sqs.send(
      new SendMessageCommand({ QueueUrl: unreachable, MessageBody: 'first', MessageGroupId: 'g' }),
    );
    await sqs.send(
      new SendMessageCommand({ QueueUrl: unreachable, MessageBody: 'second', MessageGroupId: 'g' }),
    );
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: unreachable, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(Messages?.map((message) => message.Body)).toEqual(['first', 'second']);
    sqs.destroy();
  });

  it('serves SQS to a client with AWS_ENDPOINT_URL alone, which sends to a queue URL’s own host when it names another', async () => {
    const logger = warnings();
    const sqs = fromEnvironment(SQSClient, { logger });
    const { QueueUrl } = await sqs.send(
      new CreateQueueCommand({
        QueueName: `${uniqueName('edge')}.fifo`,
        Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
      }),
    );
    cleanups.push(() =>
      new SQSClient(localAwsConfig(edge.endpoint)).send(new DeleteQueueCommand({ QueueUrl })),
    );
    // This run's emulator names its own port in queue URLs (the sandbox's name the edge instead).
    expect(new URL(String(QueueUrl)).origin).toBe(emulatorEndpoint('sqsEndpoint'));
    await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'hello', MessageGroupId: 'g' }));
    const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
    expect(Messages?.map((message) => message.Body)).toEqual(['hello']);
    expect(logger.lines).toContainEqual(expect.stringContaining('using QueueUrl host as endpoint'));
    sqs.destroy();
  });

  it('serves SQS’s query protocol: a form body with Action=', async () => {
    const response = await fetch(edge.endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: 'Action=ListQueues&Version=2012-11-05',
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('<ListQueuesResponse');
  });

  it('serves Lambda Invoke, streaming payloads through up to Lambda’s own limit', async () => {
    const lambda = fromEnvironment(LambdaClient);
    const large = 'x'.repeat(5_000_000);
    const output = await lambda.send(
      new InvokeCommand({
        FunctionName: 'echo',
        Payload: new TextEncoder().encode(JSON.stringify({ large })),
      }),
    );
    expect(output.StatusCode).toBe(200);
    expect(JSON.parse(new TextDecoder().decode(output.Payload)).large).toHaveLength(5_000_000);
    // The Lambda endpoint refuses what Lambda refuses; the edge adds no limit of its own.
    const tooLarge = new TextEncoder().encode(JSON.stringify('x'.repeat(6_291_456)));
    await expect(
      lambda.send(new InvokeCommand({ FunctionName: 'echo', Payload: tooLarge })),
    ).rejects.toBeInstanceOf(RequestTooLargeException);
    lambda.destroy();
  });

  it('reports its services at /_localstack/health, as LocalStack does', async () => {
    const response = await fetch(`${edge.endpoint}/_localstack/health`);
    expect(await response.json()).toEqual({
      services: { dynamodb: 'running', sqs: 'running', lambda: 'running' },
      edition: 'oncely-sandbox',
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
  });

  it('answers a request for another service with an AWS error the SDK raises, in the protocol it spoke', async () => {
    const cloudformation = fromEnvironment(CloudFormationClient);
    await expect(cloudformation.send(new DescribeStacksCommand({}))).rejects.toMatchObject({
      name: 'UnsupportedOperation',
      message: expect.stringMatching(
        /serves DynamoDB, DynamoDB Streams, SQS and Lambda here, not the cloudformation service/,
      ),
      $metadata: { httpStatusCode: 400 },
    });
    cloudformation.destroy();

    const response = await fetch(edge.endpoint, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/x-amz-json-1.1',
        'X-Amz-Target': 'Logs_20140328.DescribeLogGroups',
      },
      body: '{}',
    });
    expect(response.status).toBe(400);
    expect(response.headers.get('x-amzn-errortype')).toBe('UnsupportedOperation');
    expect(await response.json()).toEqual({
      __type: 'UnsupportedOperation',
      message: expect.stringContaining('not X-Amz-Target Logs_20140328.DescribeLogGroups'),
    });
  });

  it('stops answering once stopped', async () => {
    const own = await startEdgeEndpoint({
      targets: {
        dynamodb: emulatorEndpoint('dynamodbEndpoint'),
        sqs: emulatorEndpoint('sqsEndpoint'),
        lambda: lambdaEndpoint.endpoint,
      },
    });
    expect((await fetch(`${own.endpoint}/_localstack/health`)).status).toBe(200);
    await own.stop();
    await expect(fetch(`${own.endpoint}/_localstack/health`)).rejects.toThrow();
  });
});
