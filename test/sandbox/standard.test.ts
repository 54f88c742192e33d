import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageBatchCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { parseCommandLine } from '../../cli/command-line.js';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import type { BatchReport } from '../../sandbox/event-source-poller.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';

// Issue 32, item 3: a standard queue's OncelyPipeline (fixtures/apps/standard) run by the sandbox
// from its bundles, with duplicateDeliveries: every batch goes to two invocations at once, then
// once more after both answered, as SQS's at-least-once delivery may. Each key's effect (a count
// of its runs) must still happen once.

let sandbox: Sandbox;
let documents: DynamoDBDocumentClient;
let sqs: SQSClient;
/** What the functions wrote: the hooks' lines, and shown when a test fails. */
const output: string[] = [];
const batches: BatchReport[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: 'test/sandbox/fixtures/apps/standard',
    functionOutput: (line, functionName) => output.push(`${functionName}: ${line}`),
    onBatch: (_functionName, report) => batches.push(report),
    duplicateDeliveries: true,
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

/** Each key's count of runs, by key. */
async function runs(): Promise<Record<string, number>> {
  const { Items = [] } = await documents.send(
    new ScanCommand({ TableName: sandbox.description.outputs.RunsTableName, ConsistentRead: true }),
  );
  return Object.fromEntries(Items.map((item) => [item.id as string, Number(item.runs)]));
}

/** The keys of the function's output lines starting with `word`, one per line, and what follows. */
const linesOf = (word: string) =>
  output.flatMap((line) => {
    const [, key, rest] = line.match(new RegExp(`: ${word} (\\S+)(?: (\\S+))?$`)) ?? [];
    return key === undefined ? [] : [{ key, rest }];
  });
const keysIn = (word: string) => linesOf(word).map(({ key }) => key);

describe('a standard (and fair) pipeline in the sandbox, its messages delivered twice at once and again later', () => {
  it('is what `oncely local --duplicate-deliveries` asks of the sandbox', () => {
    expect(parseCommandLine(['local'], {})).toMatchObject({ options: { duplicateDeliveries: false } });
    expect(parseCommandLine(['local', '--duplicate-deliveries'], {})).toMatchObject({
      name: 'local',
      options: { duplicateDeliveries: true },
    });
  });

  it('runs each key’s effect once; every other copy answers from the record', async () => {
    onTestFailed(() => console.error(`The functions wrote:\n${output.join('\n')}`));
    const { queueUrl, dlqUrl } = sandbox.pipelineResources();
    const names = Array.from({ length: 20 }, (_, i) => `k${i}`);
    // Five keys published twice more (new messages, one key): a producer's duplicates too.
    const sent = [...names, ...names.slice(0, 5)];
    for (let i = 0; i < sent.length; i += 10) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: queueUrl,
          Entries: sent.slice(i, i + 10).map((name, index) => ({
            Id: String(index),
            MessageBody: JSON.stringify(
              createEnvelope({ type: 'Count', groupId: 'signups', key: name, payload: { name } }),
            ),
            // Half of them as to a fair queue: a tenant's group, which orders nothing.
            ...(index % 2 === 0 ? { MessageGroupId: `tenant-${index % 4}` } : {}),
          })),
        }),
      );
    }

    await expect
      .poll(async () => Object.keys(await runs()).length, { timeout: 60_000, interval: 500 })
      .toBe(names.length);
    await expect.poll(() => messagesInQueue(sqs, queueUrl), { timeout: 60_000, interval: 500 }).toBe(0);
    expect(await runs()).toEqual(Object.fromEntries(names.map((name) => [name, 1])));
    expect(keysIn('COMPLETED').sort()).toEqual([...names].sort());
    // The fair queue's tenants reached the consumer as groups; the others had none.
    expect(new Set(linesOf('COMPLETED').map(({ rest }) => rest))).toEqual(
      new Set(['-', 'tenant-0', 'tenant-2']),
    );
    // Every message came three times at least (twice at once, reported as one batch, then once
    // more); each key's later copies found it COMPLETED. A late copy comes after its message was
    // deleted: it may still be running, its batch not yet reported, once the queue is empty.
    await expect
      .poll(() => batches.reduce((sum, batch) => sum + batch.received, 0), { timeout: 60_000, interval: 500 })
      .toBeGreaterThanOrEqual(2 * sent.length);
    await expect
      .poll(() => new Set(keysIn('DUPLICATE')), { timeout: 60_000, interval: 500 })
      .toEqual(new Set(names));
    expect(await messagesInQueue(sqs, dlqUrl)).toBe(0);
  }, 240_000);
});
