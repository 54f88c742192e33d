import { Agent, request as httpRequest } from 'node:http';
import type { Socket } from 'node:net';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { startEventSourcePoller } from '../../sandbox/event-source-poller.js';
import type { InvocationResult } from '../../sandbox/lambda-context.js';
import { LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import type { LocalEventSource } from '../../sandbox/provision.js';
import { startSqsEmulator } from '../../sandbox/sqs-emulator.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// Consumers run by the sandbox's SQS event source mapping on its SQS emulator: one that extends its
// messages' visibility while it works (a heartbeat), which on SQS is not a receive, so only real
// deliveries count against the DLQ's maxReceiveCount; a FIFO backlog past the emulator's former
// in-flight check; and the batches of the harsher oneGroupPerReceive setting.

const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
const pollers: { stop: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
});
afterAll(() => sqs.destroy());

/** The mapping Lambda would run for `queue`: batches of 10 with partial batch responses. */
function mappingOf(queue: LocalEventSource['queue'], maxConcurrency: number): LocalEventSource {
  return {
    logicalId: 'Source',
    queue,
    functionName: 'consumer',
    batchSize: 10,
    reportBatchItemFailures: true,
    maxConcurrency,
    maximumBatchingWindowInSeconds: 0,
    maxConcurrencySet: true,
    filterPatterns: [],
    enabled: true,
  };
}

async function fifoQueue(attributes: Record<string, string> = {}, client = sqs) {
  const name = `${uniqueName('delivery')}.fifo`;
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', ...attributes } }),
  );
  const url = String(QueueUrl);
  const { Attributes } = await client.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }),
  );
  return { logicalId: 'Queue', name, url, arn: String(Attributes?.QueueArn) };
}

describe('a consumer that heartbeats with ChangeMessageVisibility, on the sandbox', () => {
  it('is redelivered after it crashed mid-batch, counted once per delivery, and not dead-lettered', async () => {
    const dlq = await fifoQueue();
    // A 1-second visibility timeout that the handler outlives: only its heartbeats keep the batch hidden.
    const queue = await fifoQueue({
      VisibilityTimeout: '1',
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }),
    });
    const source = mappingOf(queue, 1);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: 'order-1',
        MessageGroupId: 'orders',
        MessageDeduplicationId: 'order-1',
      }),
    );

    const receiveCounts: string[] = [];
    const processed: string[] = [];
    // The handler: the first delivery works for 1.5 s with a heartbeat every 0.5 s, then crashes; the
    // second succeeds.
    const handler = async (event: SQSEvent): Promise<InvocationResult> => {
      const [record] = event.Records;
      if (!record) return { ok: true, result: {} };
      receiveCounts.push(record.attributes.ApproximateReceiveCount);
      if (receiveCounts.length > 1) {
        processed.push(record.body);
        return { ok: true, result: { batchItemFailures: [] } };
      }
      for (let beat = 0; beat < 3; beat++) {
        await sqs.send(
          new ChangeMessageVisibilityCommand({
            QueueUrl: queue.url,
            ReceiptHandle: record.receiptHandle,
            VisibilityTimeout: 2,
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      return { ok: false, error: { errorType: 'Error', errorMessage: 'crashed mid-batch', trace: [] } };
    };
    pollers.push(
      startEventSourcePoller({ sqs, source, region: LOCAL_REGION, invoke: handler, waitTimeSeconds: 1 }),
    );

    await expect.poll(() => processed, { timeout: 60_000 }).toEqual(['order-1']);
    expect(receiveCounts).toEqual(['1', '2']);
    await expect.poll(() => messagesInQueue(sqs, queue.url), { timeout: 60_000 }).toBe(0);
    expect(await messagesInQueue(sqs, dlq.url)).toBe(0);
  });
});

