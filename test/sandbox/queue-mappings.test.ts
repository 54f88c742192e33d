import {
  GetEventSourceMappingCommand,
  InvokeCommand,
  LambdaClient,
  ListEventSourceMappingsCommand,
} from '@aws-sdk/client-lambda';
import {
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import type { BatchReport } from '../../sandbox/event-source-poller.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';

// A CDK app whose functions read queues through SqsEventSource mappings (fixtures/apps/
// queue-mappings), run by the sandbox: a filtered mapping, one gathering batches over 10 in a
// batching window, a disabled one, and one whose function's reserved concurrency is 1.

interface Recorded {
  queueArn: string;
  bodies: string[];
  bytes: number;
}

let sandbox: Sandbox;
let sqs: SQSClient;
let lambda: LambdaClient;
const recorded: Recorded[] = [];
/** Each output line of a function, `functionName: line`. */
const lines: string[] = [];
const batches: { functionName: string; report: BatchReport }[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: 'test/sandbox/fixtures/apps/queue-mappings',
    functionOutput: (line, functionName) => {
      if (line.startsWith('RECORDED ')) recorded.push(JSON.parse(line.slice('RECORDED '.length)));
      lines.push(`${functionName}: ${line}`);
    },
    onBatch: (functionName, report) => batches.push({ functionName, report }),
  });
  sqs = new SQSClient(localAwsConfig(sandbox.description.endpoints.sqs));
  // One attempt: the SDK would retry a throttle, and the test is about the first answer.
  lambda = new LambdaClient({ ...localAwsConfig(sandbox.description.endpoints.edge), maxAttempts: 1 });
}, 240_000);

afterAll(async () => {
  sqs?.destroy();
  lambda?.destroy();
  await sandbox?.stop();
});

const queueUrl = (output: string) => sandbox.description.outputs[output];
const queueNamed = (part: string) => {
  const queue = sandbox.provisioned.queues.find((candidate) => candidate.logicalId.startsWith(part));
  if (!queue) throw new Error(`no queue ${part}`);
  return queue;
};
const bodiesFrom = (part: string) =>
  recorded.filter((batch) => batch.queueArn === queueNamed(part).arn).flatMap((batch) => batch.bodies);

