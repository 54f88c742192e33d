import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';

import {
  createEnvelope,
  type MessageEnvelope,
  type OutgoingMessage,
  parseEnvelope,
} from '../../lambdas/common/envelope.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { emulatorEndpoint } from './emulator-endpoint.js';

export interface FifoQueue {
  url: string;
  arn: string;
}

/** A client for the run's SQS emulator; `maxAttempts: 1` when a test counts or injects failures itself. */
export function localSqsClient(maxAttempts?: number): SQSClient {
  return new SQSClient({
    ...localAwsConfig(emulatorEndpoint('sqsEndpoint')),
    ...(maxAttempts ? { maxAttempts } : {}),
  });
}

/** Creates a uniquely named FIFO queue; `deleteQueues` removes what a file created. */
export async function createFifoQueue(
  sqs: SQSClient,
  attributes: Record<string, string> = {},
): Promise<FifoQueue> {
  const QueueName = `queue-${randomUUID().slice(0, 8)}.fifo`;
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName, Attributes: { FifoQueue: 'true', ...attributes } }),
  );
  if (!QueueUrl) throw new Error(`CreateQueue returned no QueueUrl for ${QueueName}`);
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  if (!Attributes?.QueueArn) throw new Error(`GetQueueAttributes returned no QueueArn for ${QueueName}`);
  return { url: QueueUrl, arn: Attributes.QueueArn };
}

/** A FIFO queue and its FIFO DLQ, wired with a redrive policy as the CDK stack wires them. */
export async function createQueueWithDlq(
  sqs: SQSClient,
  options: { visibilityTimeoutSeconds: number; maxReceiveCount: number },
): Promise<{ queue: FifoQueue; dlq: FifoQueue }> {
  const dlq = await createFifoQueue(sqs);
  const queue = await createFifoQueue(sqs, {
    VisibilityTimeout: String(options.visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: options.maxReceiveCount }),
  });
  return { queue, dlq };
}

/** Creates a uniquely named standard queue (DESIGN §5.1); `deleteQueues` removes what a file created. */
export async function createStandardQueue(
  sqs: SQSClient,
  attributes: Record<string, string> = {},
): Promise<FifoQueue> {
  const QueueName = `standard-${randomUUID().slice(0, 8)}`;
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName, Attributes: attributes }));
  if (!QueueUrl) throw new Error(`CreateQueue returned no QueueUrl for ${QueueName}`);
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  if (!Attributes?.QueueArn) throw new Error(`GetQueueAttributes returned no QueueArn for ${QueueName}`);
  return { url: QueueUrl, arn: Attributes.QueueArn };
}

/** A standard queue and its standard DLQ, wired with a redrive policy. */
export async function createStandardQueueWithDlq(
  sqs: SQSClient,
  options: { visibilityTimeoutSeconds: number; maxReceiveCount: number },
): Promise<{ queue: FifoQueue; dlq: FifoQueue }> {
  const dlq = await createStandardQueue(sqs);
  const queue = await createStandardQueue(sqs, {
    VisibilityTimeout: String(options.visibilityTimeoutSeconds),
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: options.maxReceiveCount }),
  });
  return { queue, dlq };
}

export async function deleteQueues(sqs: SQSClient, queues: FifoQueue[]): Promise<void> {
  await Promise.all(queues.map(({ url }) => sqs.send(new DeleteQueueCommand({ QueueUrl: url }))));
}

/**
 * Publishes a message as the publisher does: an envelope body, its key as dedup id. A different
 * `deduplicationId` makes SQS deliver a repeat, as after its 5-minute window.
 */
export async function publish(
  sqs: SQSClient,
  queueUrl: string,
  message: OutgoingMessage,
  deduplicationId?: string,
): Promise<string> {
  const envelope = createEnvelope(message);
  return sendBody(sqs, queueUrl, JSON.stringify(envelope), message.groupId, deduplicationId ?? envelope.key);
}

/** Sends any body, e.g. one that is not an envelope. Returns the message id. */
export async function sendBody(
  sqs: SQSClient,
  queueUrl: string,
  body: string,
  groupId: string,
  deduplicationId: string,
): Promise<string> {
  const { MessageId } = await sqs.send(
    new SendMessageCommand({
      QueueUrl: queueUrl,
      MessageBody: body,
      MessageGroupId: groupId,
      MessageDeduplicationId: deduplicationId,
    }),
  );
  if (!MessageId) throw new Error('SendMessage returned no MessageId');
  return MessageId;
}

