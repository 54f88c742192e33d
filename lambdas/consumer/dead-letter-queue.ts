import type { MessageAttributeValue, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSRecord } from 'aws-lambda';
import { RECORD_WRITE_RETRY, retried } from '../common/backoff.js';
import type { KnownKeys } from '../common/known-keys.js';
import { sha256Hex } from '../common/message-key.js';
import { groupingFor, type MessageGrouping } from '../common/queue-type.js';
import { awsTraceHeaderOf, stringAttribute } from '../common/trace-context.js';
import type { StoredError } from '../idempotency/errors.js';
import type { DeadLetterClaim } from '../idempotency/record.js';
import { deadLetterAttributes } from './dead-letter-attributes.js';
import { deadLetterBody } from './dead-letter-body.js';

/** The message attributes a record sent to the DLQ carries, so an operator sees why without the logs. */
export const DLQ_ATTRIBUTES = {
  errorName: 'ErrorName',
  errorMessage: 'ErrorMessage',
  originalMessageId: 'OriginalMessageId',
  receiveCount: 'ReceiveCount',
} as const;

/** Error messages are cut here: they ride along with the body, which may be near SQS's size limit already. */
const MAX_ERROR_MESSAGE_LENGTH = 1_024;

/** The dead-letter queue non-retryable records are sent to at once: FIFO for `fifoBatch`, standard for `standardBatch`. */
export interface DeadLetterQueueOptions {
  /** The client that sends to the DLQ (and deletes from the source queue). */
  client: SQSClient;
  /** The DLQ's URL: a FIFO queue's (`.fifo`) for `fifoBatch`, a standard queue's for `standardBatch`. */
  queueUrl: string;
  /**
   * The URL of the queue the records come from. When given, a record sent to the DLQ is also deleted
   * from it at once, so that a batch that then fails as a whole does not bring it back to be
   * dead-lettered twice.
   * @default none (the event source mapping deletes it with the batch)
   */
  sourceQueueUrl?: string;
}

export const DEAD_LETTER_QUEUE_OPTION_KEYS = {
  client: true,
  queueUrl: true,
  sourceQueueUrl: true,
} satisfies KnownKeys<DeadLetterQueueOptions>;

/**
 * The SQS client's module, imported when a record first goes to the DLQ rather than at start: most
 * containers never send one, and importing it lengthens every cold start (`npm run bench`, (6)).
 */
export const sqsModule = () => import('@aws-sdk/client-sqs');

let defaultClient: Promise<SQSClient> | undefined;

/** The default DLQ client: one per container, whatever the number of consumers, made when first needed. */
export function defaultSqsClient(): Promise<SQSClient> {
  defaultClient ??= sqsModule().then(
    ({ SQSClient }) => new SQSClient({}),
    (error: unknown) => {
      defaultClient = undefined; // the next record tries again
      throw error;
    },
  );
  return defaultClient;
}

/** A queue the consumer reads, and the client for it (made on first use). */
export interface SourceQueue {
  queueUrl: string;
  client(): Promise<SQSClient>;
}

/** The options, or the same with the default client, which is made on the first send. */
export type DeadLetterQueueTarget = Omit<DeadLetterQueueOptions, 'client'> & {
  client: SQSClient | (() => Promise<SQSClient>);
};

/**
 * What a send to the DLQ came to: sent (and marked); sent, but its mark could not be written (a
 * redelivery after its claim expired would be sent again); sent by an earlier delivery already;
 * or not sent, since another invocation claimed the send and may be sending it now.
 */
export type DeadLetterSend = 'sent' | 'sent-unmarked' | 'already-sent' | 'claimed-elsewhere';

/**
 * Where the consumer claims and marks the messages it sends to the DLQ: the idempotency table.
 * Spelt out, not picked from the store, whose methods the published declarations leave out.
 */
export interface DeadLetterMarks {
  claimDeadLetter(messageId: string, claimMs: number): Promise<DeadLetterClaim>;
  releaseDeadLetterClaim(messageId: string, token: string): Promise<void>;
  markDeadLettered(messageId: string): Promise<void>;
  /** Adds the send to the dead-letter log of the message's record, for `oncely history`. */
  logDeadLetter(recordId: string, messageId: string, error: StoredError): Promise<void>;
}

/**
 * Sends non-retryable records to the DLQ at once (DESIGN §5), instead of letting them block their
 * group for maxReceiveCount × the visibility timeout before SQS moves them there itself.
 */
export class DeadLetterQueue {
  constructor(
    private readonly options: DeadLetterQueueTarget,
    private readonly marks: DeadLetterMarks,
  ) {}

