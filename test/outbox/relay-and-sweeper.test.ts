import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sqsClientVia } from '../../chaos/sdk-clients.js';
import { startFaultProxy } from '../../harness/fault-proxy.js';
import type { FaultPlan } from '../../harness/faults.js';
import { drainGroup } from '../../lambdas/outbox/drain-group.js';
import { Outbox, type OutboxMessage } from '../../lambdas/outbox/index.js';
import { type OutboxLayout, PENDING_SHARD_VALUES } from '../../lambdas/outbox/layout.js';
import { OutboxItems } from '../../lambdas/outbox/outbox-items.js';
import { relayBatch } from '../../lambdas/outbox/relay.js';
import { sweep } from '../../lambdas/outbox/sweeper.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createOutboxTable, markerInserts, outboxItemOf, senderOptions } from '../support/outbox.js';
import { failRequests, loseAnswers } from '../support/sdk-middleware.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';
import { injectCallFaults, injectEntryFaults, PERMANENT, TRANSIENT } from '../support/sqs-faults.js';

let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let layout: OutboxLayout;
let queue: FifoQueue;
const queues: FifoQueue[] = [];
const forever = () => 60_000;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient(1);
});
// Each test its own table and queue: a sweeper takes whatever is pending in its table.
beforeEach(async () => {
  layout = await createOutboxTable(dynamodb);
  queue = await createFifoQueue(sqs);
  queues.push(queue);
});
afterAll(async () => {
  await deleteQueues(sqs, queues);
  sqs.destroy();
  dynamodb.destroy();
});

let written = 0;
/** Writes `count` messages of group `groupId` through the outbox, each in its own transaction, in order. */
async function writeMessages(
  groupId: string,
  count: number,
  outbox = new Outbox({ client: dynamodb, ...layout }),
) {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const message: OutboxMessage = {
      type: 'OrderPlaced',
      groupId,
      key: `${groupId}-m${i}-${++written}`,
      payload: { i },
    };
    keys.push(...(await outbox.write({ messages: [message] })).keys);
  }
  return keys;
}

const markerInsertsOf = (groupId: string) => markerInserts(dynamodb, layout, [groupId]);
const itemOf = (key: string) => outboxItemOf(dynamodb, layout, key);

const keysOf = (received: { envelope: { key: string } }[]) => received.map((message) => message.envelope.key);

describe('the relay', () => {
  it('sends each group in order, marks every message SENT and removes its marker', async () => {
    const first = await writeMessages('relay-a', 4);
    const second = await writeMessages('relay-b', 3);
    const event = await markerInsertsOf('relay-a');
    event.Records.push(...(await markerInsertsOf('relay-b')).Records);

    const response = await relayBatch(event, {
      ...senderOptions(dynamodb, sqs, layout, queue.url),
      timeLeftMs: forever,
    });

    expect(response.batchItemFailures).toEqual([]);
    const received = await drainQueue(sqs, queue.url, 7);
    const ofGroup = (group: string) =>
      keysOf(received.filter((message) => message.envelope.groupId === group));
    expect(ofGroup('relay-a')).toEqual(first);
    expect(ofGroup('relay-b')).toEqual(second);
    for (const key of [...first, ...second]) {
      expect(await itemOf(key)).toMatchObject({ status: 'SENT', messageId: expect.any(String), attempts: 1 });
    }
    expect((await markerInsertsOf('relay-a')).Records).toHaveLength(0);
  });

  it('sends an earlier pending message of the group first, although only a later one is in its batch', async () => {
    const [earlier, later] = await writeMessages('relay-head', 2);
    const event = await markerInsertsOf('relay-head');
    event.Records = event.Records.slice(1); // the earlier marker went to another shard

    await relayBatch(event, { ...senderOptions(dynamodb, sqs, layout, queue.url), timeLeftMs: forever });

    expect(keysOf(await drainQueue(sqs, queue.url, 2))).toEqual([earlier, later]);
  });

  it('sends nothing while an earlier message of the group is held by another invocation', async () => {
    const [held, later] = await writeMessages('relay-held', 2);
    const items = new OutboxItems({ client: dynamodb, layout });
    expect((await items.claim(held as string, 'sweeper:other', 30_000)).claimed).toBe(true);

    const response = await relayBatch(await markerInsertsOf('relay-held'), {
      ...senderOptions(dynamodb, sqs, layout, queue.url),
      timeLeftMs: forever,
    });

    expect(response.batchItemFailures).toEqual([]); // not a failure: the holder sends it, the rest follows
    expect(await drainQueue(sqs, queue.url, 0)).toEqual([]);
    expect(await itemOf(later as string)).toMatchObject({ status: 'PENDING', claimOwner: undefined });
  });

  it('reports the group at its first record when SQS refuses the sends, and leaves them pending with the error', async () => {
    const keys = await writeMessages('relay-down', 3);
    const failing = localSqsClient(1);
    injectCallFaults(failing, () => ({
      when: 'before-sending',
      error: Object.assign(new Error('SQS is down'), { name: 'ServiceUnavailable', $fault: 'server' }),
    }));
    const event = await markerInsertsOf('relay-down');

    const response = await relayBatch(event, {
      ...senderOptions(dynamodb, failing, layout, queue.url),
      timeLeftMs: forever,
    });

    expect(response.batchItemFailures).toEqual([
      { itemIdentifier: event.Records[0]?.dynamodb?.SequenceNumber },
    ]);
    for (const [index, key] of keys.entries()) {
      const item = await itemOf(key);
      expect(item).toMatchObject({ status: 'PENDING', claimOwner: undefined, attempts: 1 });
      // The first failed; the rest of its group was not tried after it.
      expect(item.lastError).toContain(index === 0 ? 'SQS is down' : 'blocked: not sent');
    }
    failing.destroy();
  });
});

