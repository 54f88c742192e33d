import { type DynamoDBClient, ProvisionedThroughputExceededException } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dynamoDbClientVia } from '../../chaos/sdk-clients.js';
import { type BudgetProxy, startBudgetProxy } from '../../harness/budget-proxy.js';
import { drainGroup } from '../../lambdas/outbox/drain-group.js';
import { Outbox, OutboxWriteThrottledError } from '../../lambdas/outbox/index.js';
import {
  OUTBOX_PENDING_INDEX,
  type OutboxLayout,
  PENDING_PARTITION,
  pendingShardOf,
} from '../../lambdas/outbox/layout.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createOutboxTable, senderOptions } from '../support/outbox.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';

/**
 * The outbox's ceiling (docs/capacity.md, issue 33), shown on DynamoDB Local behind the budget
 * proxy: every pending marker carries the index key `PENDING`, one partition-key value of the index,
 * so whatever the number of groups, the index's write budget caps the outbox. AWS's is 1,000 units a
 * second; here 10, on a clock the test moves by hand.
 */
const BUDGET = 10;

let direct: DynamoDBClient;
let sqs: SQSClient;
const queues: FifoQueue[] = [];
let layout: OutboxLayout;
let queue: FifoQueue;
let proxy: BudgetProxy;
let client: DynamoDBClient;
/** Whether `proxy` and `client` are this test's, to close. */
let running = false;
let clock = 5_000_000;

beforeAll(() => {
  direct = localDynamoClient();
  sqs = localSqsClient(1);
});
beforeEach(async () => {
  layout = await createOutboxTable(direct, 'ceiling');
  queue = await createFifoQueue(sqs);
  queues.push(queue);
  // Throttled transactions answered with an exception, not DynamoDB's cancellation: the outbox retries
  // a cancellation for a few seconds of real time, and these tests count what fits in a second that
  // the test moves by hand. The cancellation has its own tests below.
  await startProxy('exception');
});

/** The budget proxy, on the test's clock, and a client through it. */
async function startProxy(transactions: 'canceled' | 'exception', now = () => clock) {
  if (running) await stopProxy();
  proxy = await startBudgetProxy({
    upstream: emulatorEndpoint('dynamodbEndpoint'),
    unitsPerSecond: BUDGET,
    now,
    transactions,
  });
  // One attempt: each throttle shows, instead of the SDK's backoff waiting out a second that never passes.
  client = dynamoDbClientVia(proxy, 1);
  running = true;
}

async function stopProxy() {
  running = false;
  client.destroy();
  await proxy.close();
}
afterEach(stopProxy);
afterAll(async () => {
  await deleteQueues(sqs, queues);
  sqs.destroy();
  direct.destroy();
});

let written = 0;
/** One single-message write to each group, one after another: the keys committed, and the errors of the others. */
async function writeOnePerGroup(outbox: Outbox, groups: readonly string[]) {
  const committed: string[] = [];
  const refused: unknown[] = [];
  for (const groupId of groups) {
    const message = { type: 'OrderPlaced', groupId, key: `${groupId}-${++written}`, payload: {} };
    await outbox.write({ messages: [message] }).then(
      ({ keys }) => committed.push(...keys),
      (error: unknown) => refused.push(error),
    );
  }
  return { committed, refused };
}

/**
 * One single-message write to each group, all at once: they reach the budget together, however
 * slowly this machine runs (a key's budget refills as real time passes).
 */
async function writeOnePerGroupAtOnce(outbox: Outbox, groups: readonly string[]) {
  const results = await Promise.allSettled(
    groups.map((groupId) =>
      outbox.write({
        messages: [{ type: 'OrderPlaced', groupId, key: `${groupId}-${++written}`, payload: {} }],
      }),
    ),
  );
  return {
    committed: results.flatMap((result) => (result.status === 'fulfilled' ? result.value.keys : [])),
    refused: results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : [])),
  };
}

/**
 * Moves the test's clock a second on once the proxy has throttled a request: the budget refills
 * while the outbox sends the throttled transactions again, whatever this machine's speed.
 */