  /**
   * Sends the record to the DLQ once: `already-sent` if an earlier delivery of this message did,
   * `claimed-elsewhere` if another invocation is sending it. A message comes back after its send
   * when its delete failed or its invocation died, and two invocations may hold it at once (a
   * standard queue); SQS drops a repeated send only on a FIFO DLQ, within 5 minutes. So the send is
   * claimed first (a conditional write), for `claimMs` (the invocation's remaining time and a
   * margin), and marked sent after it.
   */
  async send(
    record: SQSRecord,
    groupId: string,
    error: StoredError,
    claimMs: number,
    recordId?: string,
  ): Promise<DeadLetterSend> {
    const claim = await this.marks.claimDeadLetter(record.messageId, claimMs);
    if (claim.status === 'claimed-elsewhere') return 'claimed-elsewhere';
    if (claim.status === 'sent') {
      if (this.options.sourceQueueUrl) await this.#deleteFromSource(record);
      return 'already-sent';
    }
    try {
      await this.#sendFitting(record, groupId, error);
    } catch (sendError) {
      // Its next delivery sends it at once; if this fails too, the claim expires first.
      await this.marks.releaseDeadLetterClaim(record.messageId, claim.token).catch(() => undefined);
      throw sendError;
    }
    // Kept going if it fails: the message is in the DLQ, and acknowledged it does not come back.
    const marked = await retried(RECORD_WRITE_RETRY, () => this.marks.markDeadLettered(record.messageId));
    // The story's step only (`oncely history`): failing, it is left out, and the DLQ has the message.
    if (recordId) await this.marks.logDeadLetter(recordId, record.messageId, error).catch(() => undefined);
    if (this.options.sourceQueueUrl) await this.#deleteFromSource(record);
    return marked.error === undefined ? 'sent' : 'sent-unmarked';
  }

  /**
   * The copy keeps the producer's attributes beside the consumer's (`deadLetterAttributes`).
   * Attributes count towards SQS's message size limit, and a poison message may be at that limit
   * already: if SQS refuses the message as too long, it goes again with fewer of the consumer's,
   * then with the producer's alone, last with none, so that it reaches the DLQ all the same (the
   * consumer's log has the whole error). A body with its key written in (`deadLetterBody`) goes last
   * as it came, when even that is too long: the key is then lost, and a redrive says so.
   */
  async #sendFitting(record: SQSRecord, groupId: string, error: StoredError): Promise<void> {
    const all: Record<string, MessageAttributeValue> = {
      [DLQ_ATTRIBUTES.errorName]: stringAttribute(error.name),
      [DLQ_ATTRIBUTES.errorMessage]: stringAttribute(error.message.slice(0, MAX_ERROR_MESSAGE_LENGTH)),
      [DLQ_ATTRIBUTES.originalMessageId]: stringAttribute(record.messageId),
      [DLQ_ATTRIBUTES.receiveCount]: {
        DataType: 'Number',
        StringValue: record.attributes.ApproximateReceiveCount,
      },
    };
    const { [DLQ_ATTRIBUTES.errorName]: errorName } = all;
    const producer = record.messageAttributes;
    const body = deadLetterBody(record);
    const attempts = [
      { body, attributes: deadLetterAttributes(producer, all) },
      {
        body,
        attributes: deadLetterAttributes(producer, {
          [DLQ_ATTRIBUTES.errorName]: errorName as MessageAttributeValue,
        }),
      },
      { body, attributes: deadLetterAttributes(producer, {}) },
      { body, attributes: undefined },
      ...(body === record.body ? [] : [{ body: record.body, attributes: undefined }]),
    ];
    const [client, { SendMessageCommand }] = await Promise.all([this.#client(), sqsModule()]);
    for (const [index, { body: messageBody, attributes }] of attempts.entries()) {
      try {
        await client.send(
          new SendMessageCommand({
            QueueUrl: this.options.queueUrl,
            MessageBody: messageBody,
            ...this.#grouping(record, groupId),
            MessageAttributes: attributes,
            // The producer's X-Ray context goes along (DESIGN §6); a system attribute adds no size.
            ...awsTraceHeaderOf(record.attributes.AWSTraceHeader),
          }),
        );
        return;
      } catch (sendError) {
        if (!isTooLong(sendError) || index === attempts.length - 1) throw sendError;
      }
    }
  }

  /**
   * A FIFO DLQ's group and deduplication id. A standard DLQ (DESIGN §5.1) refuses a deduplication
   * id, and takes a group only as a fair queue's tenant key: the record's, when it has one.
   */
  #grouping(record: SQSRecord, groupId: string): MessageGrouping {
    // Per message: the SDK's retries of this send, and a redelivery of the same message (a batch
    // that failed after it was sent here), dedupe. A redrive sends a new message, with a new id, so
    // that one can come back here again.
    return groupingFor(this.options.queueUrl, groupId, sha256Hex(record.messageId));
  }

  /**
   * The queue the records come from, with the client for it, when its URL is known: where the
   * standard consumer sets its failed records' visibility (DESIGN §5.1).
   */
  get sourceQueue(): SourceQueue | undefined {
    const { sourceQueueUrl } = this.options;
    return sourceQueueUrl ? { queueUrl: sourceQueueUrl, client: () => this.#client() } : undefined;
  }

  async #deleteFromSource(record: SQSRecord): Promise<void> {
    try {
      const [client, { DeleteMessageCommand }] = await Promise.all([this.#client(), sqsModule()]);
      await client.send(
        new DeleteMessageCommand({
          QueueUrl: this.options.sourceQueueUrl,
          ReceiptHandle: record.receiptHandle,
        }),
      );
    } catch {
      // The event source mapping deletes it with the batch; and within 5 minutes the DLQ dedupes a copy.
    }
  }

  #client(): Promise<SQSClient> {
    const { client } = this.options;
    return typeof client === 'function' ? client() : Promise.resolve(client);
  }
}

/** SQS refused the message because body and attributes together exceed the queue's maximum size. */
function isTooLong(error: unknown): boolean {
  return error instanceof Error && /shorter than|too long|maximum message size/i.test(error.message);
}
