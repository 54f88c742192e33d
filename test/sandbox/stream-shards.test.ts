import { describe, expect, it } from 'vitest';
import { type StreamShard, shardsToStart } from '../../sandbox/stream-shards.js';

// A split cannot be provoked in DynamoDB Local: the lineage rule is checked on its own.

const shard = (shardId: string, parentShardId?: string, closed = false): StreamShard => ({
  shardId,
  ...(parentShardId && { parentShardId }),
  closed,
});

const ids = (shards: StreamShard[]) => shards.map((s) => s.shardId);

describe('which shards to start', () => {
  const lineage = [shard('root', undefined, true), shard('left', 'root'), shard('right', 'root')];

  it('starts a parent before its children, and the children once it is finished', () => {
    expect(ids(shardsToStart(lineage, new Set(), new Set()))).toEqual(['root']);
    expect(ids(shardsToStart(lineage, new Set(['root']), new Set()))).toEqual([]);
    expect(ids(shardsToStart(lineage, new Set(['root']), new Set(['root'])))).toEqual(['left', 'right']);
  });

  it('starts a child whose parent is no longer listed (trimmed), and never a shard twice', () => {
    const trimmed = [shard('orphan', 'gone')];
    expect(ids(shardsToStart(trimmed, new Set(), new Set()))).toEqual(['orphan']);
    expect(ids(shardsToStart(trimmed, new Set(['orphan']), new Set()))).toEqual([]);
  });
});