describe('SENT marks: one transaction for a run', () => {
  it('drains a group of five with one listing, its claims, five sends of one and one transaction of marks', async () => {
    const keys = await writeMessages('one-mark', 5);
    const client = localDynamoClient();
    const requests = countRequests(client);
    const sender = localSqsClient(1);
    const sends = countRequests(sender);
    const report = await drainGroup('one-mark', {
      ...senderOptions(client, sender, layout, queue.url),
      owner: 'relay:one-mark',
      sentBy: 'relay',
      timeLeftMs: forever,
    });
    expect(report.sent).toEqual(keys);
    // Two listings (the last finds the group empty), five claims, and one transaction of marks.
    expect(requests.counts).toEqual({ Query: 2, UpdateItem: 5, TransactWriteItems: 1 });
    // One message of the group per call (DESIGN §9): no answer can put a later one before an earlier.
    expect(sends.counts).toEqual({ SendMessageBatch: 5 });
    for (const key of keys)
      expect(await itemOf(key)).toMatchObject({ status: 'SENT', messageId: expect.any(String) });
    client.destroy();
    sender.destroy();
  });

  it('marks the run before a message whose claim was lost, and gives back the rest for its new owner', async () => {
    const keys = await writeMessages('lost-claim', 5);
    const lostKey = keys[2] as string;
    const client = localDynamoClient();
    // Another sender whose clock is past this claim's expiry takes the third message, between the
    // send and the marks.
    const other = new OutboxItems({ client: dynamodb, layout, now: () => Date.now() + 10 * 60_000 });
    let taken = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!taken && context.commandName === 'TransactWriteItemsCommand') {
          taken = (await other.claim(lostKey, 'sweeper:other', 30_000)).claimed;
        }
        return next(args);
      },
      { step: 'initialize', name: 'stealClaim' },
    );
    const options = {
      ...senderOptions(client, sqs, layout, queue.url),
      sentBy: 'relay',
      timeLeftMs: forever,
    };
    const report = await drainGroup('lost-claim', { ...options, owner: 'relay:first' });
    expect(taken).toBe(true);
    expect(report).toMatchObject({ sent: keys.slice(0, 2), sentUnmarked: keys.slice(2), markErrors: [] });
    expect(await itemOf(keys[1] as string)).toMatchObject({ status: 'SENT' });
    expect(await itemOf(lostKey)).toMatchObject({ status: 'PENDING', claimOwner: 'sweeper:other' });
    // The fourth and fifth were given back: free for anyone.
    expect((await itemOf(keys[3] as string)).claimOwner).toBeUndefined();
    expect(keysOf(await drainQueue(sqs, queue.url, 5))).toEqual(keys);

    // The new owner of the third sends from there, in order; SQS drops the copies it already has.
    const second = await drainGroup('lost-claim', {
      ...senderOptions(dynamodb, sqs, layout, queue.url, { now: () => Date.now() + 10 * 60_000 }),
      owner: 'sweeper:other',
      sentBy: 'sweeper',
      timeLeftMs: forever,
    });
    expect(second.sent).toEqual(keys.slice(2));
    expect(await drainQueue(sqs, queue.url, 0)).toEqual([]);
    for (const key of keys) expect(await itemOf(key)).toMatchObject({ status: 'SENT' });
    client.destroy();
  });
});