/** Long-polls until `count` messages were received (not deleted) or `timeoutMs` passed. */
export async function receiveMessages(
  sqs: SQSClient,
  queueUrl: string,
  count: number,
  timeoutMs = 5_000,
): Promise<Message[]> {
  const received: Message[] = [];
  const deadline = Date.now() + timeoutMs;
  while (received.length < count && Date.now() < deadline) {
    const { Messages } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        AttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    received.push(...(Messages ?? []));
  }
  return received;
}

export interface ReceivedMessage {
  envelope: MessageEnvelope;
  messageId: string;
  deduplicationId?: string;
  /** Its MessageGroupId: on a standard queue, what makes it a fair queue's (DESIGN §5.1). */
  groupId?: string;
  /** Its message attributes' string values, by name. */
  attributes: Record<string, string | undefined>;
  /** Its `AWSTraceHeader` system attribute (DESIGN §6). */
  awsTraceHeader?: string;
}

/**
 * Receives and deletes until `count` messages arrived, in the order the queue handed them out;
 * fails after `timeoutMs`. Then checks that nothing else is left (a duplicate would be).
 */
export async function drainQueue(
  client: SQSClient,
  queueUrl: string,
  count: number,
  timeoutMs = 10_000,
): Promise<ReceivedMessage[]> {
  const received: ReceivedMessage[] = [];
  const deadline = Date.now() + timeoutMs;
  while (received.length < count) {
    if (Date.now() > deadline) {
      throw new Error(`received ${received.length} of ${count} messages within ${timeoutMs} ms`);
    }
    const messages = await receive(client, queueUrl, 1);
    received.push(...messages.map(toReceived));
    await deleteAll(client, queueUrl, messages);
  }
  const extra = await receive(client, queueUrl, 0);
  if (extra.length > 0)
    throw new Error(`${extra.length} more messages than the ${count} expected were queued`);
  return received;
}

async function receive(client: SQSClient, queueUrl: string, waitSeconds: number): Promise<Message[]> {
  const { Messages } = await client.send(
    new ReceiveMessageCommand({
      QueueUrl: queueUrl,
      MaxNumberOfMessages: 10,
      WaitTimeSeconds: waitSeconds,
      AttributeNames: ['All'],
      MessageAttributeNames: ['All'],
    }),
  );
  return Messages ?? [];
}

async function deleteAll(client: SQSClient, queueUrl: string, messages: Message[]): Promise<void> {
  if (messages.length === 0) return;
  await client.send(
    new DeleteMessageBatchCommand({
      QueueUrl: queueUrl,
      Entries: messages.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
    }),
  );
}

function toReceived(message: Message): ReceivedMessage {
  return {
    envelope: parseEnvelope(message.Body ?? ''),
    messageId: message.MessageId ?? '',
    deduplicationId: message.Attributes?.MessageDeduplicationId,
    groupId: message.Attributes?.MessageGroupId,
    attributes: Object.fromEntries(
      Object.entries(message.MessageAttributes ?? {}).map(([name, value]) => [name, value.StringValue]),
    ),
    awsTraceHeader: message.Attributes?.AWSTraceHeader,
  };
}

/** The keys of one group's messages, in the order the queue delivered them. */
export function keysOfGroup(received: readonly ReceivedMessage[], groupId: string): string[] {
  return received.filter(({ envelope }) => envelope.groupId === groupId).map(({ envelope }) => envelope.key);
}

/** A message of type `type` (`Named` by default) in `groupId`, its payload `{ name }`, under a key of its own. */
export function named(
  groupId: string,
  name: string,
  type = 'Named',
): { type: string; groupId: string; key: string; payload: { name: string } } {
  return { type, groupId, key: `${name}-${randomUUID().slice(0, 8)}`, payload: { name } };
}

/** The record Lambda's SQS event source hands a consumer for a new message of `type` carrying `payload`, group `g`. */
export function eventRecord(type: string, payload: unknown): SQSRecord {
  const envelope = createEnvelope({ type, groupId: 'g', key: randomUUID(), payload });
  const messageId = randomUUID();
  return {
    messageId,
    receiptHandle: messageId,
    body: JSON.stringify(envelope),
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: 'test',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
      MessageGroupId: envelope.groupId,
      MessageDeduplicationId: envelope.key,
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:eu-west-1:000000000000:q.fifo',
    awsRegion: 'eu-west-1',
  };
}

/** A DLQ client that keeps what it is sent. */
export function deadLetters() {
  const sent: SendMessageCommand['input'][] = [];
  const client = {
    send: async (command: SendMessageCommand) => {
      sent.push(command.input);
      return {};
    },
  } as unknown as SQSClient;
  return { client, sent };
}
