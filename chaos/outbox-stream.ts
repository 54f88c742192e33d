import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';

/** Records per relay invocation: small, so a group's markers are spread over several batches. */
const BATCH_SIZE = 4;
/** Lambda's retries of a failing batch before it skips it (the sweeper sends what it leaves). */
const MAX_ATTEMPTS = 3;

interface Shard {
  records: DynamoDBRecord[];
  /** The first record not yet handled successfully. */
  cursor: number;
  /** Failed attempts at the batch starting at the cursor. */
  attempts: number;
}

/**
 * The outbox table's stream as the relay's event source reads it: the inserted pending markers,
 * in shards that are read independently (so one group's markers may come after another's, or not
 * yet at all), in batches, each retried from the record the relay reported, a bounded number of times.
 */
export class MarkerStream {
  readonly #shards: Shard[];
  #sequence = 0;

  constructor(shards: number) {
    this.#shards = Array.from({ length: shards }, () => ({ records: [], cursor: 0, attempts: 0 }));
  }

  /** A marker the producer's write inserted. */
  insert(shard: number, image: Record<string, AttributeValue>): void {
    this.#shard(shard).records.push({
      eventName: 'INSERT',
      eventSource: 'aws:dynamodb',
      dynamodb: {
        NewImage: image as never,
        SequenceNumber: String(++this.#sequence).padStart(21, '0'),
        StreamViewType: 'NEW_IMAGE',
      },
    });
  }

  /** The shard's next batch, from its cursor; empty when it is read to its end. */
  next(shard: number): DynamoDBStreamEvent {
    const { records, cursor } = this.#shard(shard);
    return { Records: records.slice(cursor, cursor + BATCH_SIZE) };
  }

  /** What the invocation with `batch` answered (`crashed`: nothing), as Lambda's event source reads it. */
  settle(shard: number, batch: DynamoDBStreamEvent, answer: DynamoDBBatchResponse | 'crashed'): void {
    const state = this.#shard(shard);
    if (batch.Records.length === 0) return;
    const failed =
      answer === 'crashed'
        ? 0
        : batch.Records.findIndex(
            (record) =>
              record.dynamodb?.SequenceNumber !== undefined &&
              answer.batchItemFailures.some(
                (failure) => failure.itemIdentifier === record.dynamodb?.SequenceNumber,
              ),
          );
    if (failed === -1) {
      state.cursor += batch.Records.length;
      state.attempts = 0;
      return;
    }
    if (failed > 0) {
      state.cursor += failed;
      state.attempts = 1;
      return;
    }
    state.attempts++;
    if (state.attempts < MAX_ATTEMPTS) return;
    state.cursor += batch.Records.length;
    state.attempts = 0;
  }

  #shard(index: number): Shard {
    return this.#shards[index % this.#shards.length] as Shard;
  }
}