describe('a relay that dies after sending and before marking', () => {
  it('is made good by the sweeper once its claim expires: one copy on the queue, the item SENT', async () => {
    const [key] = await writeMessages('dies', 1);
    const dying = localDynamoClient();
    // The container dies inside the SENT mark: the request never comes back.
    let died = false;
    dying.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
        died = true;
        return new Promise(() => undefined) as never;
      },
      { step: 'initialize', name: 'dieBeforeMarking' },
    );
    const claimMs = 5_000;
    void relayBatch(await markerInsertsOf('dies'), {
      ...senderOptions(dying, sqs, layout, queue.url, { claimMs }),
      timeLeftMs: forever,
    });
    await expect.poll(() => died, { timeout: 60_000 }).toBe(true);
    expect(await itemOf(key as string)).toMatchObject({
      status: 'PENDING',
      claimOwner: expect.stringMatching(/^relay:/),
    });

    // A sweeper before the claim expires leaves it alone; one after it (clock moved on) sends it again.
    const early = await sweep({
      ...senderOptions(dynamodb, sqs, layout, queue.url),
      sweepAfterMs: 0,
      stuckAfterMs: 60_000,
      timeLeftMs: forever,
    });
    expect(early.groups.find((group) => group.groupId === 'dies')?.sent ?? []).toEqual([]);
    const later = () => Date.now() + claimMs + 1_000;
    const report = await sweep({
      ...senderOptions(dynamodb, sqs, layout, queue.url, { now: later }),
      sweepAfterMs: 0,
      stuckAfterMs: 60_000,
      timeLeftMs: forever,
    });
    expect(report.groups.find((group) => group.groupId === 'dies')?.sent).toEqual([key]);
    // SQS dropped the second send (same deduplication id): the consumer sees one message.
    expect(keysOf(await drainQueue(sqs, queue.url, 1))).toEqual([key]);
    expect(await itemOf(key as string)).toMatchObject({ status: 'SENT', attempts: 1 });
    dying.destroy();
  });
});

