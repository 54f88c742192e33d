import {
  DescribeStreamCommand,
  type DynamoDBStreamsClient,
  type Shard,
} from '@aws-sdk/client-dynamodb-streams';

/** A shard of a stream as the poller needs it. */
export interface StreamShard {
  shardId: string;
  parentShardId?: string;
  /** A closed shard has an ending sequence number: once read to its end, it has no more records. */
  closed: boolean;
}

/** Every shard of the stream, all of DescribeStream's pages. */
export async function describeShards(
  streams: DynamoDBStreamsClient,
  streamArn: string,
  abortSignal?: AbortSignal,
): Promise<StreamShard[]> {
  const shards: StreamShard[] = [];
  let exclusiveStartShardId: string | undefined;
  do {
    const { StreamDescription } = await streams.send(
      new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: exclusiveStartShardId }),
      { abortSignal },
    );
    shards.push(...(StreamDescription?.Shards ?? []).map(toStreamShard));
    exclusiveStartShardId = StreamDescription?.LastEvaluatedShardId;
  } while (exclusiveStartShardId);
  return shards;
}

function toStreamShard(shard: Shard): StreamShard {
  return {
    shardId: String(shard.ShardId),
    ...(shard.ParentShardId && { parentShardId: shard.ParentShardId }),
    closed: shard.SequenceNumberRange?.EndingSequenceNumber !== undefined,
  };
}

/**
 * The shards to start reading now, as Lambda orders them: a shard whose parent is still listed is
 * read only once the parent is finished (read to its end), so that the records of an item stay in
 * order across a split. A parent no longer listed has been trimmed away: its children start.
 */
export function shardsToStart(
  shards: readonly StreamShard[],
  started: ReadonlySet<string>,
  finished: ReadonlySet<string>,
): StreamShard[] {
  const listed = new Set(shards.map((shard) => shard.shardId));
  return shards.filter(
    ({ shardId, parentShardId }) =>
      !started.has(shardId) &&
      (parentShardId === undefined || !listed.has(parentShardId) || finished.has(parentShardId)),
  );
}
