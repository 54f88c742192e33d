import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import {
  CreateQueueCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Logger } from '@smithy/types';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { publish } from '../../lambdas/client/index.js';
import { UNRESOLVED_METRICS } from '../../lambdas/monitor/metrics.js';
import type { UnresolvedCounts } from '../../lambdas/monitor/unresolved-counts.js';
import { lambdaBundleFile } from '../../lib/constructs/bundling.js';
import type { FunctionError, InvocationResult } from '../../sandbox/lambda-context.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import { isLoopback, listeningSocketsOf } from '../support/listening-sockets.js';
import { BUSY_MACHINE_RETRY } from '../support/publisher.js';

// The example shop in the sandbox, as `oncely local` runs it: one sandbox for the file, since its
// start is a synth with bundling and a JVM.

let sandbox: Sandbox;
const scheduledRuns: { ruleName: string; functionName: string; result: InvocationResult }[] = [];
const output: { line: string; functionName: string }[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: '.',
    // Two schedules run side by side; at this pace a run ends before the next starts even on a busy
    // machine, so runs do not pile up into more containers and more load.
    scheduleIntervalMs: 2_000,
    onScheduledRun: (ruleName, functionName, result) =>
      scheduledRuns.push({ ruleName, functionName, result }),
    functionOutput: (line, functionName) => output.push({ line, functionName }),
    // Without the template's --enable-source-maps, a stack trace names the code that ran, not its sources.
    environment: { NODE_OPTIONS: '' },
  });
}, 240_000);

afterAll(async () => {
  await sandbox?.stop();
});

