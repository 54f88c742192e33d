import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { parseEnvelope } from '../../lambdas/common/envelope.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { DLQ_ATTRIBUTES } from '../../lambdas/consumer/index.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import { publish, receiveMessages } from '../support/sqs.js';

// Issue 30, item 7: an OncelyPipeline (fixtures/apps/attempts, maxAttempts 2, maxReceiveCount left
// to its default) whose consumer fails a group's head on every run, with followers behind it. The
// followers are received as often as the head; when SQS's receive count decided, they followed it
// into the DLQ. Now the consumer dead-letters the head after its own second failure, and the
// followers run after it, once each, in order.

let sandbox: Sandbox;
let documents: DynamoDBDocumentClient;
let sqs: SQSClient;
/** What the functions wrote: shown when a test fails (the consumer's errors go there, not here). */
const output: string[] = [];

beforeAll(async () => {
  sandbox = await startSandbox({
    appDirectory: 'test/sandbox/fixtures/apps/attempts',
    functionOutput: (line, functionName) => output.push(`${functionName}: ${line}`),
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

/** The names the consumer ran in `group`, in order. */
async function runsOf(group: string): Promise<string[]> {
  const { Item } = await documents.send(
    new GetCommand({
      TableName: sandbox.description.outputs.RunsTableName,
      Key: { id: `group#${group}` },
      ConsistentRead: true,
    }),
  );
  return (Item?.runs as string[] | undefined) ?? [];
}

describe('a group whose head keeps failing, in the sandbox', () => {
  it('sends the head to the DLQ with its error after maxAttempts, and runs every follower once, in order', async () => {
    onTestFailed(() => console.error(`The functions wrote:\n${output.join('\n')}`));
    const { queueUrl, dlqUrl } = sandbox.pipelineResources();
    const messages = [{ name: 'H', fail: true }, { name: 'F1' }, { name: 'F2' }, { name: 'F3' }].map(
      (payload) => ({ type: 'Step', groupId: 'G', key: `${payload.name}-key`, payload }),
    );
    for (const message of messages) await publish(sqs, queueUrl, message);

    // Every message acknowledged or dead-lettered: 2 deliveries of the head here (5 before, by SQS).
    await expect.poll(() => messagesInQueue(sqs, queueUrl), { timeout: 90_000, interval: 500 }).toBe(0);
    expect(await runsOf('G')).toEqual(['F1', 'F2', 'F3']);
    // Counted, not received: a FIFO queue hides a group's rest behind its head in flight.
    expect(await messagesInQueue(sqs, dlqUrl)).toBe(1);
    const dead = await receiveMessages(sqs, dlqUrl, 1);
    expect(dead.map((message) => parseEnvelope(message.Body ?? '').key)).toEqual(['H-key']);
    expect(dead[0]?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe(
      'AttemptsExhaustedError',
    );
    expect(dead[0]?.MessageAttributes?.[DLQ_ATTRIBUTES.errorMessage]?.StringValue).toContain(
      'H: the downstream service is unavailable',
    );
    expect(dead[0]?.MessageAttributes?.[DLQ_ATTRIBUTES.receiveCount]?.StringValue).toBe('2');
  }, 240_000);
});
