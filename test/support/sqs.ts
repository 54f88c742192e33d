import {
  CreateQueueCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { type MessageEnvelope, parseEnvelope } from '../../lambdas/runtime/envelope';
import { localAwsConfig } from '../../sandbox/local-aws-config';
import { uniqueName } from './dynamodb';

/** A client for the run's SQS emulator; one attempt per call, as the publisher configures its own. */
export function localSqsClient(): SQSClient {
  return new SQSClient({ ...localAwsConfig(inject('sqsEndpoint')), maxAttempts: 1 });
}

export async function createFifoQueue(client: SQSClient, prefix: string): Promise<string> {
  const { QueueUrl } = await client.send(
    new CreateQueueCommand({ QueueName: `${uniqueName(prefix)}.fifo`, Attributes: { FifoQueue: 'true' } }),
  );
  if (!QueueUrl) throw new Error('CreateQueue returned no QueueUrl');
  return QueueUrl;
}

export interface ReceivedMessage {
  envelope: MessageEnvelope;
  messageId: string;
  deduplicationId?: string;
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
  };
}

/** The keys of one group's messages, in the order the queue delivered them. */
export function keysOfGroup(received: readonly ReceivedMessage[], groupId: string): string[] {
  return received.filter(({ envelope }) => envelope.groupId === groupId).map(({ envelope }) => envelope.key);
}