/** Polls `condition` until it holds, for at most `timeoutMs`. */
async function waitFor(
  condition: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('the sandbox of a CDK app', () => {
  it('describes what clients need, as its ready file does: endpoints, the pipeline’s resources, every stack output', () => {
    const { description } = sandbox;
    const loopback = expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(description).toMatchObject({
      region: LOCAL_REGION,
      stackName: 'Shop-local',
      endpoints: { edge: loopback, sqs: loopback, dynamodb: loopback, lambda: loopback },
      outputs: { LedgerTableName: expect.stringMatching(/^Shop-local-LedgerTable/) },
    });
    const resources = sandbox.pipelineResources();
    expect(description.resources).toEqual(resources);
    expect(description.outputs).toMatchObject({
      QueueUrl: resources.queueUrl,
      PublisherFunctionName: resources.publisherFunctionName,
      IdempotencyTtlSeconds: resources.idempotencyTtlSeconds,
    });
    // Queue URLs name the edge, as LocalStack's name its one endpoint.
    expect(new URL(resources.queueUrl).origin).toBe(description.endpoints.edge);
    expect([...new Set(description.notEmulated.map((resource) => resource.type))].sort()).toEqual([
      'AWS::CloudWatch::Alarm',
      'AWS::IAM::Policy',
      'AWS::IAM::Role',
      'AWS::Logs::LogGroup',
      'AWS::SQS::QueuePolicy',
    ]);
  });

  // Issue 40, item 19: DynamoDB Local listened on every interface. Every process of this test's
  // sandbox (this one: the SQS emulator, the edge, the Lambda endpoint; DynamoDB Local's JVM; the
  // function processes its schedules started) listens on loopback only, the four endpoints it names
  // among them.
  it('listens on loopback only, in every process it started', () => {
    const sockets = listeningSocketsOf(process.pid);
    const ports = new Set(sockets.map((socket) => socket.port));
    for (const endpoint of Object.values(sandbox.description.endpoints)) {
      expect(ports).toContain(Number(new URL(endpoint).port));
    }
    expect(sockets.filter((socket) => !isLoopback(socket.address))).toEqual([]);
  });

  it('runs each function from its bundled asset in the cloud assembly, not from its TypeScript', async () => {
    for (const fn of sandbox.provisioned.functions) {
      expect(fn.codeDirectory.startsWith(join(sandbox.assemblyDirectory, 'asset.'))).toBe(true);
    }
    const consumer = sandbox.provisioned.functions.find(
      (fn) => fn.name === sandbox.pipelineResources().consumerFunctionName,
    );
    // An event that is no SQS batch fails inside the consumer: its stack trace shows where the code ran.
    const outcome = await sandbox.invoke(String(consumer?.name), { notRecords: true });
    expect(outcome.ok).toBe(false);
    const trace = (outcome as { error: FunctionError }).error.trace ?? [];
    expect(
      trace.some((line) => line.includes(join(String(consumer?.codeDirectory), lambdaBundleFile()))),
    ).toBe(true);
    expect(trace.join('\n')).not.toMatch(/lambdas\/shop|\.ts:/);
  });

  describe('through the edge, with AWS_ENDPOINT_URL alone', () => {
    const previous = process.env.AWS_ENDPOINT_URL;
    const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };
    const warnings: string[] = [];
    const logger: Logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (line) => warnings.push(String(line)),
      error: () => undefined,
    };
    beforeAll(() => {
      process.env.AWS_ENDPOINT_URL = sandbox.description.endpoints.edge;
    });
    afterAll(() => {
      if (previous === undefined) delete process.env.AWS_ENDPOINT_URL;
      else process.env.AWS_ENDPOINT_URL = previous;
    });

    it('publishes through Lambda, and the consumer’s effect is read from DynamoDB', async () => {
      const lambda = new LambdaClient({ region: LOCAL_REGION, credentials });
      const dynamodb = DynamoDBDocumentClient.from(new DynamoDBClient({ region: LOCAL_REGION, credentials }));
      const { results } = await publish(
        [
          {
            type: 'StockReceived',
            groupId: 'warehouse',
            key: 'edge-stock',
            payload: { sku: 'edge-sku', quantity: 7 },
          },
        ],
        {
          functionName: sandbox.pipelineResources().publisherFunctionName,
          lambda,
          retry: BUSY_MACHINE_RETRY,
        },
      );
      expect(results.map((result) => result.status)).toEqual(['sent']);
      // The shop's ledger item of a SKU (lambdas/shop/consumer/ledger-writes.ts).
      const stock = async () =>
        (
          await dynamodb.send(
            new GetCommand({
              TableName: sandbox.description.outputs.LedgerTableName,
              Key: { id: 'stock#edge-sku' },
            }),
          )
        ).Item;
      await waitFor(async () => (await stock())?.available === 7, 'the consumer to add the stock');
      lambda.destroy();
      dynamodb.destroy();
      // The functions' queue URLs name the SQS endpoint they are given: the SDK never had to redirect.
      expect(output.filter(({ line }) => line.includes('using QueueUrl host as endpoint'))).toEqual([]);
    });

    it('sends and receives on a FIFO queue whose URL names the edge, without the SDK redirecting', async () => {
      const sqs = new SQSClient({ region: LOCAL_REGION, credentials, logger });
      const { QueueUrl } = await sqs.send(
        new CreateQueueCommand({
          QueueName: 'edge-client.fifo',
          Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
        }),
      );
      expect(new URL(String(QueueUrl)).origin).toBe(sandbox.description.endpoints.edge);
      await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: 'via the edge', MessageGroupId: 'g' }));
      const { Messages } = await sqs.send(new ReceiveMessageCommand({ QueueUrl, WaitTimeSeconds: 1 }));
      expect(Messages?.map((message) => message.Body)).toEqual(['via the edge']);
      expect(warnings).toEqual([]);
      sqs.destroy();
    });

    it('reports its services at /_localstack/health', async () => {
      const response = await fetch(`${sandbox.description.endpoints.edge}/_localstack/health`);
      expect(await response.json()).toMatchObject({ edition: 'oncely-sandbox' });
    });
  });

  it('runs the stack’s schedule: the unresolved-records monitor, which counts an IN_DOUBT record once there is one', async () => {
    // The shop has two schedules, the monitor's and its outbox sweeper's, which run side by side.
    const monitorSchedule = sandbox.provisioned.schedules.find((rule) =>
      rule.logicalId.includes('UnresolvedCheckSchedule'),
    );
    if (!monitorSchedule) throw new Error('the shop’s stack has no unresolved-records schedule');
    const [monitorName] = monitorSchedule.functionNames;
    const monitorRuns = () => scheduledRuns.filter((run) => run.ruleName === monitorSchedule.name);
    const counts = () =>
      monitorRuns().map(({ result }): UnresolvedCounts | FunctionError =>
        result.ok ? (result.result as UnresolvedCounts) : result.error,
      );
    await waitFor(() => monitorRuns().length >= 1, 'the monitor’s first run');
    expect(monitorRuns()[0]).toMatchObject({ functionName: monitorName });
    expect(counts()[0]).toEqual({ inDoubt: 0, retryPending: 0 });

    const dynamodb = DynamoDBDocumentClient.from(
      new DynamoDBClient({
        endpoint: sandbox.description.endpoints.dynamodb,
        region: LOCAL_REGION,
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      }),
    );
    await dynamodb.send(
      new PutCommand({
        TableName: sandbox.pipelineResources().idempotencyTableName,
        Item: {
          id: 'mail#in-doubt',
          status: 'IN_DOUBT',
          payloadHash: 'hash',
          unresolved: 'IN_DOUBT',
          updatedAt: Date.now(),
          expiresAt: Math.floor(Date.now() / 1000) + 3600,
        },
      }),
    );
    dynamodb.destroy();
    await waitFor(() => counts().some((c) => 'inDoubt' in c && c.inDoubt === 1), 'a run that counts it');

    const emf = output
      .filter(({ functionName, line }) => functionName === monitorName && line.includes('"_aws"'))
      .map(({ line }) => JSON.parse(line));
    expect(emf).toContainEqual(
      expect.objectContaining({ [UNRESOLVED_METRICS.inDoubt]: 1, service: 'shop-monitor' }),
    );
  });

  it('runs an assembly synthesised before as it is, and leaves it in place on stop', async () => {
    const second = await startSandbox({
      appDirectory: '.',
      cloudAssembly: sandbox.assemblyDirectory,
      functionOutput: () => undefined,
    });
    try {
      expect(second.assemblyDirectory).toBe(sandbox.assemblyDirectory);
      expect(second.description.stackName).toBe(sandbox.description.stackName);
      // Its own emulators, provisioned from the given templates: the monitor runs and answers.
      const monitor = second.provisioned.functions.find((fn) => fn.name.includes('Monitor'));
      expect(await second.invoke(String(monitor?.name), {})).toMatchObject({ ok: true });
    } finally {
      await second.stop();
    }
    expect(existsSync(join(sandbox.assemblyDirectory, 'manifest.json'))).toBe(true);
  });

  it('refuses a context beside an assembly synthesised before: only a synthesis applies one', async () => {
    await expect(
      startSandbox({ appDirectory: '.', cloudAssembly: sandbox.assemblyDirectory, context: { stage: 'x' } }),
    ).rejects.toThrow(/a context or a cloudAssembly, not both/);
  });

  it('stops everything it started and removes the cloud assembly', async () => {
    const { endpoints } = sandbox.description;
    await sandbox.stop();
    expect(existsSync(sandbox.assemblyDirectory)).toBe(false);
    for (const endpoint of Object.values(endpoints)) {
      await expect(fetch(endpoint)).rejects.toThrow();
    }
  });
});
