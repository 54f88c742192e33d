import {
  type _Record,
  type DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type ShardIteratorType,
} from '@aws-sdk/client-dynamodb-streams';

/** Where a mapping starts reading a shard: its oldest record, or only what is written from now on. */
export type StartingPosition = 'TRIM_HORIZON' | 'LATEST';

/**
 * Reads one shard in order with GetRecords, following each answer's next iterator. After a failed
 * read (an expired iterator, an emulator restart) it asks for a new iterator after the last record it
 * read (or at its starting position if it read none), so that no record is read twice.
 */
export class ShardReader {
  private iterator: string | undefined;
  private lastSequenceNumber: string | undefined;
  private ended = false;

  constructor(
    private readonly streams: DynamoDBStreamsClient,
    private readonly streamArn: string,
    readonly shardId: string,
    private readonly startingPosition: StartingPosition,
  ) {}

  /** Takes the shard's starting iterator: from then on, LATEST means after this moment. */
  async open(abortSignal?: AbortSignal): Promise<void> {
    this.iterator = await this.newIterator(abortSignal);
  }

  /** True once a closed shard has been read to its end: it will never have another record. */
  get finished(): boolean {
    return this.ended;
  }

  /** The shard's next records, up to 1,000 (GetRecords' most); none when it has no new ones yet. */
  async read(abortSignal?: AbortSignal): Promise<_Record[]> {
    if (this.ended) return [];
    try {
      return await this.readOnce(abortSignal);
    } catch (error) {
      // DynamoDB Local calls an iterator taken at TRIM_HORIZON on a then empty shard "trimmed" once
      // another stream of the emulator has records. Nothing was read, so a new one loses nothing.
      if (!this.readFromHorizon(error)) throw error;
      return this.readOnce(abortSignal);
    }
  }

  private async readOnce(abortSignal?: AbortSignal): Promise<_Record[]> {
    this.iterator ??= await this.newIterator(abortSignal);
    try {
      const { Records = [], NextShardIterator } = await this.streams.send(
        new GetRecordsCommand({ ShardIterator: this.iterator, Limit: 1000 }),
        { abortSignal },
      );
      this.iterator = NextShardIterator;
      this.ended = NextShardIterator === undefined;
      const last = Records[Records.length - 1]?.dynamodb?.SequenceNumber;
      if (last !== undefined) this.lastSequenceNumber = last;
      return Records;
    } catch (error) {
      this.iterator = undefined;
      throw error;
    }
  }

  /** Whether `error` is a trimmed iterator of a reader that has read nothing yet from TRIM_HORIZON. */
  private readFromHorizon(error: unknown): boolean {
    return (
      error instanceof Error &&
      error.name === 'TrimmedDataAccessException' &&
      this.lastSequenceNumber === undefined &&
      this.startingPosition === 'TRIM_HORIZON'
    );
  }

  private async newIterator(abortSignal?: AbortSignal): Promise<string> {
    const type: ShardIteratorType = this.lastSequenceNumber ? 'AFTER_SEQUENCE_NUMBER' : this.startingPosition;
    const { ShardIterator } = await this.streams.send(
      new GetShardIteratorCommand({
        StreamArn: this.streamArn,
        ShardId: this.shardId,
        ShardIteratorType: type,
        SequenceNumber: this.lastSequenceNumber,
      }),
      { abortSignal },
    );
    if (!ShardIterator) throw new Error(`GetShardIterator returned no iterator for ${this.shardId}`);
    return ShardIterator;
  }
}
