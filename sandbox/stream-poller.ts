import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { compileFilters } from './event-filter.js';
import type { InvocationResult } from './lambda-context.js';
import { pause } from './pause.js';
import { pollShard, type StreamBatchReport } from './stream-shard-poller.js';
import { ShardReader } from './stream-shard-reader.js';
import { describeShards, type StreamShard, shardsToStart } from './stream-shards.js';
import type { LocalStreamSource } from './stream-source.js';

export type { StreamBatchReport } from './stream-shard-poller.js';

export interface StreamPollerOptions {
  streams: DynamoDBStreamsClient;
  /** For the on-failure destination. */
  sqs: SQSClient;
  source: LocalStreamSource;
  region: string;
  invoke: (event: DynamoDBStreamEvent, awsRequestId: string) => Promise<InvocationResult>;
  onBatch?: (report: StreamBatchReport) => void;
}

export interface StreamPoller {
  /** Ends every read and wait at once, lets an invocation in progress finish, and starts nothing after. */
  stop(): Promise<void>;
}

/** How often the stream is described for new shards, besides whenever a shard is finished. */
const DISCOVERY_INTERVAL_MS = 2000;

/**
 * Runs a DynamoDB-stream event source mapping locally with Lambda's rules: one poller per shard
 * (see {@link pollShard}), shards found with DescribeStream, and a child shard read only once its
 * parent is finished. Resolves once the starting position of every shard is taken, so that with
 * LATEST every record written after it resolves is delivered.
 */
export async function startStreamPoller(options: StreamPollerOptions): Promise<StreamPoller> {
  const { streams, source } = options;
  const controller = new AbortController();
  const { signal } = controller;
  const shardOptions = { ...options, filter: compileFilters(source.filterPatterns), signal };
  const started = new Set<string>();
  const finished = new Set<string>();
  const loops: Promise<void>[] = [];
  let wake = () => {};

  const run = (reader: ShardReader) => {
    loops.push(
      pollShard(reader, shardOptions).then((done) => {
        if (!done) return;
        finished.add(reader.shardId);
        // Its children may start now.
        wake();
      }),
    );
  };
  const startReady = (shards: StreamShard[]) => {
    for (const shard of shardsToStart(shards, started, finished)) {
      started.add(shard.shardId);
      // Shards that appear after the start are read whole: LATEST was the mapping's start.
      run(new ShardReader(streams, source.streamArn, shard.shardId, 'TRIM_HORIZON'));
    }
  };

  const stop = async () => {
    controller.abort();
    await discovery;
    await Promise.all(loops);
  };
  let discovery: Promise<void> = Promise.resolve();
  try {
    const shards = await describeShards(streams, source.streamArn, signal);
    if (source.startingPosition === 'LATEST') {
      // Nothing written from now on is in a closed shard: it is done with already.
      for (const shard of shards.filter((candidate) => candidate.closed)) {
        started.add(shard.shardId);
        finished.add(shard.shardId);
      }
    }
    const readers = shardsToStart(shards, started, finished).map((shard) => {
      started.add(shard.shardId);
      return new ShardReader(streams, source.streamArn, shard.shardId, source.startingPosition);
    });
    await Promise.all(readers.map((reader) => reader.open(signal)));
    readers.forEach(run);
  } catch (error) {
    await stop();
    throw error;
  }

  discovery = (async () => {
    while (!signal.aborted) {
      await Promise.race([
        pause(DISCOVERY_INTERVAL_MS, signal),
        new Promise<void>((resolve) => (wake = resolve)),
      ]);
      if (signal.aborted) return;
      try {
        startReady(await describeShards(streams, source.streamArn, signal));
      } catch (error) {
        if (!signal.aborted) {
          console.error(`[oncely sandbox] describing ${source.logicalId}'s stream failed: ${String(error)}`);
        }
      }
    }
  })();
  return { stop };
}
