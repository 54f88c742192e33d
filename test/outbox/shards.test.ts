import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Outbox } from '../../lambdas/outbox/index.js';
import {
  groupPartition,
  type OutboxLayout,
  PENDING_PARTITION,
  pendingShardOf,
} from '../../lambdas/outbox/layout.js';
import { OutboxItems } from '../../lambdas/outbox/outbox-items.js';
import { sweep } from '../../lambdas/outbox/sweeper.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { createOutboxTable, senderOptions } from '../support/outbox.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';

/**
 * Sharded pending markers (DESIGN §9.1), on DynamoDB Local and the SQS emulator: a group's order
 * never depends on the shard its markers sit in, and every reader reads every shard, so changing
 * `pendingShards` on a live outbox loses and reorders nothing.
 */
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let layout: OutboxLayout;
let queue: FifoQueue;
const queues: FifoQueue[] = [];
const forever = () => 60_000;

beforeAll(() => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient(1);
});
beforeEach(async () => {
  layout = await createOutboxTable(dynamodb, 'shards');
  queue = await createFifoQueue(sqs);
  queues.push(queue);
});
afterAll(async () => {
  await deleteQueues(sqs, queues);
  sqs.destroy();
  dynamodb.destroy();
});

const producer = (pendingShards: number) => new Outbox({ client: dynamodb, ...layout, pendingShards });

let written = 0;
async function writeOne(outbox: Outbox, groupId: string): Promise<string> {
  const message = { type: 'OrderPlaced', groupId, key: `${groupId}-m${++written}`, payload: {} };
  const { keys } = await outbox.write({ messages: [message] });
  return keys[0] as string;
}

/** The first group id `prefix-<i>` whose shard among `shards` is `shard`, and not `avoid` among `avoidShards`. */
function groupIn(prefix: string, shards: number, shard: number, avoid?: { shards: number; shard: number }) {
  for (let i = 0; ; i++) {
    const groupId = `${prefix}-${i}`;
    if (pendingShardOf(groupId, shards) !== `${PENDING_PARTITION}#${shard}`) continue;
    if (avoid && pendingShardOf(groupId, avoid.shards) === `${PENDING_PARTITION}#${avoid.shard}`) continue;
    return groupId;
  }
}

/** The `outboxPending` of each pending marker of a group, in order. */
async function markerShards(groupId: string): Promise<string[]> {
  const { Items = [] } = await DynamoDBDocumentClient.from(dynamodb).send(
    new QueryCommand({
      TableName: layout.tableName,
      KeyConditionExpression: '#pk = :group',
      ExpressionAttributeNames: { '#pk': layout.partitionKey },
      ExpressionAttributeValues: { ':group': groupPartition(groupId) },
      ConsistentRead: true,
    }),
  );
  return Items.map((item) => String(item.outboxPending));
}

const sweepAll = () =>
  sweep({
    ...senderOptions(dynamodb, sqs, layout, queue.url),
    sweepAfterMs: 0,
    stuckAfterMs: 1,
    timeLeftMs: forever,
  });

describe('the shard of a marker', () => {
  it("is the group's: SHA-256 of the group id mod n, stable, and spread over the n shards", () => {
    expect(pendingShardOf('customer-1', 8)).toBe(pendingShardOf('customer-1', 8));
    expect(pendingShardOf('customer-1', 1)).toBe('PENDING#0');
    const used = new Set(Array.from({ length: 200 }, (_, i) => pendingShardOf(`g${i}`, 8)));
    expect([...used].sort()).toEqual(Array.from({ length: 8 }, (_, s) => `PENDING#${s}`));
  });

  it('refuses a pendingShards outside 1–32', () => {
    expect(() => producer(0)).toThrow(/pendingShards must be a whole number from 1 to 32/);
    expect(() => producer(33)).toThrow(/pendingShards must be a whole number from 1 to 32/);
  });
});