describe('the sweeper', () => {
  it('delivers what SQS refused once SQS is back, in group order', async () => {
    const keys = await writeMessages('sweep-recover', 4);
    let sqsDown = true;
    const flaky = localSqsClient(1);
    injectCallFaults(flaky, () =>
      sqsDown
        ? {
            when: 'before-sending',
            error: Object.assign(new Error('SQS is down'), { name: 'ServiceUnavailable', $fault: 'server' }),
          }
        : undefined,
    );
    const run = () =>
      sweep({
        ...senderOptions(dynamodb, flaky, layout, queue.url),
        sweepAfterMs: 0,
        stuckAfterMs: 60_000,
        timeLeftMs: forever,
      });

    const during = await run();
    expect(during.groups.find((group) => group.groupId === 'sweep-recover')?.notSent).toEqual(keys);
    sqsDown = false;
    const after = await run();
    expect(after.groups.find((group) => group.groupId === 'sweep-recover')?.sent).toEqual(keys);
    expect(keysOf(await drainQueue(sqs, queue.url, 4))).toEqual(keys);
    flaky.destroy();
  });

  it('four sweepers at once split the work and send every message once', async () => {
    const groups = ['four-a', 'four-b', 'four-c', 'four-d', 'four-e', 'four-f'];
    const written = new Map<string, string[]>();
    for (const group of groups) written.set(group, await writeMessages(group, 5));
    const counting = localSqsClient(1);
    const sends = injectEntryFaults(counting, () => undefined);

    const reports = await Promise.all(
      Array.from({ length: 4 }, () =>
        sweep({
          ...senderOptions(dynamodb, counting, layout, queue.url),
          sweepAfterMs: 0,
          stuckAfterMs: 60_000,
          timeLeftMs: forever,
        }),
      ),
    );

    const all = [...written.values()].flat();
    const sentByOne = reports.flatMap((report) => report.groups.flatMap((group) => group.sent));
    expect(sentByOne.sort()).toEqual([...all].sort());
    // Never sent twice from the outbox's side: each deduplication id went to SQS once.
    const ours = sends.sentKeys.filter((key) => all.includes(key));
    expect(ours.sort()).toEqual([...all].sort());
    const received = await drainQueue(sqs, queue.url, all.length);
    for (const group of groups) {
      expect(keysOf(received.filter((message) => message.envelope.groupId === group))).toEqual(
        written.get(group),
      );
    }
    counting.destroy();
  });

  it('counts a message that cannot be sent as stuck, and holds back the rest of its group only', async () => {
    const [poison, after] = await writeMessages('stuck', 2);
    const [other] = await writeMessages('not-stuck', 1);
    const refusing = localSqsClient(1);
    injectEntryFaults(refusing, (entry) =>
      entry.key === poison ? { when: 'before-sending', ...PERMANENT } : undefined,
    );
    const report = await sweep({
      ...senderOptions(dynamodb, refusing, layout, queue.url, { now: () => Date.now() + 10_000 }),
      sweepAfterMs: 0,
      stuckAfterMs: 5_000,
      timeLeftMs: forever,
    });

    expect(report.stuck).toBeGreaterThanOrEqual(2);
    expect(report.oldestPendingAgeSeconds).toBeGreaterThanOrEqual(10);
    expect(keysOf(await drainQueue(sqs, queue.url, 1))).toEqual([other]);
    expect(await itemOf(poison as string)).toMatchObject({
      status: 'PENDING',
      lastError: expect.stringContaining('InvalidMessageContents'),
    });
    expect(await itemOf(after as string)).toMatchObject({ status: 'PENDING' });
    refusing.destroy();
  });

  describe('sweeps and counts a message the relay gave up on within sweepAfter of its commit (issue 40)', () => {
    const committedAt = Date.parse('2026-11-22T12:00:00.000Z');
    const sweepAfterMs = 10;
    const stuckAfterMs = 20;
    /** A sweep at `at`, every send refused (what the relay gave up on stays so). */
    const sweepRefused = async (at: number, maxGroupsPerRun?: number) => {
      const refusing = localSqsClient(1);
      injectEntryFaults(refusing, () => ({ when: 'before-sending', ...PERMANENT }));
      const report = await sweep({
        ...senderOptions(dynamodb, refusing, layout, queue.url, { now: () => at }),
        sweepAfterMs,
        stuckAfterMs,
        maxGroupsPerRun,
        timeLeftMs: forever,
      });
      refusing.destroy();
      return report;
    };

    it('whatever the rate: one instance writing 60 messages within one millisecond (60 ms of order)', async () => {
      const outbox = new Outbox({ client: dynamodb, ...layout, now: () => new Date(committedAt) });
      for (let i = 0; i < 60; i++) {
        await outbox.write({ messages: [{ type: 'T', groupId: `busy-${i}`, key: `busy-${i}`, payload: i }] });
      }

      // Each run lists all 60 and drains one of them: the listing is what is asserted, not the sends.
      expect((await sweepRefused(committedAt + sweepAfterMs + 1, 1)).found).toBe(60);
      expect((await sweepRefused(committedAt + stuckAfterMs + 1, 1)).stuck).toBe(60);
    });

    it('whatever another producer’s clock: B written after A, whose clock is 10 minutes ahead', async () => {
      const message = (key: string) => ({ type: 'T', groupId: 'lead', key, payload: key });
      const ahead = new Outbox({ client: dynamodb, ...layout, now: () => new Date(committedAt + 600_000) });
      await ahead.write({ messages: [message('a-ahead')] });
      await new Outbox({ client: dynamodb, ...layout, now: () => new Date(committedAt) }).write({
        messages: [message('b-on-time')],
      });

      const swept = await sweepRefused(committedAt + sweepAfterMs + 1);
      expect(swept.groups.map((group) => group.groupId)).toEqual(['lead']);
      expect(swept.groups[0]?.notSent).toEqual(['a-ahead', 'b-on-time']); // in the group's order: A first
      expect((await sweepRefused(committedAt + stuckAfterMs + 1)).stuck).toBe(1); // B, by its own clock
      const pending = await new OutboxItems({ client: dynamodb, layout }).pendingOfGroup('lead', 10);
      expect(pending.map((marker) => marker.key)).toEqual(['a-ahead', 'b-on-time']);
    });
  });

  it('finds a group behind more than 1,000 old markers of a group whose sends keep failing', async () => {
    // Group A's 1,008 markers are all older than B's one: a sweeper that looked at the 1,000 oldest
    // markers only ever found A (issue 26, finding 5).
    const outbox = new Outbox({ client: dynamodb, ...layout });
    for (let write = 0; write < 21; write++) {
      const messages = Array.from({ length: 48 }, (_, i) => ({
        type: 'OrderPlaced',
        groupId: 'starving-a',
        key: `starving-a-${write}-${i}`,
        payload: { write, i },
      }));
      await outbox.write({ messages });
    }
    const [behind] = await writeMessages('starving-b', 1, outbox);
    const refusing = localSqsClient(1);
    injectEntryFaults(refusing, (entry) =>
      entry.groupId === 'starving-a' ? { when: 'before-sending', ...PERMANENT } : undefined,
    );
    const report = await sweep({
      ...senderOptions(dynamodb, refusing, layout, queue.url),
      sweepAfterMs: 0,
      stuckAfterMs: 60_000,
      timeLeftMs: forever,
    });

    expect(report.groups.find((group) => group.groupId === 'starving-b')?.sent).toEqual([behind]);
    expect(report.found).toBe(1_009);
    expect(keysOf(await drainQueue(sqs, queue.url, 1))).toEqual([behind]);
    refusing.destroy();
  });

  it('drains at most maxGroupsPerRun groups a run, and across runs reaches the group behind a failing one', async () => {
    await writeMessages('turn-a', 2);
    const [behind] = await writeMessages('turn-b', 1);
    const refusing = localSqsClient(1);
    injectEntryFaults(refusing, (entry) =>
      entry.groupId === 'turn-a' ? { when: 'before-sending', ...PERMANENT } : undefined,
    );
    const run = () =>
      sweep({
        ...senderOptions(dynamodb, refusing, layout, queue.url),
        sweepAfterMs: 0,
        stuckAfterMs: 60_000,
        timeLeftMs: forever,
        maxGroupsPerRun: 1,
      });
    // Each run starts at a random group of the two: B waits 1 run in 2 on average; 40 runs bound it.
    let runs = 0;
    let sent: string[] = [];
    while (sent.length === 0 && runs < 40) {
      const report = await run();
      runs++;
      expect(report.groups).toHaveLength(1);
      sent = report.groups.find((group) => group.groupId === 'turn-b')?.sent ?? [];
    }
    expect(sent).toEqual([behind]);
    expect(keysOf(await drainQueue(sqs, queue.url, 1))).toEqual([behind]);
    refusing.destroy();
  });

  it('makes two queries of each shard when nothing is pending: the listing and the oldest age', async () => {
    const empty = await createOutboxTable(dynamodb, 'empty');
    const client = localDynamoClient();
    const requests: string[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        requests.push(String(context.commandName));
        return next(args);
      },
      { step: 'initialize', name: 'countRequests' },
    );
    const report = await sweep({
      ...senderOptions(client, sqs, empty, queue.url),
      sweepAfterMs: 0,
      stuckAfterMs: 1,
      timeLeftMs: forever,
    });
    expect(report).toMatchObject({ found: 0, stuck: 0, oldestPendingAgeSeconds: 0 });
    // The listing, then the oldest age for the metrics, each of every shard (DESIGN §9.1: 33 values);
    // nothing found, so nothing can be stuck.
    expect(requests).toEqual(Array.from({ length: 2 * PENDING_SHARD_VALUES.length }, () => 'QueryCommand'));
    client.destroy();
  });
});

