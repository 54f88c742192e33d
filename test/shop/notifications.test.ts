import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { CONSUMER_METRICS, DLQ_ATTRIBUTES } from 'oncely/consumer';
// The class the shop's code throws: the package's, as the shop imports it.
import { OutcomeUnknownError } from 'oncely/idempotency';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postJson, RequestNotSentError } from '../../lambdas/shop/consumer/http-post.js';
import { NOTIFICATIONS_NAMESPACE, REMINDERS_NAMESPACE } from '../../lambdas/shop/consumer/notifications.js';
import { freePort } from '../../sandbox/free-port.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { type GatewayBehaviour, startGateway } from '../support/http-gateway.js';
import { deleteQueues, type FifoQueue, localSqsClient, publish, receiveMessages } from '../support/sqs.js';
import { pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { type ExampleConsumerOptions, exampleConsumer } from './support/example-consumer.js';

// SendNotification: lease mode, at-most-once, POSTing to a local gateway. SQS emulator → handler → HTTP.

let dynamodb: DynamoDBClient;
let sqs: SQSClient;
const queues: FifoQueue[] = [];
const gateways: { close(): Promise<void> }[] = [];

beforeAll(() => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
});

afterAll(async () => {
  vi.unstubAllEnvs();
  await Promise.all(gateways.map((gateway) => gateway.close()));
  await deleteQueues(sqs, queues);
  sqs.destroy();
  dynamodb.destroy();
});

async function gateway(behave: (index: number) => GatewayBehaviour) {
  const started = await startGateway(behave);
  gateways.push(started);
  return started;
}

async function notificationConsumer(options: Partial<ExampleConsumerOptions> = {}) {
  const consumer = await exampleConsumer({ dynamodb, sqs, ...options });
  queues.push(consumer.queue, consumer.dlq);
  return consumer;
}

const notification = (
  payload: object = { to: 'ada@example.com', subject: 'Welcome', body: 'Hello Ada' },
) => ({
  type: 'SendNotification',
  groupId: 'ada',
  key: `welcome-${randomUUID()}`,
  payload,
});

const failureIds = (poll: { response?: { batchItemFailures: { itemIdentifier: string }[] } } | undefined) =>
  poll?.response?.batchItemFailures.map((failure) => failure.itemIdentifier);

