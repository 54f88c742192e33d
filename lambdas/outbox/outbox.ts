import { randomUUID } from 'node:crypto';
import {
  DynamoDBClient,
  IdempotentParameterMismatchException,
  TransactionCanceledException,
} from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { OncelyConfigurationError } from '../common/configuration-error.js';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { producerTraceContext } from '../common/trace-capture.js';
import type { TraceContext } from '../common/trace-context.js';
import type { TransactionWrite } from '../idempotency/store.js';
import type { PublishMessage } from '../publisher/contract.js';
import { PublishValidationError } from '../publisher/errors.js';
import { type PreparedMessage, validatePublishRequest } from '../publisher/validation.js';
import { producerSettings } from './environment.js';
import {
  OutboxTokenReusedError,
  OutboxTooManyItemsError,
  OutboxValidationError,
  OutboxWriteCanceledError,
  OutboxWriteConflictError,
  type OutboxWriteFailure,
  OutboxWriteThrottledError,
} from './errors.js';
import { newestPendingSequence } from './group-tail.js';
import {
  OUTBOX_ATTRIBUTES as A,
  itemKey,
  MAX_PENDING_SHARDS,
  markerKey,
  type OutboxLayout,
  orderKey,
  pendingShardOf,
  pendingSinceKey,
} from './layout.js';
import { canceledForThrottling, retryThrottled } from './throttling.js';
import { checkWriteSize, type MessageItems } from './write-size.js';
import { committedUnder } from './write-token-check.js';

/** One message for the outbox, as the publisher takes it (DESIGN §6): `{ type, groupId, key?, payload }`. */
export type OutboxMessage = PublishMessage;

/** Where an `Outbox` writes; every option can come from the environment `OncelyOutbox.grantWrite` sets. */
export interface OutboxOptions extends Partial<OutboxLayout> {
  /**
   * The client of the table's region.
   * @default a new `DynamoDBClient` from the AWS SDK's defaults
   */
  client?: DynamoDBClient;
  /**
   * The queue's maximum message size in bytes; every body must fit. Whatever it is, a message's
   * outbox item must also fit DynamoDB's 400 KB item (see docs/outbox.md, limits).
   * @default `OUTBOX_MAX_MESSAGE_BYTES`, else 262_144
   */
  maxMessageBytes?: number;
  /**
   * How many shards of the pending index the markers spread over (1–32), each about 500 messages a
   * second (DESIGN §9.1). A group's markers share one shard. Changing it on a live outbox is safe:
   * the relay and the sweeper read every shard whatever it is.
   * @default `OUTBOX_PENDING_SHARDS`, else 8
   */
  pendingShards?: number;
  /**
   * The clock; it stamps `publishedAt` and each message's commit time (what the sweeper and the
   * stuck alarm judge its age by), and orders a write whose groups have nothing pending.
   * @default `() => new Date()`
   */
  now?: () => Date;
}

/** One call of `Outbox.write`: your writes and the messages they announce. */
export interface OutboxWrite {
  /**
   * Your own writes (DynamoDBDocumentClient's TransactWriteItems format: Put, Update, Delete,
   * ConditionCheck), committed with the messages or not at all. With two items per message, at
   * most 100 items in all (DynamoDB's limit for one transaction).
   * @default none
   */
  writes?: readonly TransactionWrite[];
  /** The messages to publish once the writes committed, in group order. At least one. */
  messages: readonly OutboxMessage[];
  /**
   * Makes a retry of this very write safe for 10 minutes (DynamoDB's idempotency token): reuse it,
   * with the same writes and messages, when you retry after an error that may have come after the
   * commit (a timeout, a 5xx): if that commit happened, the retry succeeds without writing again.
   * @default a new token per call (the AWS SDK's own retries of the call reuse it)
   */
  clientRequestToken?: string;
  /**
   * The trace context kept with the messages and sent with them by the relay or the sweeper (as
   * `publish` sends it), so that a consumer's trace links to this write; `false` keeps none.
   * @default the active OpenTelemetry context as the registered propagator writes it, and the
   * Lambda invocation's X-Ray header (see `publish`)
   */
  traceContext?: TraceContext | false;
}