async function refillOnceThrottled(): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (proxy.stats().throttled === 0) {
    if (Date.now() > deadline) throw new Error('nothing was throttled within 30 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  clock += 1_000;
}

const groupsOf = (count: number, prefix = 'g') =>
  Array.from({ length: count }, (_, i) => `${prefix}${i}-${Math.random().toString(36).slice(2, 8)}`);

describe('the pending index on one shard: one key, one budget (the outbox before issue 33)', () => {
  it('commits at most the budget of markers a second, however many groups write', async () => {
    const outbox = new Outbox({ client, ...layout, pendingShards: 1 });

    const { committed, refused } = await writeOnePerGroup(outbox, groupsOf(15));

    // 15 groups, 15 partitions of the table, 1 index key: 10 markers a second.
    expect(committed).toHaveLength(BUDGET);
    expect(refused).toHaveLength(5);
    expect(proxy.unitsOn(layout.tableName, `${PENDING_PARTITION}#0`, OUTBOX_PENDING_INDEX)).toBe(BUDGET);
    expect(refused[0]).toBeInstanceOf(ProvisionedThroughputExceededException);
  });

  it("the relay's SENT marks spend the same budget: two index writes per message, so half the budget in messages", async () => {
    const outbox = new Outbox({ client, ...layout, pendingShards: 1 });
    const groups = groupsOf(BUDGET, 'r');
    expect((await writeOnePerGroup(outbox, groups)).committed).toHaveLength(BUDGET);
    clock += 1_000;

    // The next second: the relay drains the 10 groups, deleting 10 markers (10 index writes)...
    const options = senderOptions(client, sqs, layout, queue.url);
    const reports = await Promise.all(
      groups.map((groupId) =>
        drainGroup(groupId, { ...options, owner: 'relay:1', sentBy: 'relay', timeLeftMs: () => 60_000 }),
      ),
    );
    expect(reports.flatMap((report) => report.sent)).toHaveLength(BUDGET);
    expect(await drainQueue(sqs, queue.url, BUDGET)).toHaveLength(BUDGET);
    // ...and a producer writing in that second finds the index key spent.
    const { committed } = await writeOnePerGroup(outbox, groupsOf(3, 'late'));
    expect(committed).toHaveLength(0);
    expect(proxy.unitsOn(layout.tableName, `${PENDING_PARTITION}#0`, OUTBOX_PENDING_INDEX)).toBe(2 * BUDGET);
  });
});

describe('the pending index on n shards: n budgets', () => {
  it.each([4, 8])(
    "%i shards carry each its budget: the producers are throttled only past their shard's",
    async (shards) => {
      const outbox = new Outbox({ client, ...layout, pendingShards: shards });
      // Named, not random, groups (each test has its own table): how they spread over the shards is fixed.
      const groups = Array.from({ length: 20 * shards }, (_, i) => `spread-${shards}-${i}`);
      const perShard = new Map<string, number>();
      for (const groupId of groups) {
        const shard = pendingShardOf(groupId, shards);
        perShard.set(shard, (perShard.get(shard) ?? 0) + 1);
      }
      // Each shard has more groups writing than its budget takes (a property of these names).
      expect([...perShard.values()].every((count) => count > BUDGET)).toBe(true);
      expect(perShard.size).toBe(shards);

      const { committed, refused } = await writeOnePerGroup(outbox, groups);

      // Every shard took its full budget: n × the budget, throttled past it.
      expect(committed).toHaveLength(shards * BUDGET);
      expect(refused).toHaveLength(groups.length - shards * BUDGET);
      for (const shard of perShard.keys()) {
        expect(proxy.unitsOn(layout.tableName, shard, OUTBOX_PENDING_INDEX)).toBe(BUDGET);
      }
    },
  );
});

describe('a write throttled as DynamoDB throttles a transaction: canceled, ThrottlingError', () => {
  it('is sent again for a few seconds, then refused with a retryable OutboxWriteThrottledError, nothing written', async () => {
    await startProxy('canceled');
    const outbox = new Outbox({ client, ...layout, pendingShards: 1 });
    expect((await writeOnePerGroup(outbox, groupsOf(BUDGET))).committed).toHaveLength(BUDGET);

    // The test's clock stands still: the shard stays full through every retry.
    const started = Date.now();
    const { committed, refused } = await writeOnePerGroup(outbox, groupsOf(1, 'full'));

    expect(committed).toHaveLength(0);
    expect(refused[0]).toBeInstanceOf(OutboxWriteThrottledError);
    expect(refused[0]).toMatchObject({ retryable: true, cause: { name: 'TransactionCanceledException' } });
    expect(proxy.stats().throttled).toBe(6);
    expect(Date.now() - started).toBeGreaterThanOrEqual(750); // 6 tries, 5 waits of at least 50, 100, 200, 400 ms…
    expect(proxy.unitsOn(layout.tableName, `${PENDING_PARTITION}#0`, OUTBOX_PENDING_INDEX)).toBe(BUDGET);
  });

  it('commits once the budget has refilled: a burst is absorbed, not refused (the clock moved once throttled)', async () => {
    await startProxy('canceled');
    const outbox = new Outbox({ client, ...layout, pendingShards: 1 });
    const groups = groupsOf(BUDGET + 5, 'burst');

    const [{ committed, refused }] = await Promise.all([
      writeOnePerGroupAtOnce(outbox, groups),
      refillOnceThrottled(),
    ]);

    expect(refused).toEqual([]);
    expect(committed).toHaveLength(groups.length);
    expect(proxy.stats().throttled).toBeGreaterThan(0);
  });

  it("the relay's SENT marks are sent again too: a busy shard delays them, and they are written once", async () => {
    await startProxy('canceled');
    const outbox = new Outbox({ client, ...layout, pendingShards: 1 });
    const groups = groupsOf(BUDGET, 'marks');
    expect((await writeOnePerGroupAtOnce(outbox, groups)).committed).toHaveLength(BUDGET);

    // The shard's budget is spent: the 10 marker deletes must wait for it to refill.
    const options = senderOptions(client, sqs, layout, queue.url);
    const [reports] = await Promise.all([
      Promise.all(
        groups.map((groupId) =>
          drainGroup(groupId, { ...options, owner: 'relay:2', sentBy: 'relay', timeLeftMs: () => 60_000 }),
        ),
      ),
      refillOnceThrottled(),
    ]);

    expect(reports.flatMap((report) => report.markErrors)).toEqual([]);
    expect(reports.flatMap((report) => report.sentUnmarked)).toEqual([]);
    expect(reports.flatMap((report) => report.sent)).toHaveLength(BUDGET);
    expect(await drainQueue(sqs, queue.url, BUDGET)).toHaveLength(BUDGET);
    expect(proxy.stats().throttled).toBeGreaterThan(0);
  });
});
