import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { type Spread, spreadOf } from '../harness/statistics.js';
import { createEnvelope } from '../lambdas/common/envelope.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import { DynamoDBIdempotencyStore } from '../lambdas/idempotency/index.js';
import { MAX_MESSAGES_PER_REQUEST, type PublishMessage } from '../lambdas/publisher/contract.js';
import { DEFAULT_QUEUE_MAX_MESSAGE_BYTES } from '../lambdas/publisher/environment.js';
import { createPublisherHandler } from '../lambdas/publisher/handler.js';
import { countRequests } from '../sandbox/request-counter.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { invocationContext } from './invocation.js';
import { createFifoQueue, deleteQueues, newIdempotencyTable, uniqueName } from './resources.js';
import { rotate } from './rotate.js';
import { stockMessages } from './stock-events.js';

export const SENDERS = {
  publisher: 'Oncely publisher (SendMessageBatch)',
  naive: 'naive: one SendMessage per message',
} as const;
export type Sender = keyof typeof SENDERS;

export interface PublisherOptions {
  messages: number;
  groups: number;
  /** Timed runs per sender and latency; the senders take turns. */
  rounds: number;
  /** Each figure is measured as the emulators answer, and again with this added to every request. */
  latencyMs: number;
}

export interface PublisherCost {
  sender: Sender;
  messages: number;
  /** 0 for the emulators as they are. */
  addedLatencyMs: number;
  sqsCalls: number;
  /** The publisher's request idempotency (one record per request of up to 500 messages). */
  dynamodbRequests: number;
  /** Milliseconds to send them all, one sample per round. */
  wallMs: Spread;
}

interface Run {
  sqsCalls: number;
  dynamodbRequests: number;
  wallMs: number;
}

/**
 * (3) Sending `messages` messages to a FIFO queue: through the publisher handler (validation,
 * request idempotency, SendMessageBatch in group order), in requests of the most messages one may
 * carry, against the naive way — one SendMessage after another (a group's messages must not be
 * sent at once, or they may arrive out of order). The queue must hold every message afterwards.
 */
export async function measurePublisher(
  endpoints: BenchEndpoints,
  options: PublisherOptions,
): Promise<PublisherCost[]> {
  const senders = Object.keys(SENDERS) as Sender[];
  const costs: PublisherCost[] = [];
  for (const addedLatencyMs of [0, options.latencyMs]) {
    const runs = new Map<Sender, Run[]>(senders.map((sender) => [sender, []]));
    for (let round = 0; round < options.rounds; round++) {
      for (const sender of rotate(senders, round)) {
        const messages = stockMessages(options.messages, options.groups);
        runs.get(sender)?.push(await send(endpoints, sender, addedLatencyMs, messages));
      }
    }
    for (const sender of senders) {
      const [first, ...others] = runs.get(sender) ?? [];
      if (!first || others.some((run) => run.sqsCalls !== first.sqsCalls)) {
        throw new Error(`${sender}: the number of SQS calls changed from one run to the next`);
      }
      costs.push({
        sender,
        messages: options.messages,
        addedLatencyMs,
        sqsCalls: first.sqsCalls,
        dynamodbRequests: first.dynamodbRequests,
        wallMs: spreadOf((runs.get(sender) ?? []).map((run) => run.wallMs)),
      });
    }
  }
  return costs;
}

/** Sends the messages to a new queue, which must hold every one of them afterwards. */
async function send(
  endpoints: BenchEndpoints,
  sender: Sender,
  addedLatencyMs: number,
  messages: PublishMessage[],
): Promise<Run> {
  const sqs = sqsClient(endpoints, addedLatencyMs);
  const dynamodb = dynamoDbClient(endpoints, addedLatencyMs);
  const queue = await createFifoQueue(sqs, {});
  const tableName = await newIdempotencyTable(dynamodb);
  const [sqsCalls, dynamodbRequests] = [countRequests(sqs), countRequests(dynamodb)];
  try {
    const started = performance.now();
    if (sender === 'publisher') {
      await publishAll(
        sqs,
        queue.url,
        new DynamoDBIdempotencyStore({ client: dynamodb, tableName }),
        messages,
      );
    } else {
      await sendOneByOne(sqs, queue.url, messages);
    }
    const wallMs = performance.now() - started;
    const calls = sqsCalls.total();
    const queued = await messagesInQueue(sqs, queue.url);
    if (queued !== messages.length) {
      throw new Error(`${sender}: ${queued} of ${messages.length} messages reached the queue`);
    }
    return { sqsCalls: calls, dynamodbRequests: dynamodbRequests.total(), wallMs };
  } finally {
    await deleteQueues(sqs, [queue]);
    sqs.destroy();
    dynamodb.destroy();
  }
}

async function publishAll(
  sqs: SQSClient,
  queueUrl: string,
  store: DynamoDBIdempotencyStore,
  messages: PublishMessage[],
) {
  const publish = createPublisherHandler({
    sqs,
    queueUrl,
    maxMessageBytes: DEFAULT_QUEUE_MAX_MESSAGE_BYTES,
    store,
  });
  for (let start = 0; start < messages.length; start += MAX_MESSAGES_PER_REQUEST) {
    const request = {
      requestId: uniqueName('request'),
      messages: messages.slice(start, start + MAX_MESSAGES_PER_REQUEST),
    };
    const { results } = await publish(request, invocationContext());
    const unsent = results.filter((result) => result.status !== 'sent');
    if (unsent.length > 0)
      throw new Error(`the publisher did not send ${unsent.length} messages: ${JSON.stringify(unsent[0])}`);
  }
}

async function sendOneByOne(sqs: SQSClient, queueUrl: string, messages: PublishMessage[]) {
  for (const message of messages) {
    const envelope = createEnvelope(message);
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queueUrl,
        MessageBody: JSON.stringify(envelope),
        MessageGroupId: message.groupId,
        MessageDeduplicationId: envelope.key,
      }),
    );
  }
}
