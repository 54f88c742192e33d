/**
 * The outbox's pending index under a per-key write budget, 1 shard to n (issue 33 item 3): producers
 * write single-message transactions as fast as the outbox lets them, over groups spread evenly over
 * the shards, while a sweeper drains them; all through `chaos/budget-proxy.ts` in front of DynamoDB
 * Local, which holds every partition-key value (of the table and of the index) to `unitsPerSecond`
 * write units over a sliding second, as AWS holds a partition to 1,000. Each message writes its
 * shard twice (its marker's put and delete), so a shard carries `unitsPerSecond / 2` messages a
 * second and n shards n times it. After the timed window the writers stop, the sweeper drains what
 * is left, and the queue is read: every committed message must be there once, each group in order.
 *
 * `npx tsx bench/outbox-shards.ts [--shards 1,2,5,10,20] [--units 20] [--seconds 15]` prints a
 * Markdown table. Not part of `npm run bench` yet: a run to 20 shards needs the machine to itself.
 */

import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBudgetProxy } from '../chaos/budget-proxy.js';
import { createOutboxTable } from '../chaos/outbox-world.js';
import { Outbox, OutboxWriteThrottledError } from '../lambdas/outbox/index.js';
import {
  OUTBOX_PENDING_INDEX,
  type OutboxLayout,
  PENDING_PARTITION,
  pendingShardOf,
} from '../lambdas/outbox/layout.js';
import { OutboxItems } from '../lambdas/outbox/outbox-items.js';
import { OUTBOX_SEND_RETRY } from '../lambdas/outbox/sender-environment.js';
import { sweep } from '../lambdas/outbox/sweeper.js';
import { sqsBatchSender } from '../lambdas/publisher/sqs-batch.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { type BenchEndpoints, sqsClient } from './clients.js';
import { createFifoQueue, deleteQueues } from './resources.js';

export interface ShardScalingOptions {
  endpoints: BenchEndpoints;
  shardCounts: readonly number[];
  /** Each partition-key value's write budget, a second. */
  unitsPerSecond: number;
  /** How long the producers write, per shard count. */
  seconds: number;
  /** Groups per shard, each written by its own loop: enough that the shard, not a group, is the limit. */
  groupsPerShard?: number;
  /** An unmeasured run of 1 shard first, this long: DynamoDB Local's JVM and the code warm up. */
  warmUpSeconds?: number;
}

export interface ShardRun {
  shards: number;
  /**
   * Messages committed in the timed window (a marker put each), and marked SENT in it (a marker
   * delete each: the index's writes in the window less the puts; markers under 1 KB, 1 unit each).
   */
  committed: number;
  sent: number;
  /**
   * Messages a second through the outbox: its index writes in the window, halved (a message is a put
   * and a delete). Counting both, not commits alone: a relay that falls behind leaves the deletes
   * for later, and commits alone would then run up to the whole budget for a while.
   */
  perSecond: number;
  /** What the shards' budget allows: unitsPerSecond ÷ 2 × shards. */
  ceiling: number;
  /** Writes the proxy refused (each tried again by the outbox or the writer). */
  throttled: number;
  /** Committed messages the queue never got; groups whose messages came out of order. */
  lost: number;
  outOfOrderGroups: number;
}

export async function runShardScaling(options: ShardScalingOptions): Promise<ShardRun[]> {
  if (options.warmUpSeconds) await runShards(1, { ...options, seconds: options.warmUpSeconds });
  const runs: ShardRun[] = [];
  for (const shards of options.shardCounts) runs.push(await runShards(shards, options));
  return runs;
}

