import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../lambdas/common/envelope.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import { DLQ_ATTRIBUTES } from '../lambdas/consumer/dead-letter-queue.js';
import { sweepDeadLetters } from './dead-letter-sweep.js';

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
  /** Every message in the DLQ is listed (`complete`), or why not: see {@link SweepEnd}. */
  end: 'complete' | 'limit' | 'blocked' | 'timed-out';
  /** Visible in the DLQ and not listed: behind listed messages of their group, or past the limit. */
  left: number;
  /** In flight elsewhere (a redrive, another listing) and not listed. */
  hidden: number;
  /** Listed messages that could not be made visible again: they reappear after the listing's visibility timeout. */
  stillHidden: number;
}

export interface ListOptions {
  /** List at most this many messages. */
  limit?: number;
  /** Cut each body to this many characters (a table shows a glimpse; `--json` the whole body). */
  bodyCharacters?: number;
  /** Bound on the whole listing: how long it waits for messages in flight elsewhere. */
  timeoutMs?: number;
}

/** What `dlq list` shows by default: enough to see what went wrong, few enough to hold in memory: 125 MiB at worst at the pipeline's default 256 KiB per body, 500 MiB at SQS's 1 MiB. */
export const DEFAULT_LIST_LIMIT = 500;
/** As long as another listing may hold its messages; within it, no listed message comes round twice. */
const DEFAULT_LIST_TIMEOUT_MS = 60_000;

/**
 * How long listed messages stay hidden while the listing goes on; they are made visible again as
 * soon as it ends. Long enough that no message comes round twice during one listing.
 */
export const LISTING_VISIBILITY_TIMEOUT_SECONDS = 60;

/**
 * Shows the messages in the DLQ without consuming them. A FIFO queue hands out nothing of a group
 * while one of its messages is in flight, so the listing receives (hiding what it got) until SQS's
 * counts show it saw every message (dead-letter-sweep.ts), then makes everything visible again.
 * Receiving only reaches the head of each group — a receive returns at most 10 messages, and a
 * group's later messages stay behind its in-flight ones — so a group with more messages shows only
 * its first ones: the listing then ends `blocked`, with `left` saying how many it could not see.
 *
 * Each listing raises the messages' SQS receive count: harmless on a DLQ, which has no redrive
 * policy and so no maxReceiveCount.
 */
export async function listDeadLetters(
  sqs: SQSClient,
  dlqUrl: string,
  options: ListOptions = {},
): Promise<DeadLetterListing> {
  const approximateCount = await messagesInQueue(sqs, dlqUrl);
  const limit = options.limit ?? DEFAULT_LIST_LIMIT;
  const listed: DeadLetter[] = [];
  const sweep = await sweepDeadLetters(sqs, dlqUrl, {
    deadline: Date.now() + (options.timeoutMs ?? DEFAULT_LIST_TIMEOUT_MS),
    visibilitySeconds: LISTING_VISIBILITY_TIMEOUT_SECONDS,
    done: () => listed.length >= limit,
    handle: async (messages) => {
      for (const message of messages.slice(0, limit - listed.length)) {
        listed.push(toDeadLetter(message, options.bodyCharacters));
      }
      return new Set();
    },
  });
  // Stable: messages sent in the same millisecond keep the order the queue handed them out in.
  listed.sort((a, b) => (a.sentAt ?? '').localeCompare(b.sentAt ?? ''));
  const end = sweep.end === 'seen-through' ? 'complete' : sweep.end === 'stopped' ? 'limit' : sweep.end;
  return {
    dlqUrl,
    messages: listed,
    approximateCount,
    // At the limit with nothing else in the DLQ, the listing is whole all the same.
    end: end === 'limit' && sweep.left === 0 && sweep.hidden === 0 ? 'complete' : end,
    left: sweep.left,
    hidden: sweep.hidden,
    stillHidden: sweep.stillHidden,
  };
}

function toDeadLetter(message: Message, bodyCharacters?: number): DeadLetter {
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
    body:
      bodyCharacters !== undefined && body.length > bodyCharacters
        ? `${body.slice(0, bodyCharacters)}…`
        : body,
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
