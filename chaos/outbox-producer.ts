import { randomUUID } from 'node:crypto';
import type { AttributeValue, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { OncelyError } from '../lambdas/common/oncely-error.js';
import { OutboxWriteCanceledError } from '../lambdas/outbox/errors.js';
import { OUTBOX_ATTRIBUTES as A, type OutboxLayout } from '../lambdas/outbox/layout.js';
import { Outbox } from '../lambdas/outbox/outbox.js';
import { groupMarkerImages } from './outbox-observe.js';
import type { LostWriteAnswer } from './outbox-schedule.js';
import type { TestClock } from './test-clock.js';

/** Calls of one write in all: the first and the retries, with the same idempotency token. */
const WRITE_CALLS = 3;

/** One write of the schedule, as planned and as the producer was answered. */
export interface PlannedWrite {
  index: number;
  /** Message keys, in the write's order. */
  keys: string[];
  /** Each message's group id. */
  groups: string[];
  /** Its business write is refused by its condition. */
  canceled: boolean;
  /** The business item it puts: a fresh order, or the one item every refused write collides with. */
  businessKey: string;
  /**
   * What the last call answered: `canceled` by a condition, `refused` by another error that says
   * nothing was written (not retryable), `failed` when every call failed otherwise.
   */
  told: 'written' | 'canceled' | 'refused' | 'failed';
  /** Errors of the calls that failed. */
  errors: string[];
}

/** The business item every refused write collides with. */
export const takenKey = (runId: string) => `${runId}#taken`;

/**
 * The producing service: each write puts a business item, conditionally, and its messages through
 * `Outbox.write`, via the fault proxy. A call that fails otherwise than canceled is made again with the
 * same idempotency token, as `OutboxWrite.clientRequestToken` advises.
 */
export class OutboxProducer {
  readonly #outbox: Outbox;
  readonly #layout: OutboxLayout;
  readonly #runId: string;
  readonly #answers: { loseWriteAnswers: boolean };
  /** While true, DynamoDB meets each call's token as new: the call comes past the token's 10 minutes. */
  #pastTokenWindow = false;

  constructor(options: {
    client: DynamoDBClient;
    layout: OutboxLayout;
    clock: TestClock;
    runId: string;
    /** The proxy's switch that loses every answer of the producer's transactions. */
    answers: { loseWriteAnswers: boolean };
  }) {
    this.#outbox = new Outbox({
      client: options.client,
      ...options.layout,
      now: () => new Date(options.clock.now()),
    });
    this.#layout = options.layout;
    this.#runId = options.runId;
    this.#answers = options.answers;
    // The outbox keeps the caller's token; DynamoDB gets a fresh one per call (its retries keep it).
    options.client.middlewareStack.add(
      (next, context) => async (args) =>
        this.#pastTokenWindow && context.commandName === 'TransactWriteItemsCommand'
          ? next({ ...args, input: { ...(args.input as object), ClientRequestToken: randomUUID() } })
          : next(args),
      { step: 'initialize', name: 'pastTokenWindow' },
    );
  }

  async write(
    index: number,
    groups: readonly number[],
    canceled: boolean,
    lostAnswer?: LostWriteAnswer,
  ): Promise<PlannedWrite> {
    const id = this.#runId;
    const planned: PlannedWrite = {
      index,
      keys: groups.map((_, position) => `${id}-w${index}-m${position}`),
      groups: groups.map((group) => `${id}-g${group}`),
      canceled,
      businessKey: canceled ? takenKey(id) : `${id}#order-${index}`,
      told: 'failed',
      errors: [],
    };
    const token = randomUUID();
    for (let call = 1; call <= WRITE_CALLS; call++) {
      this.#answers.loseWriteAnswers = lostAnswer !== undefined && call === 1;
      this.#pastTokenWindow = lostAnswer === 'past-window' && call > 1;
      try {
        await this.#outbox.write({
          writes: [
            {
              Put: {
                TableName: this.#layout.tableName,
                Item: {
                  [this.#layout.partitionKey]: planned.businessKey,
                  [this.#layout.sortKey]: 'order',
                  write: index,
                },
                ConditionExpression: 'attribute_not_exists(#pk)',
                ExpressionAttributeNames: { '#pk': this.#layout.partitionKey },
              },
            },
          ],
          messages: planned.keys.map((key, position) => ({
            type: 'OrderPlaced',
            groupId: planned.groups[position] as string,
            key,
            payload: { write: index, position },
          })),
          clientRequestToken: token,
        });
        planned.told = 'written';
        return planned;
      } catch (error) {
        planned.errors.push(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
        if (error instanceof OutboxWriteCanceledError) {
          planned.told = 'canceled';
          return planned;
        }
        if (error instanceof OncelyError && !error.retryable) {
          planned.told = 'refused';
          return planned;
        }
      } finally {
        this.#answers.loseWriteAnswers = false;
        this.#pastTokenWindow = false;
      }
    }
    return planned;
  }
}

/**
 * The pending markers a write inserted, with each message's position in the write, in its order,
 * read directly: what the table's stream carries.
 */
export async function insertedMarkers(
  client: DynamoDBClient,
  layout: OutboxLayout,
  write: PlannedWrite,
): Promise<{ position: number; image: Record<string, AttributeValue> }[]> {
  const found = new Map<string, Record<string, AttributeValue>>();
  for (const group of new Set(write.groups)) {
    for (const image of await groupMarkerImages(client, layout, group))
      found.set(String(image[A.key]?.S), image);
  }
  return write.keys.flatMap((key, position) => {
    const image = found.get(key);
    return image ? [{ position, image }] : [];
  });
}
