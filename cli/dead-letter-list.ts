import {
  ChangeMessageVisibilityBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../lambdas/common/envelope.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import { DLQ_ATTRIBUTES } from '../lambdas/consumer/dead-letter-queue.js';

/** One message of the DLQ, as an operator looks at it. */
export interface DeadLetter {
  messageId: string;
  groupId?: string;
  /** ISO time SQS accepted it into the DLQ. */
  sentAt?: string;
  /** From the envelope; absent when the body is not one (then `envelopeProblem` says why). */
  type?: string;
  key?: string;
  envelopeProblem?: string;
  /** Why the consumer dead-lettered it (the `ErrorName`/`ErrorMessage` attributes); absent when SQS moved it. */
  error?: { name: string; message?: string };
  /** The message id it had on the source queue, when the consumer dead-lettered it. */
  originalMessageId?: string;
  /** How often the consumer had received it (the `ReceiveCount` attribute). */
  receiveCount?: number;
  /** SQS's count, which includes the receives of `oncely dlq list` itself. */
  approximateReceiveCount?: number;
  body: string;
}

export interface DeadLetterListing {
  dlqUrl: string;
  /** In the order they were sent to the DLQ, which keeps each group's order. */
  messages: DeadLetter[];
  /** SQS's approximate count before listing; more than `messages.length` when some could not be seen. */
  approximateCount: number;
  /** Listed messages that could not be made visible again: they reappear after the listing's visibility timeout. */
  stillHidden: number;
}

/**
 * How long listed messages stay hidden while the listing goes on; they are made visible again as
 * soon as it ends. Long enough that no message comes round twice during one listing.
 */
export const LISTING_VISIBILITY_TIMEOUT_SECONDS = 60;
/** A receive waits this long for more before the listing counts the DLQ as seen through. */
const LISTING_WAIT_SECONDS = 1;

/**
 * Shows every message in the DLQ without consuming it. A FIFO queue hands out nothing of a group
 * while one of its messages is in flight, so the listing receives (hiding what it got) until no new
 * message comes, then makes everything visible again. Receiving only reaches the head of each
 * group — a receive returns at most 10 messages, and a group's later messages stay behind its
 * in-flight ones — so a group with more messages shows only its first ones; `approximateCount`
 * tells the reader.
 *
 * Each listing raises the messages' receive count: harmless on a DLQ, which has no redrive policy
 * and so no maxReceiveCount.
 */
export async function listDeadLetters(sqs: SQSClient, dlqUrl: string): Promise<DeadLetterListing> {
  const approximateCount = await messagesInQueue(sqs, dlqUrl);
  const received = new Map<string, Message>();
  let stillHidden = 0;
  try {
    for (;;) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: dlqUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: LISTING_VISIBILITY_TIMEOUT_SECONDS,
          WaitTimeSeconds: LISTING_WAIT_SECONDS,
          AttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      const fresh = Messages.filter((message) => !received.has(String(message.MessageId)));
      for (const message of Messages) received.set(String(message.MessageId), message);
      if (fresh.length === 0) break;
    }
  } finally {
    stillHidden = await makeVisible(sqs, dlqUrl, [...received.values()]);
  }
  const messages = [...received.values()].map(toDeadLetter);
  // Stable: messages sent in the same millisecond keep the order the queue handed them out in.
  messages.sort((a, b) => (a.sentAt ?? '').localeCompare(b.sentAt ?? ''));
  return { dlqUrl, messages, approximateCount, stillHidden };
}

/** Makes received messages visible again; returns how many could not be. */
export async function makeVisible(sqs: SQSClient, queueUrl: string, messages: Message[]): Promise<number> {
  let failed = 0;
  for (let i = 0; i < messages.length; i += 10) {
    const { Failed = [] } = await sqs.send(
      new ChangeMessageVisibilityBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.slice(i, i + 10).map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
          VisibilityTimeout: 0,
        })),
      }),
    );
    failed += Failed.length;
  }
  return failed;
}

function toDeadLetter(message: Message): DeadLetter {
  const attributes = message.Attributes ?? {};
  const text = (name: string) => message.MessageAttributes?.[name]?.StringValue;
  const errorName = text(DLQ_ATTRIBUTES.errorName);
  const receiveCount = text(DLQ_ATTRIBUTES.receiveCount);
  const sentAt = attributes.SentTimestamp;
  const body = message.Body ?? '';
  return {
    messageId: String(message.MessageId),
    groupId: attributes.MessageGroupId,
    sentAt: sentAt ? new Date(Number(sentAt)).toISOString() : undefined,
    ...envelopeOf(body),
    error: errorName ? { name: errorName, message: text(DLQ_ATTRIBUTES.errorMessage) } : undefined,
    originalMessageId: text(DLQ_ATTRIBUTES.originalMessageId),
    receiveCount: receiveCount ? Number(receiveCount) : undefined,
    approximateReceiveCount: attributes.ApproximateReceiveCount
      ? Number(attributes.ApproximateReceiveCount)
      : undefined,
    body,
  };
}

function envelopeOf(body: string): Pick<DeadLetter, 'type' | 'key' | 'envelopeProblem'> {
  try {
    const envelope = parseReceivedEnvelope(body);
    return { type: envelope.type, key: envelope.key };
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return { envelopeProblem: error.message };
    throw error;
  }
}