describe('lost answers and failed requests', () => {
  it('a claim whose answer was lost is still ours; a SENT mark whose answer was lost is written once', async () => {
    const keys = await writeMessages('lost', 3);
    const client = localDynamoClient();
    const claims = loseAnswers(client, (operation) => operation === 'UpdateItem');
    const marks = loseAnswers(client, (operation) => operation === 'TransactWriteItems');
    const report = await drainGroup('lost', {
      ...senderOptions(client, sqs, layout, queue.url),
      owner: 'relay:lost',
      sentBy: 'relay',
      timeLeftMs: forever,
    });
    expect(claims.lost + marks.lost).toBe(2);
    expect(report.sent).toEqual(keys);
    expect(keysOf(await drainQueue(sqs, queue.url, 3))).toEqual(keys);
    // One transaction marked the run; its retry, with the same token, applied nothing more.
    for (const key of keys) expect(await itemOf(key)).toMatchObject({ status: 'SENT', attempts: 1 });
    client.destroy();
  });

  it('a SENT mark that fails leaves the message pending and ours; the next drain sends it again, deduplicated', async () => {
    const [key] = await writeMessages('mark-fails', 1);
    const client = localDynamoClient();
    const failing = failRequests(client, (operation) => operation === 'TransactWriteItems');
    const options = {
      ...senderOptions(client, sqs, layout, queue.url),
      owner: 'relay:mark',
      sentBy: 'relay',
      timeLeftMs: forever,
    };

    const first = await drainGroup('mark-fails', options);
    expect(first).toMatchObject({ sent: [], sentUnmarked: [key] });
    expect(first.markErrors[0]).toContain('injected failure');
    failing.stop();
    const second = await drainGroup('mark-fails', options);
    expect(second.sent).toEqual([key]);
    expect(keysOf(await drainQueue(sqs, queue.url, 1))).toEqual([key]);
    client.destroy();
  });

  it('a transient send failure is retried within the run with the same deduplication id', async () => {
    const [key] = await writeMessages('transient', 1);
    const flaky = localSqsClient(1);
    const sends = injectEntryFaults(flaky, (entry) =>
      entry.attempt === 1 ? { when: 'after-sending', ...TRANSIENT } : undefined,
    );
    const report = await drainGroup('transient', {
      ...senderOptions(dynamodb, flaky, layout, queue.url),
      owner: 'relay:transient',
      sentBy: 'relay',
      timeLeftMs: forever,
    });
    expect(report.sent).toEqual([key]);
    expect(sends.sentKeys).toEqual([key, key]);
    expect(keysOf(await drainQueue(sqs, queue.url, 1))).toEqual([key]);
    flaky.destroy();
  });
});

