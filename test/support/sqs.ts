import { randomUUID } from 'node:crypto';
import {
  CreateQueueCommand,
  DeleteQueueCommand,
  GetQueueAttributesCommand,
  type Message,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { inject } from 'vitest';
import { createEnvelope, type OutgoingMessage } from '../../lambdas/runtime/envelope';
import { localAwsConfig } from '../../sandbox/local-aws-config';

export interface FifoQueue {
  url: string;
  arn: string;
}

/** A client for the run's SQS emulator. */
export function localSqsClient(): SQSClient {
  return new SQSClient(localAwsConfig(inject('sqsEndpoint')));
}

/** Creates a uniquely named FIFO queue; `deleteQueues` removes what a file created. */
export async function createFifoQueue(
  sqs: SQSClient,
  attributes: Record<string, string> = {},
): Promise<FifoQueue> {
  const QueueName = `consumer-${randomUUID().slice(0, 8)}.fifo`;
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