describe('the sandbox with oneGroupPerReceive', () => {
  it('delivers each batch of one message group only, every group in order', async () => {
    const strict = await startSqsEmulator({ oneGroupPerReceive: true });
    const client = new SQSClient(localAwsConfig(strict.endpoint));
    try {
      const queue = await fifoQueue({}, client);
      const source = mappingOf(queue, 1);
      const sent = Array.from({ length: 12 }, (_, i) => ({ group: `g${i % 3}`, body: `g${i % 3}-${i}` }));
      for (const { group, body } of sent) {
        await client.send(
          new SendMessageCommand({
            QueueUrl: queue.url,
            MessageBody: body,
            MessageGroupId: group,
            MessageDeduplicationId: body,
          }),
        );
      }
      const batches: string[][] = [];
      pollers.push(
        startEventSourcePoller({
          sqs: client,
          source,
          region: LOCAL_REGION,
          invoke: async (event) => {
            batches.push(event.Records.map((record) => record.body));
            return { ok: true, result: { batchItemFailures: [] } };
          },
          waitTimeSeconds: 1,
        }),
      );
      await expect.poll(() => batches.flat().length, { timeout: 60_000 }).toBe(12);
      await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
      expect(batches).toEqual([
        ['g0-0', 'g0-3', 'g0-6', 'g0-9'],
        ['g1-1', 'g1-4', 'g1-7', 'g1-10'],
        ['g2-2', 'g2-5', 'g2-8', 'g2-11'],
      ]);
    } finally {
      await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
      client.destroy();
      await strict.stop();
    }
  });
});

describe('a FIFO backlog larger than 20,000 messages, on the sandbox', () => {
  it('drains through the mapping: the in-flight quota counts messages in flight, not visible ones', async () => {
    const queue = await fifoQueue();
    const total = 25_000;
    let nextBatch = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (nextBatch < total / 10) {
          const first = 10 * nextBatch++;
          await sqs.send(
            new SendMessageBatchCommand({
              QueueUrl: queue.url,
              Entries: Array.from({ length: 10 }, (_, i) => ({
                Id: String(i),
                MessageBody: String(first + i),
                MessageGroupId: `g${(first + i) % 20}`,
                MessageDeduplicationId: String(first + i),
              })),
            }),
          );
        }
      }),
    );
    let delivered = 0;
    pollers.push(
      startEventSourcePoller({
        sqs,
        source: mappingOf(queue, 10),
        region: LOCAL_REGION,
        invoke: async (event) => {
          delivered += event.Records.length;
          return { ok: true, result: { batchItemFailures: [] } };
        },
        waitTimeSeconds: 1,
      }),
    );
    await expect.poll(() => delivered, { timeout: 60_000, interval: 250 }).toBe(total);
    await expect.poll(() => messagesInQueue(sqs, queue.url), { timeout: 60_000 }).toBe(0);
  }, 240_000);
});

describe('a client connection the SQS emulator keeps', () => {
  it('stays open while idle past Node’s 5 s keep-alive timeout: no "socket hang up" on its next request', async () => {
    const emulator = await startSqsEmulator();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<Socket>();
    const listQueues = () =>
      new Promise<number>((resolve, reject) => {
        const request = httpRequest(
          emulator.endpoint,
          {
            agent,
            method: 'POST',
            headers: {
              'content-type': 'application/x-amz-json-1.0',
              'x-amz-target': 'AmazonSQS.ListQueues',
            },
          },
          (response) => {
            response.resume();
            response.once('end', () => resolve(response.statusCode ?? 0));
          },
        );
        request.once('socket', (socket) => sockets.add(socket));
        request.once('error', reject);
        request.end('{}');
      });
    try {
      expect(await listQueues()).toBe(200);
      const [socket] = [...sockets];
      let closedByServer = false;
      socket?.once('close', () => {
        closedByServer = true;
      });
      // Longer than the server's default keep-alive timeout, after which it would close the socket.
      await new Promise((resolve) => setTimeout(resolve, 6_000));

      expect(closedByServer).toBe(false);
      expect(await listQueues()).toBe(200);
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
      await emulator.stop();
    }
  });
});