describe('a sandbox whose function reads SQS queues', () => {
  it('passes only the records a filter matches, JSON bodies parsed and plain ones as strings, and deletes the rest', async () => {
    const url = queueUrl('OrdersUrl');
    const bodies = [
      JSON.stringify({ kind: 'order', id: 1 }),
      JSON.stringify({ kind: 'audit', id: 2 }),
      'ping',
      'pong',
      // Plain text that only looks like the JSON pattern's key: no match.
      'kind order',
    ];
    for (const body of bodies) await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: body }));
    await expect
      .poll(() => bodiesFrom('Orders').sort(), { timeout: 60_000 })
      .toEqual([bodies[0], 'ping'].sort());
    // Lambda deletes what no filter matches: nothing comes back after the visibility timeout.
    await expect.poll(() => messagesInQueue(sqs, url), { timeout: 60_000 }).toBe(0);
    expect(bodiesFrom('Orders')).toHaveLength(2);
  });

  it('gathers batches of up to BatchSize over the batching window with receives of at most 10', async () => {
    const url = queueUrl('BulkUrl');
    const sent = Array.from({ length: 30 }, (_, i) => `bulk-${i}`);
    for (let i = 0; i < sent.length; i += 10) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: url,
          Entries: sent.slice(i, i + 10).map((body, index) => ({ Id: String(index), MessageBody: body })),
        }),
      );
    }
    await expect.poll(() => bodiesFrom('Bulk').sort(), { timeout: 60_000 }).toEqual([...sent].sort());
    const batches = recorded.filter((batch) => batch.queueArn === queueNamed('Bulk').arn);
    // At most two batches gather at once (MaximumConcurrency 2): one of them holds more than 10.
    expect(Math.max(...batches.map((batch) => batch.bodies.length))).toBeGreaterThan(10);
  });

  it('does not poll a disabled mapping, and the read API says it is disabled, with the filters it has', async () => {
    const url = queueUrl('PausedUrl');
    const pings = () => bodiesFrom('Orders').filter((body) => body === 'ping').length;
    const pingsBefore = pings();
    await sqs.send(new SendMessageCommand({ QueueUrl: url, MessageBody: 'waiting' }));
    // A message sent after it to a polled queue is delivered; the paused one was never received.
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl('OrdersUrl'), MessageBody: 'ping' }));
    await expect.poll(pings, { timeout: 60_000 }).toBe(pingsBefore + 1);
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: url, AttributeNames: ['All'], WaitTimeSeconds: 1 }),
    );
    expect(Messages.map((message) => [message.Body, message.Attributes?.ApproximateReceiveCount])).toEqual([
      ['waiting', '1'],
    ]);
    expect(bodiesFrom('Paused')).toEqual([]);

    const { EventSourceMappings = [] } = await lambda.send(new ListEventSourceMappingsCommand({}));
    const paused = EventSourceMappings.find((mapping) => mapping.EventSourceArn === queueNamed('Paused').arn);
    expect(paused?.State).toBe('Disabled');
    const orders = await lambda.send(
      new GetEventSourceMappingCommand({
        UUID: EventSourceMappings.find((mapping) => mapping.EventSourceArn === queueNamed('Orders').arn)
          ?.UUID,
      }),
    );
    expect(orders.State).toBe('Enabled');
    expect(orders.FilterCriteria?.Filters?.map((filter) => JSON.parse(String(filter.Pattern)))).toEqual([
      { body: { kind: ['order'] } },
      { body: ['ping'] },
    ]);
    const bulk = EventSourceMappings.find((mapping) => mapping.EventSourceArn === queueNamed('Bulk').arn);
    expect(bulk).toMatchObject({ BatchSize: 100, MaximumBatchingWindowInSeconds: 2 });
  });

  it('throttles invocations past the reserved concurrency, from Invoke and from a mapping, whose batch comes back and so reaches the DLQ', async () => {
    const single = sandbox.description.outputs.SingleName;
    const holding = () => lines.filter((line) => line.startsWith(`${single}: `) && line.endsWith('HOLDING'));
    const held = holding().length;
    const hold = lambda.send(
      new InvokeCommand({ FunctionName: single, Payload: Buffer.from(JSON.stringify({ holdMs: 4000 })) }),
    );
    await expect.poll(() => holding().length, { timeout: 60_000 }).toBe(held + 1);

    await expect(
      lambda.send(new InvokeCommand({ FunctionName: single, Payload: Buffer.from('{"holdMs":0}') })),
    ).rejects.toMatchObject({
      name: 'TooManyRequestsException',
      Reason: 'ReservedFunctionConcurrentInvocationLimitExceeded',
      $metadata: { httpStatusCode: 429 },
    });
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl('ThrottledUrl'), MessageBody: 'throttled' }));
    await expect
      .poll(
        () => batches.some(({ functionName, report }) => functionName === single && report.functionError),
        {
          timeout: 60_000,
        },
      )
      .toBe(true);
    expect(batches.find(({ functionName }) => functionName === single)?.report).toMatchObject({
      received: 1,
      retained: 1,
      functionError: expect.stringMatching(/^TooManyRequestsException: /),
    });
    expect((await hold).FunctionError).toBeUndefined();

    // maxReceiveCount 1: the throttled receive was its one delivery; the next moves it to the DLQ.
    const dead: string[] = [];
    await expect
      .poll(
        async () => {
          const { Messages = [] } = await sqs.send(
            new ReceiveMessageCommand({ QueueUrl: queueUrl('ThrottledDlqUrl'), WaitTimeSeconds: 1 }),
          );
          dead.push(...Messages.map((message) => String(message.Body)));
          return dead;
        },
        { timeout: 60_000 },
      )
      .toEqual(['throttled']);
    expect(bodiesFrom('Throttled')).toEqual([]);
  });
});