describe('SendMessageBatch answers that fail one entry and accept the later ones of its group', () => {
  it('keep the group in order on the queue: m1, m2, m3, m4', async () => {
    const keys = await writeMessages('entry-fails', 4);
    const proxy = await startFaultProxy({ service: 'sqs', upstream: emulatorEndpoint('sqsEndpoint') });
    const through = sqsClientVia(proxy, 1);
    /** The entries of each SendMessageBatch, by group. */
    const groupsPerCall: string[][] = [];
    let failed = false;
    const failM2Once: FaultPlan = (request) => {
      if (request.operation !== 'SendMessageBatch') return undefined;
      const entries = request.body.Entries as { MessageDeduplicationId: string; MessageGroupId: string }[];
      groupsPerCall.push(entries.map((entry) => entry.MessageGroupId));
      const entry = entries.findIndex((candidate) => candidate.MessageDeduplicationId === keys[1]);
      if (failed || entry === -1) return undefined;
      failed = true;
      return { kind: 'fail-entry', entry };
    };
    proxy.setPlan(failM2Once);
    const options = {
      ...senderOptions(dynamodb, through, layout, queue.url),
      owner: 'relay:entry-fails',
      sentBy: 'relay',
      timeLeftMs: forever,
    };

    try {
      await drainGroup('entry-fails', options);
      await drainGroup('entry-fails', options);
    } finally {
      through.destroy();
      await proxy.close();
    }

    expect(failed).toBe(true);
    expect(keysOf(await drainQueue(sqs, queue.url, 4))).toEqual(keys);
    for (const key of keys) expect(await itemOf(key)).toMatchObject({ status: 'SENT' });
    // Never two messages of the group unconfirmed in one call: what makes any answer safe.
    expect(groupsPerCall.every((groups) => new Set(groups).size === groups.length)).toBe(true);
  });
});