const OUTBOX_OPTION_KEYS = {
  tableName: true,
  partitionKey: true,
  sortKey: true,
  client: true,
  maxMessageBytes: true,
  pendingShards: true,
  now: true,
} satisfies KnownKeys<OutboxOptions>;

const OUTBOX_WRITE_KEYS = {
  writes: true,
  messages: true,
  clientRequestToken: true,
  traceContext: true,
} satisfies KnownKeys<OutboxWrite>;

/** What `Outbox.write` resolves with once the transaction committed. */
export interface OutboxWriteResult {
  /** Each message's key (given or derived, DESIGN §2), in the order of `messages`. */
  keys: string[];
}

/** DynamoDB's limit of items per transaction. */
export const MAX_TRANSACTION_ITEMS = 100;
/** Each message takes two items: the outbox item and its pending marker (see layout.ts). */
export const ITEMS_PER_MESSAGE = 2;

/**
 * `oncely/outbox` (DESIGN §9): your DynamoDB writes and the messages they announce commit in one
 * TransactWriteItems. If the transaction is canceled nothing is written and nothing is published;
 * once it commits, the relay (and, for what it misses, the sweeper) publishes every message.
 *
 * @example
 * ```ts
 * import { Outbox } from 'oncely/outbox';
 *
 * const outbox = new Outbox(); // its table from the variables outbox.grantWrite(fn) sets
 * await outbox.write({
 *   writes: [{ Put: { TableName: 'Orders', Item: { pk: 'order#7', sk: 'order', total: 42 }, ConditionExpression: 'attribute_not_exists(pk)' } }],
 *   messages: [{ type: 'OrderPlaced', groupId: 'customer-42', key: 'placed-7', payload: { orderId: '7', total: 42 } }],
 * });
 * ```
 */
export class Outbox {
  /** The table it writes to and its key attributes, as resolved from the options and the environment. */
  readonly layout: OutboxLayout;
  readonly #documents: DynamoDBDocumentClient;
  readonly #maxMessageBytes: number;
  readonly #pendingShards: number;
  readonly #now: () => Date;