describe.concurrent('postJson', () => {
  it('tells a request that never left from one whose outcome is unknown', async () => {
    const closedPort = await freePort();
    const refused = postJson(`http://127.0.0.1:${closedPort}/send`, {}, { headers: {}, timeoutMs: 1_000 });
    await expect(refused).rejects.toThrow(RequestNotSentError);
    await expect(refused).rejects.toThrow(/ECONNREFUSED/);

    const remote = await gateway((index) => (['reset', 'hang'] as const)[index] ?? 200);
    const reset = postJson(remote.url, { n: 1 }, { headers: {}, timeoutMs: 1_000 });
    await expect(reset).rejects.toThrow(OutcomeUnknownError);
    await expect(reset).rejects.toThrow(/after the request was sent .*ECONNRESET/);
    const timedOut = postJson(remote.url, { n: 2 }, { headers: {}, timeoutMs: 200 });
    await expect(timedOut).rejects.toThrow(OutcomeUnknownError);
    await expect(postJson(remote.url, { n: 3 }, { headers: {}, timeoutMs: 1_000 })).resolves.toEqual({
      status: 200,
      body: 'status 200',
    });
    expect(remote.requests.map((request) => request.body)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  });
});

describe.concurrent('example consumer: SendNotification', () => {
  it('POSTs the notification once, with its idempotency key, and never again for a duplicate', async () => {
    const remote = await gateway(() => 202);
    const consumer = await notificationConsumer({ notificationUrl: remote.url });
    const message = notification();
    await publish(sqs, consumer.queue.url, message);
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([]);
    await publish(sqs, consumer.queue.url, message, randomUUID()); // again, past SQS's dedup window
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.container()))).toEqual([]);

    expect(remote.requests).toEqual([
      {
        idempotencyKey: `${NOTIFICATIONS_NAMESPACE}#${message.key}`,
        contentType: 'application/json',
        body: message.payload,
      },
    ]);
    expect(consumer.metricCount(CONSUMER_METRICS.processed)).toBe(1);
    expect(consumer.metricCount(CONSUMER_METRICS.duplicate)).toBe(1);
  });

  it('retries after a 503 (nothing was sent) and sends to the DLQ at once after a 400', async () => {
    const remote = await gateway((index) => [503, 202, 400][index] ?? 500);
    const consumer = await notificationConsumer({ notificationUrl: remote.url });
    const retried = notification();
    const retriedId = await publish(sqs, consumer.queue.url, retried);

    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([retriedId]);
    await pollUntil(sqs, consumer.queue, consumer.handler, (polls) =>
      polls.some((poll) => poll.deleted.includes(retriedId)),
    );
    expect(
      await readItem(consumer.idempotencyTable, `${NOTIFICATIONS_NAMESPACE}#${retried.key}`),
    ).toMatchObject({
      status: 'COMPLETED',
      attempts: 2,
    });

    const refused = notification({ to: 'nobody@example.com', subject: 'x', body: 'y' });
    const refusedId = await publish(sqs, consumer.queue.url, refused);
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([]);
    const [dead] = await receiveMessages(sqs, consumer.dlq.url, 1);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue).toBe(refusedId);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('NotificationRefusedError');
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.errorMessage]?.StringValue).toMatch(
      /^the notification gateway answered 400: status 400\./,
    );
    expect(remote.requests).toHaveLength(3);
  });

  it('fails a notification whose gateway refuses the connection, to be retried', async () => {
    const consumer = await notificationConsumer({
      notificationUrl: `http://127.0.0.1:${await freePort()}/send`,
    });
    const message = notification();
    const id = await publish(sqs, consumer.queue.url, message);
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([id]);
    expect(
      await readItem(consumer.idempotencyTable, `${NOTIFICATIONS_NAMESPACE}#${message.key}`),
    ).toMatchObject({
      status: 'FAILED',
      error: { name: 'RequestNotSentError' },
    });
  });

  it('parks a notification whose answer timed out as IN_DOUBT, acknowledges it, and never sends it again', async () => {
    const remote = await gateway(() => 'hang');
    const consumer = await notificationConsumer({ notificationUrl: remote.url, notificationTimeoutMs: 200 });
    const message = notification();
    const id = await publish(sqs, consumer.queue.url, message);
    const poll = await pollOnce(sqs, consumer.queue, consumer.handler);
    expect(poll.deleted).toEqual([id]);
    await publish(sqs, consumer.queue.url, message, randomUUID());
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([]);

    expect(remote.requests).toHaveLength(1);
    expect(
      await readItem(consumer.idempotencyTable, `${NOTIFICATIONS_NAMESPACE}#${message.key}`),
    ).toMatchObject({
      status: 'IN_DOUBT',
      error: { name: 'OutcomeUnknownError' },
      // Acknowledged, so the record keeps the message for an operator's retry.
      message: { body: expect.stringContaining(message.key), groupId: message.groupId },
    });
    expect(consumer.metricCount(CONSUMER_METRICS.inDoubt)).toBe(1);
  });

  it('in at-least-once mode, re-sends a notification whose answer timed out instead of parking it', async () => {
    const remote = await gateway((index) => (index === 0 ? 'hang' : 200));
    const consumer = await notificationConsumer({
      notificationUrl: remote.url,
      notificationTimeoutMs: 200,
      notificationMode: 'at-least-once',
    });
    const message = notification();
    const id = await publish(sqs, consumer.queue.url, message);
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([id]);
    const key = `${NOTIFICATIONS_NAMESPACE}#${message.key}`;
    expect(await readItem(consumer.idempotencyTable, key)).toMatchObject({ status: 'FAILED' });

    await pollUntil(sqs, consumer.queue, consumer.handler, (polls) =>
      polls.some((poll) => poll.deleted.includes(id)),
    );
    expect(remote.requests).toHaveLength(2);
    expect(await readItem(consumer.idempotencyTable, key)).toMatchObject({ status: 'COMPLETED' });
  });

  it('re-sends a SendReminder whose answer timed out (always at-least-once), while receipts stay at-most-once', async () => {
    const remote = await gateway((index) => (index === 0 ? 'hang' : 200));
    const consumer = await notificationConsumer({ notificationUrl: remote.url, notificationTimeoutMs: 200 });
    const reminder = { ...notification(), type: 'SendReminder', key: `reminder-${randomUUID()}` };
    const id = await publish(sqs, consumer.queue.url, reminder);
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([id]);
    const key = `${REMINDERS_NAMESPACE}#${reminder.key}`;
    expect(await readItem(consumer.idempotencyTable, key)).toMatchObject({ status: 'FAILED' });

    await pollUntil(sqs, consumer.queue, consumer.handler, (polls) =>
      polls.some((poll) => poll.deleted.includes(id)),
    );
    // Both tries carried the same key, so the gateway can tell the second for a repeat.
    expect(remote.requests.map((request) => request.idempotencyKey)).toEqual([key, key]);
    expect(await readItem(consumer.idempotencyTable, key)).toMatchObject({ status: 'COMPLETED' });
  });

  it('parks a notification whose invocation died holding the lease as IN_DOUBT, never re-sending it', async () => {
    let clockOffsetMs = 0;
    const remote = await gateway(() => 'hang');
    const consumer = await notificationConsumer({
      notificationUrl: remote.url,
      notificationTimeoutMs: 20_000,
      now: () => Date.now() + clockOffsetMs,
    });
    const message = notification();
    const id = await publish(sqs, consumer.queue.url, message);

    // The first invocation sends the request, then hangs: as far as the queue knows, it died.
    const dying = pollOnce(sqs, consumer.queue, consumer.handler);
    await expect.poll(() => remote.requests.length).toBe(1);
    clockOffsetMs = 60_000; // past its lease (the 30 s the context had left, plus the margin)

    const redelivered = await pollUntil(sqs, consumer.queue, consumer.container(), (polls) =>
      polls.some((poll) => poll.deleted.includes(id)),
    );
    expect(
      redelivered.flatMap((poll) => poll.records.map((record) => record.attributes.ApproximateReceiveCount)),
    ).toEqual(['2']);
    const id2 = `${NOTIFICATIONS_NAMESPACE}#${message.key}`;
    expect(await readItem(consumer.idempotencyTable, id2)).toMatchObject({
      status: 'IN_DOUBT',
      error: { name: 'LeaseExpired' },
      message: { body: expect.stringContaining(message.key), groupId: message.groupId },
    });

    // The "dead" invocation's late success cannot overwrite the verdict (fencing).
    remote.hung[0]?.writeHead(202).end();
    await dying;
    expect(await readItem(consumer.idempotencyTable, id2)).toMatchObject({ status: 'IN_DOUBT' });
    expect(consumer.metricCount(CONSUMER_METRICS.leaseLost)).toBe(1);
    expect(remote.requests).toHaveLength(1);
  });

  it('rejects an invalid payload with the schema’s reasons, without calling the gateway', async () => {
    const remote = await gateway(() => 202);
    const consumer = await notificationConsumer({ notificationUrl: remote.url });
    await publish(sqs, consumer.queue.url, notification({ to: 'not an address', subject: '' }));
    expect(failureIds(await pollOnce(sqs, consumer.queue, consumer.handler))).toEqual([]);
    const [dead] = await receiveMessages(sqs, consumer.dlq.url, 1);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.errorMessage]?.StringValue).toBe(
      'the SendNotification payload is invalid: to: Invalid email address; subject: Too small: expected string to have >=1 characters; ' +
        'body: Invalid input: expected string, received undefined. Fix the producer, then publish a corrected message.',
    );
    expect(remote.requests).toEqual([]);
  });
});