async function runShards(shards: number, options: ShardScalingOptions): Promise<ShardRun> {
  const direct = new DynamoDBClient(localAwsConfig(options.endpoints.dynamodb));
  const sqs = sqsClient(options.endpoints);
  const layout: OutboxLayout = {
    tableName: `shards-${shards}-${randomUUID().slice(0, 8)}`,
    partitionKey: 'pk',
    sortKey: 'sk',
  };
  await createOutboxTable(direct, layout);
  const queue = await createFifoQueue(sqs, {});
  const proxy = await startBudgetProxy({
    upstream: options.endpoints.dynamodb,
    unitsPerSecond: options.unitsPerSecond,
  });
  const client = new DynamoDBClient({ ...localAwsConfig(proxy.endpoint), maxAttempts: 10 });
  try {
    const groups = evenGroups(shards, options.groupsPerShard ?? 8);
    const committedBy = new Map<string, string[]>(groups.map((groupId) => [groupId, []]));
    const outbox = new Outbox({ client, ...layout, pendingShards: shards });
    const deadline = Date.now() + options.seconds * 1000;
    let committed = 0;
    const writers = groups.map(async (groupId) => {
      for (let n = 0; Date.now() < deadline; ) {
        const key = `${groupId}-${n}`;
        try {
          await outbox.write({ messages: [{ type: 'Scaled', groupId, key, payload: { n } }] });
          committedBy.get(groupId)?.push(key);
          if (Date.now() <= deadline) committed++;
          n++;
        } catch (error) {
          if (!(error instanceof OutboxWriteThrottledError)) throw error; // nothing written: the same again
        }
      }
    });
    const items = new OutboxItems({ client, layout });
    const sender = {
      items,
      sendBatch: sqsBatchSender(sqs, queue.url),
      maxBatchBytes: 262_144,
      retry: OUTBOX_SEND_RETRY,
      claimMs: () => 30_000,
    };
    const sweepOnce = () =>
      sweep({ ...sender, sweepAfterMs: 0, stuckAfterMs: 60_000, timeLeftMs: () => 30_000 });
    let writing = true;
    const all = Promise.all(writers).finally(() => {
      writing = false;
    });
    // The index's writes in the window, read off the proxy at the deadline: markers put and deleted.
    let indexUnits = 0;
    const atDeadline = setTimeout(
      () => {
        indexUnits = proxy
          .stats()
          .keys.filter((key) => key.table === layout.tableName && key.index === OUTBOX_PENDING_INDEX)
          .reduce((sum, key) => sum + key.units, 0);
      },
      Math.max(0, deadline - Date.now()),
    );
    while (writing) await sweepOnce();
    clearTimeout(atDeadline);
    await all;
    for (let round = 0; round < 20 && (await items.countPendingBefore(Date.now() + 60_000)) > 0; round++) {
      await sweepOnce();
    }
    const received = await receiveAll(sqs, queue.url);
    const expected = [...committedBy.values()].flat();
    const got = new Set(received.map((message) => message.key));
    const outOfOrderGroups = groups.filter((groupId) => {
      const order = received.filter((message) => message.groupId === groupId).map((message) => message.key);
      const unique = order.filter((key, i) => order.indexOf(key) === i);
      return JSON.stringify(unique) !== JSON.stringify(committedBy.get(groupId));
    }).length;
    return {
      shards,
      committed,
      sent: indexUnits - committed,
      perSecond: indexUnits / 2 / options.seconds,
      ceiling: (shards * options.unitsPerSecond) / 2,
      throttled: proxy.stats().throttled,
      lost: expected.filter((key) => !got.has(key)).length,
      outOfOrderGroups,
    };
  } finally {
    client.destroy();
    await proxy.close();
    await deleteQueues(sqs, [queue]);
    sqs.destroy();
    direct.destroy();
  }
}

/** `perShard` group ids in each of `shards` shards: an even spread, so that every shard is as busy. */
function evenGroups(shards: number, perShard: number): string[] {
  const counts = new Map<string, number>();
  const groups: string[] = [];
  for (let i = 0; groups.length < shards * perShard; i++) {
    const groupId = `g${shards}-${i}`;
    const shard = pendingShardOf(groupId, shards);
    if ((counts.get(shard) ?? 0) >= perShard) continue;
    counts.set(shard, (counts.get(shard) ?? 0) + 1);
    groups.push(groupId);
  }
  return groups;
}

/** Receives and deletes until the queue is empty: a FIFO queue hands out a group's next once its head is gone. */
async function receiveAll(sqs: SQSClient, queueUrl: string): Promise<{ key: string; groupId: string }[]> {
  const received: { key: string; groupId: string }[] = [];
  for (let empty = 0; empty < 2; ) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    if (Messages.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    for (const message of Messages) {
      const envelope = JSON.parse(String(message.Body)) as { key: string; groupId: string };
      received.push({ key: envelope.key, groupId: envelope.groupId });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
      }),
    );
  }
  return received;
}

export function shardTable(runs: readonly ShardRun[]): string {
  const [one] = runs;
  const perShard = one ? one.perSecond / one.shards : 0;
  return [
    '| shards | msg/s (index writes ÷ 2) | ceiling | × one shard | linear within | committed | sent | throttled writes | lost | groups out of order |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...runs.map((run) => {
      const times = perShard > 0 ? run.perSecond / perShard : 0;
      const deviation = run.shards > 0 ? Math.abs(times / run.shards - 1) : 0;
      return `| ${run.shards} | ${run.perSecond.toFixed(1)} | ${run.ceiling} | ${times.toFixed(2)} | ${(deviation * 100).toFixed(0)} % | ${run.committed} | ${run.sent} | ${run.throttled} | ${run.lost} | ${run.outOfOrderGroups} |`;
    }),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      shards: { type: 'string', default: '1,2,5,10,20' },
      units: { type: 'string', default: '20' },
      seconds: { type: 'string', default: '15' },
    },
  });
  const { startDynamoDbLocal } = await import('../sandbox/dynamodb-local.js');
  const { startSqsEmulator } = await import('../sandbox/sqs-emulator.js');
  const [dynamodb, sqsEmulator] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
  try {
    const runs = await runShardScaling({
      endpoints: { dynamodb: dynamodb.endpoint, sqs: sqsEmulator.endpoint },
      shardCounts: String(values.shards).split(',').map(Number),
      unitsPerSecond: Number(values.units),
      seconds: Number(values.seconds),
      warmUpSeconds: 5,
    });
    console.log(shardTable(runs));
    console.log(
      `\n${PENDING_PARTITION}#s shards, ${values.units} write units a second per key value, ${values.seconds} s each.`,
    );
  } finally {
    await Promise.all([dynamodb.stop(), sqsEmulator.stop()]);
  }
}