  constructor(options: OutboxOptions = {}) {
    refuseUnknownKeys('new Outbox()', options, OUTBOX_OPTION_KEYS);
    const settings = producerSettings(options);
    this.layout = settings.layout;
    this.#documents = DynamoDBDocumentClient.from(options.client ?? new DynamoDBClient({}), {
      marshallOptions: { removeUndefinedValues: true },
    });
    this.#maxMessageBytes = settings.maxMessageBytes;
    this.#pendingShards = settings.pendingShards;
    const shards = this.#pendingShards;
    if (!Number.isInteger(shards) || shards < 1 || shards > MAX_PENDING_SHARDS) {
      throw new OncelyConfigurationError(
        ['pendingShards'],
        `new Outbox(): pendingShards must be a whole number from 1 to ${MAX_PENDING_SHARDS}, not ${shards}.`,
      );
    }
    this.#now = options.now ?? (() => new Date());
  }

  /**
   * Commits `writes` and `messages` together. Throws OutboxValidationError (bad messages, or an
   * item DynamoDB cannot store), OutboxTooManyItemsError, OutboxWriteTooLargeError (over 4 MB in
   * all), OutboxWriteCanceledError (a condition failed: it names the write or
   * message), OutboxWriteConflictError (retry it), OutboxTokenReusedError; in each case nothing was
   * written. OutboxWriteOutcomeUnknownError: an earlier call with the token may have committed;
   * retry with the same token.
   */
  async write(input: OutboxWrite): Promise<OutboxWriteResult> {
    refuseUnknownKeys('Outbox.write()', input, OUTBOX_WRITE_KEYS);
    const writes = input.writes ?? [];
    const now = this.#now();
    const traceContext = await producerTraceContext(input.traceContext, 'Outbox.write');
    const prepared = this.#prepare(input.messages, traceContext, now);
    const items = writes.length + prepared.length * ITEMS_PER_MESSAGE;
    if (items > MAX_TRANSACTION_ITEMS) {
      throw new OutboxTooManyItemsError(
        `${writes.length} writes and ${prepared.length} messages make ${items} items, over DynamoDB's ` +
          `${MAX_TRANSACTION_ITEMS} per transaction (each message takes ${ITEMS_PER_MESSAGE}): split the write.`,
      );
    }
    const token = input.clientRequestToken ?? randomUUID();
    const itemsAt = (committedAt: number, sequence: number) =>
      prepared.map((message) => this.#itemsOf(message, input.messages, committedAt, sequence, token));
    // An item's size depends on the order's and the commit time's digits, not their values:
    // checked before any request.
    checkWriteSize(writes, itemsAt(now.getTime(), now.getTime()));
    let tries = 0;
    /**
     * One try of the transaction, built anew: a try DynamoDB canceled wrote nothing, and meanwhile
     * another write may have committed in its groups, which this one must now follow. The first try
     * goes under the caller's token; each later one under a new token, as AWS documents a token for
     * identical calls only, not what it keeps of a canceled one. The items keep the caller's token,
     * which is what a retry of the call reads back.
     */
    const commit = async () => {
      const requestToken = tries++ === 0 ? token : randomUUID();
      const committedAt = tries === 1 ? now.getTime() : this.#now().getTime();
      const newest = await newestPendingSequence(
        this.#documents,
        this.layout,
        prepared.map((message) => message.groupId),
      );
      const outboxItems = itemsAt(committedAt, Math.max(committedAt, newest + 1)).flatMap(
        ({ item, marker }) => [
          {
            Put: {
              TableName: this.layout.tableName,
              Item: item,
              // A key already in the outbox was published (or is being): never a second time.
              ConditionExpression: 'attribute_not_exists(#pk)',
              ExpressionAttributeNames: { '#pk': this.layout.partitionKey },
            },
          },
          { Put: { TableName: this.layout.tableName, Item: marker } },
        ],
      );
      return this.#documents.send(
        new TransactWriteCommand({
          TransactItems: [...writes, ...outboxItems],
          ClientRequestToken: requestToken,
        }),
      );
    };
    try {
      // A partition over its capacity cancels the transaction (ThrottlingError): built and sent again.
      await retryThrottled(commit);
    } catch (error) {
      const keys = prepared.map((message) => message.key);
      if (canceledForThrottling(error)) {
        throw new OutboxWriteThrottledError(
          'DynamoDB throttled the transaction (a partition of the table or of the pending index is over its ' +
            'capacity), on every try for a few seconds; nothing was written: try again later.',
          { cause: error },
        );
      }
      if (error instanceof IdempotentParameterMismatchException) {
        // Each call stamps its bodies anew, so a retry never matches its first call exactly: if that
        // call committed (its answer lost), every message of it is in the outbox under this token.
        if (await committedUnder(this.#documents, this.layout, keys, token)) return { keys };
        throw new OutboxTokenReusedError(
          `clientRequestToken "${token}" was used in the last 10 minutes for a different ` +
            'write; nothing was written. Give each write its own token, and reuse it only to retry that write.',
          { cause: error },
        );
      }
      // Past DynamoDB's 10 minutes the token is new to it: a retry of a write that committed runs
      // again, and is canceled by its own messages' keys. The token kept on them tells it apart
      // from another write of the same messages.
      if (
        input.clientRequestToken !== undefined &&
        messageKeyTaken(error, writes.length) &&
        (await committedUnder(this.#documents, this.layout, keys, token))
      ) {
        return { keys };
      }
      throw canceled(error, writes.length, prepared) ?? error;
    }
    return { keys: prepared.map((message) => message.key) };
  }

  /**
   * A message's outbox item and pending marker, committed at `committedAt` (the producer's clock)
   * as its groups' `sequence`, under `token`.
   */
  #itemsOf(
    message: PreparedMessage,
    messages: readonly OutboxMessage[],
    committedAt: number,
    sequence: number,
    token: string,
  ): MessageItems {
    const order = orderKey(sequence, message.index, message.key);
    return {
      index: message.index,
      item: {
        ...itemKey(this.layout, message.key),
        [A.key]: message.key,
        [A.status]: 'PENDING',
        [A.groupId]: message.groupId,
        [A.type]: messages[message.index]?.type,
        [A.body]: message.body,
        [A.createdAt]: committedAt,
        [A.order]: order,
        [A.writeToken]: token,
        // Where the body leaves room for its attributes (validatePublishRequest), as the publisher.
        ...(message.trace ? { [A.traceContext]: message.trace } : {}),
      },
      marker: {
        ...markerKey(this.layout, message.groupId, order),
        [A.pending]: pendingShardOf(message.groupId, this.#pendingShards),
        // What the sweeper and the stuck count select by: this write's own clock, never another's
        // lead or a rate carried in the group's order (issue 40).
        [A.pendingSince]: pendingSinceKey(committedAt, message.index, message.key),
        [A.key]: message.key,
        [A.groupId]: message.groupId,
      },
    };
  }

  #prepare(
    messages: readonly OutboxMessage[],
    traceContext: TraceContext | undefined,
    now: Date,
  ): PreparedMessage[] {
    try {
      const request = { messages, ...(traceContext ? { traceContext } : {}) };
      return validatePublishRequest(request, { maxMessageBytes: this.#maxMessageBytes }, now).prepared;
    } catch (error) {
      if (error instanceof PublishValidationError) throw new OutboxValidationError(error.problems);
      throw error;
    }
  }
}

/** Whether DynamoDB canceled the transaction because a message's key is already in the outbox. */
function messageKeyTaken(error: unknown, writeCount: number): boolean {
  if (!(error instanceof TransactionCanceledException)) return false;
  return (error.CancellationReasons ?? []).some(
    (reason, position) =>
      position >= writeCount &&
      (position - writeCount) % ITEMS_PER_MESSAGE === 0 &&
      reason.Code === 'ConditionalCheckFailed',
  );
}

/** The typed error for a canceled transaction, naming what stopped it; undefined for any other error. */
function canceled(
  error: unknown,
  writeCount: number,
  prepared: readonly PreparedMessage[],
): OutboxWriteConflictError | OutboxWriteCanceledError | undefined {
  if (!(error instanceof TransactionCanceledException)) return undefined;
  const reasons = error.CancellationReasons ?? [];
  if (reasons.some((reason) => reason.Code === 'TransactionConflict')) {
    return new OutboxWriteConflictError(
      'another transaction was writing the same items at the same moment; nothing was written: try again',
      { cause: error },
    );
  }
  const failures: OutboxWriteFailure[] = [];
  reasons.forEach((reason, position) => {
    if (!reason.Code || reason.Code === 'None') return;
    const detail = { code: reason.Code, ...(reason.Message ? { message: reason.Message } : {}) };
    if (position < writeCount) {
      failures.push({ kind: 'write', index: position, ...detail });
      return;
    }
    const message = prepared[Math.floor((position - writeCount) / ITEMS_PER_MESSAGE)];
    if (message) failures.push({ kind: 'message', index: message.index, key: message.key, ...detail });
  });
  // Canceled without a reason that names an item: DynamoDB's own error says the most.
  return failures.length > 0 ? new OutboxWriteCanceledError(failures) : undefined;
}
