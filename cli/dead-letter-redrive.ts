import {
  DeleteMessageCommand,
  type Message,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import {
  type DedupHorizon,
  isPastDedupHorizon,
  PAST_DEDUP_HORIZON,
} from '../lambdas/common/dedup-horizon.js';
import { InvalidEnvelopeError, parseReceivedEnvelope } from '../lambdas/common/envelope.js';
import { DLQ_ATTRIBUTES } from '../lambdas/consumer/dead-letter-queue.js';
import type { PipelineResources } from '../lib/constructs/pipeline-outputs.js';
import { makeVisible } from './dead-letter-list.js';
import { DedupHorizonUnknownError, RedriveInterruptedError } from './operations-errors.js';

export interface RedriveOptions {
  /** Bound on the whole redrive; what it did not reach stays in the DLQ for the next run. */
  timeoutMs?: number;
}

export interface RedriveResult {
  /** Sent back to the queue. */
  moved: number;
  /** Past the dedup horizon: left in the DLQ. */
  skipped: number;
  /** The time bound ended the redrive before the DLQ was seen through. */
  timedOut: boolean;
  /** Messages left in the DLQ that could not be made visible again: they reappear within a minute. */
  stillHidden: number;
}

const DEFAULT_REDRIVE_TIMEOUT_MS = 5 * 60_000;
/** Long enough for one received batch to be sent on and deleted, so no message comes round twice. */
const REDRIVE_VISIBILITY_TIMEOUT_SECONDS = 60;
/** A receive waits this long for more before the DLQ counts as seen through. */
const REDRIVE_WAIT_SECONDS = 1;

/**
 * Moves the DLQ's messages back to the queue, each group in order: every message is sent to the
 * queue in its group, then deleted from the DLQ, in the order the DLQ hands them out. A message past
 * the dedup horizon (DESIGN §2; or already dead-lettered as `PastDedupHorizon`) is never sent: it
 * would run as a new message. It stays in the DLQ, as a copy marked `PastDedupHorizon` behind the
 * rest of its group; the original is deleted, since a FIFO group with a message in flight hands out
 * nothing more. Messages that are not Oncely envelopes are moved as they are. A moved message that
 * fails again and comes back during the run stays for the next run.
 *
 * A crash between a send and its delete leaves the message in both places: harmless, the consumer
 * recognises the second copy by its key. The send's deduplication id comes from the DLQ message id,
 * so a retried send, or a second run within SQS's 5 minutes, adds no copy at all.
 */
export async function redriveDeadLetters(
  sqs: SQSClient,
  resources: Pick<PipelineResources, 'dlqUrl' | 'queueUrl' | 'idempotencyTtlSeconds'>,
  options: RedriveOptions = {},
): Promise<RedriveResult> {
  const horizon = horizonOf(resources.idempotencyTtlSeconds);
  const deadline = Date.now() + (options.timeoutMs ?? DEFAULT_REDRIVE_TIMEOUT_MS);
  const counts = { moved: 0, skipped: 0 };
  /**
   * Ids of what this run sent: skipped copies, and moved messages (which the consumer may send
   * straight back). Seeing only those means the DLQ is seen through; redriving them again would loop.
   */
  const ours = new Set<string>();
  /** Received and not deleted: made visible again at the end. */
  const held = new Map<string, Message>();
  let timedOut = true;
  try {
    while (Date.now() < deadline) {
      const { Messages = [] } = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: resources.dlqUrl,
          MaxNumberOfMessages: 10,
          VisibilityTimeout: REDRIVE_VISIBILITY_TIMEOUT_SECONDS,
          WaitTimeSeconds: REDRIVE_WAIT_SECONDS,
          AttributeNames: ['All'],
          MessageAttributeNames: ['All'],
        }),
      );
      for (const message of Messages) held.set(String(message.MessageId), message);
      const fresh = Messages.filter((message) => !isOurs(message, ours));
      if (fresh.length === 0) {
        timedOut = false;
        break;
      }
      for (const message of fresh) {
        await redriveOne(sqs, resources, message, isPast(message, horizon, Date.now()), ours, counts);
        held.delete(String(message.MessageId));
      }
    }
  } catch (error) {
    await release(sqs, resources.dlqUrl, held);
    throw error;
  }
  return { ...counts, timedOut, stillHidden: await release(sqs, resources.dlqUrl, held) };
}

