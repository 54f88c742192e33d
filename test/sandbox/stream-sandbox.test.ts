import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import type { StreamBatchReport } from '../../sandbox/stream-poller.js';

// A CDK app whose relay function reads a table's stream (DynamoEventSource), run by the sandbox:
// the records reach the function asset that `cdk deploy` would upload, with the mapping's filter,
// partial batch responses, retries and on-failure queue.

let sandbox: Sandbox;
let documents: DynamoDBDocumentClient;
let sqs: SQSClient;
const batches: { functionName: string; report: StreamBatchReport }[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: 'test/sandbox/fixtures/apps/stream-relay',
    onStreamBatch: (functionName, report) => batches.push({ functionName, report }),
  });
  const { endpoints } = sandbox.description;
  documents = DynamoDBDocumentClient.from(new DynamoDBClient(localAwsConfig(endpoints.dynamodb)));
  sqs = new SQSClient(localAwsConfig(endpoints.sqs));
}, 240_000);

afterAll(async () => {
  documents?.destroy();
  sqs?.destroy();
  await sandbox?.stop();
});

const outputs = () => sandbox.description.outputs;
const write = (item: Record<string, unknown>) =>
  documents.send(new PutCommand({ TableName: outputs().OutboxTableName, Item: item }));
/** What the relay recorded in the Seen table, by item id. */
const seen = async () => {
  const { Items = [] } = await documents.send(new ScanCommand({ TableName: outputs().SeenTableName }));
  return Object.fromEntries(Items.map((item) => [String(item.id), item]));
};

describe('a sandbox whose function reads a table’s stream', () => {
  it('runs the mapping, and no longer lists it as not emulated', () => {
    const [source] = sandbox.provisioned.streamSources;
    expect(sandbox.provisioned.streamSources).toHaveLength(1);
    expect(source).toMatchObject({ batchSize: 5, maximumRetryAttempts: 2 });
    expect(sandbox.description.notEmulated.map((resource) => resource.type)).not.toContain(
      'AWS::Lambda::EventSourceMapping',
    );
  });

  it('delivers the matching records to the relay, discards a poison record to the on-failure queue, and goes on', async () => {
    const [source] = sandbox.provisioned.streamSources;
    await write({ id: 'a', kind: 'order-created' });
    await write({ id: 'x', kind: 'audit' }); // filtered out
    await write({ id: 'b', kind: 'order-paid' });
    await write({ id: 'a', kind: 'order-updated' }); // a MODIFY: filtered out
    await expect.poll(async () => Object.keys(await seen()).sort(), { timeout: 60_000 }).toEqual(['a', 'b']);
    const relayed = await seen();
    expect(relayed.a).toMatchObject({ eventName: 'INSERT', eventSourceARN: source.streamArn });
    expect(BigInt(relayed.a.sequenceNumber)).toBeLessThan(BigInt(relayed.b.sequenceNumber));

    await write({ id: 'p', kind: 'order-poison', poison: true });
    const failures: Record<string, Record<string, unknown>>[] = [];
    await expect
      .poll(
        async () => {
          const { Messages = [] } = await sqs.send(
            new ReceiveMessageCommand({ QueueUrl: outputs().RelayFailuresUrl, WaitTimeSeconds: 1 }),
          );
          failures.push(...Messages.map((message) => JSON.parse(String(message.Body))));
          return failures.length;
        },
        { timeout: 60_000 },
      )
      .toBe(1);
    expect(failures[0].requestContext).toMatchObject({
      functionArn: source.functionArn,
      condition: 'RetryAttemptsExhausted',
      approximateInvokeCount: 3,
    });
    expect(failures[0].DDBStreamBatchInfo).toMatchObject({ batchSize: 1, streamArn: source.streamArn });
    const poisonBatches = batches.filter(({ report }) => report.checkpointed === 0);
    expect(poisonBatches.map(({ functionName, report }) => [functionName, report.attempt])).toEqual([
      [source.functionName, 1],
      [source.functionName, 2],
      [source.functionName, 3],
    ]);

    await write({ id: 'c', kind: 'order-shipped' });
    await expect
      .poll(async () => Object.keys(await seen()).sort(), { timeout: 60_000 })
      .toEqual(['a', 'b', 'c']);
  });
});