describe('order across shards', () => {
  it('a group written under n = 1, then 8, then 3 (and one legacy marker) keeps its order: its shards never decide it', async () => {
    // A group whose shard differs under 1 and under 8, so that its markers really sit in several shards.
    const groupId = groupIn('moved', 8, 5, { shards: 3, shard: 0 });
    const keys: string[] = [];
    for (const shards of [1, 1, 8, 8, 3, 3]) keys.push(await writeOne(producer(shards), groupId));
    // Its first marker as an older version wrote it: the unsharded PENDING.
    const [first] = await new OutboxItems({ client: dynamodb, layout }).pendingOfGroup(groupId, 1);
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: layout.tableName,
        Key: { pk: { S: groupPartition(groupId) }, sk: { S: String(first?.order) } },
        UpdateExpression: 'SET outboxPending = :legacy',
        ExpressionAttributeValues: { ':legacy': { S: PENDING_PARTITION } },
      }),
    );
    expect(new Set(await markerShards(groupId))).toEqual(
      new Set(['PENDING', 'PENDING#0', 'PENDING#5', pendingShardOf(groupId, 3)]),
    );

    const report = await sweepAll();

    expect(report.found).toBe(6);
    expect(report.groups.flatMap((group) => group.sent)).toEqual(keys);
    const received = await drainQueue(sqs, queue.url, keys.length);
    expect(received.map((message) => message.envelope.key)).toEqual(keys);
    expect(await markerShards(groupId)).toEqual([]);
  });

  it('growing and shrinking n while producers write and a sweeper runs loses nothing and reorders nothing', async () => {
    const groups = ['busy-a', 'busy-b', 'busy-c', 'busy-d'];
    const phases = [1, 8, 32, 2];
    const perPhase = 3;
    const writtenBy = new Map<string, string[]>(groups.map((groupId) => [groupId, []]));
    let writing = true;
    const writers = Promise.all(
      groups.map(async (groupId) => {
        for (const shards of phases) {
          const outbox = producer(shards);
          for (let i = 0; i < perPhase; i++) writtenBy.get(groupId)?.push(await writeOne(outbox, groupId));
        }
      }),
    ).finally(() => {
      writing = false;
    });
    const sent: string[] = [];
    while (writing) {
      const report = await sweepAll();
      sent.push(...report.groups.flatMap((group) => group.sent));
    }
    await writers;
    for (let runs = 0; runs < 5 && sent.length < groups.length * phases.length * perPhase; runs++) {
      const report = await sweepAll();
      sent.push(...report.groups.flatMap((group) => group.sent));
    }

    const total = groups.length * phases.length * perPhase;
    expect(new Set(sent).size).toBe(total);
    const received = await drainQueue(sqs, queue.url, total, 20_000);
    for (const groupId of groups) {
      const order = received
        .filter((message) => message.envelope.groupId === groupId)
        .map((m) => m.envelope.key);
      expect(order).toEqual(writtenBy.get(groupId));
    }
  });
});

describe('the sweeper reads every shard', () => {
  it('finds a stuck group in any shard, the unsharded one included, and counts and ages them all', async () => {
    const spots = [
      { shards: 32, shard: 31 },
      { shards: 32, shard: 0 },
      { shards: 8, shard: 4 },
      { shards: 1, shard: 0 },
    ];
    const keys: string[] = [];
    for (const [i, spot] of spots.entries()) {
      keys.push(await writeOne(producer(spot.shards), groupIn(`stuck${i}`, spot.shards, spot.shard)));
    }
    const legacyGroup = 'stuck-legacy';
    keys.push(await writeOne(producer(8), legacyGroup));
    const [legacy] = await new OutboxItems({ client: dynamodb, layout }).pendingOfGroup(legacyGroup, 1);
    await dynamodb.send(
      new UpdateItemCommand({
        TableName: layout.tableName,
        Key: { pk: { S: groupPartition(legacyGroup) }, sk: { S: String(legacy?.order) } },
        UpdateExpression: 'SET outboxPending = :legacy',
        ExpressionAttributeValues: { ':legacy': { S: PENDING_PARTITION } },
      }),
    );
    const items = new OutboxItems({ client: dynamodb, layout });
    expect(await items.countPendingBefore(Date.now() + 1_000)).toBe(5);
    expect((await items.oldestPendingBefore(Date.now() + 1_000))?.key).toBe(keys[0]);

    const report = await sweepAll();

    expect(report.found).toBe(5);
    expect(report.groups.flatMap((group) => group.sent).sort()).toEqual([...keys].sort());
    expect(await drainQueue(sqs, queue.url, keys.length)).toHaveLength(keys.length);
    expect(report).toMatchObject({ stuck: 0, oldestPendingAgeSeconds: 0 });
  });

  it("takes the shards' pages in turn: one shard's long backlog does not hide another shard's group", async () => {
    // A page of 5 markers per shard's turn; a group of 20 in one shard, written first (the oldest).
    const backlog = groupIn('backlog', 8, 2);
    const other = groupIn('other', 8, 6);
    const outbox = producer(8);
    for (let i = 0; i < 20; i++) await writeOne(outbox, backlog);
    await writeOne(outbox, other);
    const items = new OutboxItems({ client: dynamodb, layout, listingPage: 5 });

    // One round only: each shard's first page. A single index paged oldest first would show only the backlog.
    const firstRound = await items.pendingGroupsBefore(Date.now() + 1_000, () => false);
    expect(firstRound).toEqual({ groupIds: [backlog, other], markers: 6 });

    // Read through: every marker, each group once, by its oldest marker.
    const all = await items.pendingGroupsBefore(Date.now() + 1_000, () => true);
    expect(all).toEqual({ groupIds: [backlog, other], markers: 21 });
  });
});