/** Sends one message on (to the queue, or back to the DLQ when skipped), then deletes it. */
async function redriveOne(
  sqs: SQSClient,
  resources: Pick<PipelineResources, 'dlqUrl' | 'queueUrl'>,
  message: Message,
  past: boolean,
  ours: Set<string>,
  counts: { moved: number; skipped: number },
): Promise<void> {
  const id = String(message.MessageId);
  try {
    const { MessageId } = await sqs.send(
      new SendMessageCommand({
        QueueUrl: past ? resources.dlqUrl : resources.queueUrl,
        MessageBody: message.Body,
        MessageGroupId: message.Attributes?.MessageGroupId,
        MessageDeduplicationId: `${past ? 'skipped' : 'redriven'}-${id}`,
        MessageAttributes: past ? markedPast(message) : withoutDlqAttributes(message),
      }),
    );
    ours.add(String(MessageId));
    await sqs.send(
      new DeleteMessageCommand({ QueueUrl: resources.dlqUrl, ReceiptHandle: message.ReceiptHandle }),
    );
  } catch (cause) {
    throw new RedriveInterruptedError(
      `The redrive stopped after moving ${counts.moved} and skipping ${counts.skipped} messages: ` +
        `${past ? 'keeping' : 'moving'} message ${id} (group ${message.Attributes?.MessageGroupId}) failed ` +
        `(${String(cause)}). What was not moved is still in the DLQ: run \`oncely dlq redrive\` again (a message ` +
        'moved twice is recognised by its key).',
      { cause },
    );
  }
  counts[past ? 'skipped' : 'moved']++;
}

/** Sent by this run: a skipped copy, or a moved message back in the DLQ (the consumer names its queue id). */
function isOurs(message: Message, ours: Set<string>): boolean {
  const original = message.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue;
  return ours.has(String(message.MessageId)) || (original !== undefined && ours.has(original));
}

function isPast(message: Message, horizon: DedupHorizon, nowMs: number): boolean {
  if (message.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue === PAST_DEDUP_HORIZON) return true;
  try {
    return isPastDedupHorizon(parseReceivedEnvelope(message.Body ?? '').publishedAt, horizon, nowMs);
  } catch (error) {
    if (error instanceof InvalidEnvelopeError) return false; // not ours to judge: moved as it is
    throw error;
  }
}

/** The DLQ's reasons would mislead on the queue; a producer's own attributes go along. */
function withoutDlqAttributes(message: Message): Record<string, MessageAttributeValue> {
  const ours = new Set<string>(Object.values(DLQ_ATTRIBUTES));
  return sendable(
    Object.fromEntries(Object.entries(message.MessageAttributes ?? {}).filter(([name]) => !ours.has(name))),
  );
}

function markedPast(message: Message): Record<string, MessageAttributeValue> {
  return {
    ...sendable(message.MessageAttributes ?? {}),
    [DLQ_ATTRIBUTES.errorName]: { DataType: 'String', StringValue: PAST_DEDUP_HORIZON },
    [DLQ_ATTRIBUTES.errorMessage]: {
      DataType: 'String',
      StringValue:
        'published before the dedup horizon: it can no longer be told apart from a new message, so it is not ' +
        'redriven. To run it anyway, publish it again under a new key.',
    },
  };
}

/**
 * Makes what this run holds visible again: what it sent and received back, and on a failure what it had not
 * got to. Returns how many could not be (they reappear after the visibility timeout anyway).
 */
async function release(sqs: SQSClient, dlqUrl: string, held: Map<string, Message>): Promise<number> {
  return makeVisible(sqs, dlqUrl, [...held.values()]).catch(() => held.size);
}

/** Received attributes as SendMessage takes them (a receive may add empty list fields SQS refuses). */
function sendable(attributes: Record<string, MessageAttributeValue>): Record<string, MessageAttributeValue> {
  return Object.fromEntries(
    Object.entries(attributes).map(([name, { DataType, StringValue, BinaryValue }]) => [
      name,
      { DataType, StringValue, BinaryValue },
    ]),
  );
}

function horizonOf(ttlSeconds: string): DedupHorizon {
  const seconds = Number(ttlSeconds);
  if (!Number.isInteger(seconds) || seconds <= 0) {
    throw new DedupHorizonUnknownError(
      `The pipeline's IdempotencyTtlSeconds is "${ttlSeconds}", not a number of seconds, so the redrive cannot ` +
        'tell which messages are past the dedup horizon. Redeploy the stack (or restart `oncely local`) from this version.',
    );
  }
  return { ttlSeconds: seconds };
}
