import {
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { compileFilters, type RecordFilter } from './event-filter.js';
import type { LocalEventSource } from './queue-source.js';
import { toSqsRecord } from './sqs-event.js';

/**
 * Lambda's payload limit for a synchronous invocation, and so for a mapping's batch: it invokes
 * early rather than pass it (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html,
 * and `BatchSize` in https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html).
 */
export const MAX_BATCH_BYTES = 6_291_456;
/** What one ReceiveMessage may ask for: the emulator, as SQS, refuses more. */
const RECEIVE_MAX = 10;
/** `{"Records":[` and `]}` around the records, with a comma between two. */
const EVENT_OVERHEAD_BYTES = Buffer.byteLength('{"Records":[]}');

export interface GathererOptions {
  sqs: SQSClient;
  source: LocalEventSource;
  region: string;
  /** Long-poll wait per receive while no batch is being gathered. */
  waitTimeSeconds: number;
  isRunning: () => boolean;
}

/** A batch ready to invoke with, and the received messages that did not fit in it. */
export interface Gathered {
  messages: Message[];
  /** Received messages left for the next batch: it would have passed {@link MAX_BATCH_BYTES}. */
  carried: Message[];
  /** The first receive found nothing: the queue is idle. */
  idle: boolean;
}

/**
 * Gathers one batch as Lambda's SQS poller does: receives of at most 10 messages, repeated until
 * `BatchSize` records are gathered or the batching window (from the first record) is over, and
 * never an event over {@link MAX_BATCH_BYTES}: the message that would pass it starts the next
 * batch. Without a batching window, one receive's records are the batch. A record that matches
 * none of the mapping's filters is deleted at once and never reaches the function, as Lambda
 * deletes it (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html).
 */
export class BatchGatherer {
  readonly #options: GathererOptions;
  readonly #filter: RecordFilter;

  constructor(options: GathererOptions) {
    this.#options = options;
    this.#filter = compileFilters(options.source.filterPatterns);
  }

  async gather(carried: Message[]): Promise<Gathered> {
    const { source } = this.#options;
    const messages: Message[] = [];
    let bytes = EVENT_OVERHEAD_BYTES;
    let pending = carried;
    let windowEnds: number | undefined;
    while (this.#options.isRunning()) {
      while (pending.length > 0) {
        const [message, ...rest] = pending;
        const record = toSqsRecord(message, source.queue.arn, this.#options.region);
        const size = Buffer.byteLength(JSON.stringify(record)) + (messages.length > 0 ? 1 : 0);
        if (messages.length > 0 && bytes + size > MAX_BATCH_BYTES) {
          return { messages, carried: pending, idle: false };
        }
        pending = rest;
        messages.push(message);
        bytes += size;
        if (messages.length === source.batchSize) return { messages, carried: pending, idle: false };
      }
      if (messages.length > 0) windowEnds ??= Date.now() + source.maximumBatchingWindowInSeconds * 1000;
      const remainingMs = windowEnds === undefined ? undefined : windowEnds - Date.now();
      if (remainingMs !== undefined && remainingMs <= 0) break;
      // The window is kept to the second: a receive's wait is whole seconds.
      const waitTimeSeconds =
        remainingMs === undefined
          ? this.#options.waitTimeSeconds
          : Math.min(this.#options.waitTimeSeconds, Math.ceil(remainingMs / 1000));
      const received = await this.#receive(
        Math.min(RECEIVE_MAX, source.batchSize - messages.length),
        waitTimeSeconds,
      );
      if (received.length === 0 && messages.length === 0) return { messages, carried: [], idle: true };
      pending = await this.#dropFiltered(received);
    }
    return { messages, carried: [], idle: false };
  }

  async #receive(maxNumberOfMessages: number, waitTimeSeconds: number): Promise<Message[]> {
    const { Messages = [] } = await this.#options.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.#options.source.queue.url,
        MaxNumberOfMessages: maxNumberOfMessages,
        WaitTimeSeconds: waitTimeSeconds,
        AttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    return Messages;
  }

  /** Deletes the messages no filter matches; the rest, in order. */
  async #dropFiltered(received: Message[]): Promise<Message[]> {
    const { source, region } = this.#options;
    const matching: Message[] = [];
    const dropped: Message[] = [];
    for (const message of received) {
      const record = toSqsRecord(message, source.queue.arn, region);
      (this.#filter({ ...record, body: filterableBody(record.body) }) ? matching : dropped).push(message);
    }
    await deleteMessages(this.#options.sqs, source.queue.url, dropped);
    return matching;
  }
}

/**
 * The body as a filter sees it: a JSON body parsed, so that a pattern's nested keys match its
 * fields; any other body as its plain string (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html).
 */
function filterableBody(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

/** Deletes messages by receipt handle, ten to a request. */
export async function deleteMessages(sqs: SQSClient, queueUrl: string, messages: Message[]): Promise<void> {
  for (let i = 0; i < messages.length; i += RECEIVE_MAX) {
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: messages.slice(i, i + RECEIVE_MAX).map((message, index) => ({
          Id: String(index),
          ReceiptHandle: message.ReceiptHandle,
        })),
      }),
    );
  }
}
