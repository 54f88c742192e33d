import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageCommand } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEnvelope, type OutgoingMessage } from '../../lambdas/common/envelope.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import {
  CONSUMER_METRICS,
  type ConsumerOperation,
  fifoBatch,
  leaseOperation,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { loseAnswers } from '../support/sdk-middleware.js';
import type { FifoQueue } from '../support/sqs.js';
import { named, receiveMessages, sendBody } from '../support/sqs.js';
import { pollUntil } from '../support/sqs-event-source.js';
import { steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// DESIGN §2: no copy of a key takes effect twice, whatever its publishedAt and however it reached
// the DLQ. A re-publication gets a fresh publishedAt, so its horizon can outlive the record of the
// key's first completion; a copy that goes back to SQS unacknowledged must keep that record alive
// for as long as its own horizon lasts. Against the SQS emulator, and the records in DynamoDB Local
// or Valkey (transactional mode's in DynamoDB only).

const world = consumerTestWorld('horizon-idem', 'horizon-business');

const TTL_SECONDS = 600; // default margin: a tenth, 60 s; the horizon is 540 s after publication
type LeaseMode = 'at-least-once' | 'at-most-once';
type Mode = LeaseMode | 'transactional';

/**
 * An operation of `mode` whose effect counts per name; the name `poison-pill` always fails
 * retryably. A transactional effect is its write (its plan also runs for a duplicate), counted in
 * the business table; a lease-mode effect is the function's run.
 */
function countingOperation(mode: Mode) {
  const runs = new Map<string, number>();
  const namespace = `horizon-${randomUUID().slice(0, 8)}`;
  const payload = z.object({ name: z.string() });
  const business = world.tables[1] as string;
  const effectId = (name: string) => `${namespace}-effects#${name}`;
  const operation: ConsumerOperation =
    mode === 'transactional'
      ? transactionalOperation({
          namespace,
          payload,
          plan: ({ payload: { name } }) => {
            if (name === 'poison-pill') throw new Error('a dependency is down');
            const write = {
              TableName: business,
              Key: { id: effectId(name) },
              UpdateExpression: 'ADD applied :one',
            };
            return {
              writes: [{ Update: { ...write, ExpressionAttributeValues: { ':one': 1 } } }],
              result: name,
            };
          },
        })
      : leaseOperation({
          namespace,
          mode,
          payload,
          run: ({ payload: { name } }) => {
            if (name === 'poison-pill') throw new Error('a dependency is down');
            runs.set(name, (runs.get(name) ?? 0) + 1);
          },
        });
  const effects = async (name: string) =>
    mode === 'transactional'
      ? ((await readItem<{ applied: number }>(business, effectId(name)))?.applied ?? 0)
      : (runs.get(name) ?? 0);
  return { operation, effects, namespace };
}

/** A store clock the test moves, to pass the record's TTL without waiting for it. */
function movableClock() {
  let offsetMs = 0;
  return { now: () => Date.now() + offsetMs, advance: (seconds: number) => (offsetMs += seconds * 1000) };
}

/** Publishes an envelope stamped at `publishedAt`, under its own deduplication id (past SQS's window). */
async function publishAt(queue: FifoQueue, message: OutgoingMessage, publishedAt: number, dedupId: string) {
  const envelope = createEnvelope(message, new Date(publishedAt));
  return sendBody(world.sqs, queue.url, JSON.stringify(envelope), message.groupId, dedupId);
}

/** `oncely dlq redrive` for the DLQ's copy of `key`: the same body back to the queue, then out of the DLQ. */
async function redrive(dlq: FifoQueue, queue: FifoQueue, key: string) {
  const dead = (await receiveMessages(world.sqs, dlq.url, 2)).find((message) => message.Body?.includes(key));
  if (!dead?.Body || !dead.ReceiptHandle) throw new Error(`no copy of ${key} in the DLQ`);
  const envelope = JSON.parse(dead.Body) as { groupId: string };
  await sendBody(world.sqs, queue.url, dead.Body, envelope.groupId, `redriven-${randomUUID()}`);
  await world.sqs.send(new DeleteMessageCommand({ QueueUrl: dlq.url, ReceiptHandle: dead.ReceiptHandle }));
}

/** A store on the table, its records living TTL_SECONDS: transactional mode's, and DynamoDB's own tests'. */
const tableStore = (options: { client?: DynamoDBClient; now?: () => number } = {}) =>
  new DynamoDBIdempotencyStore({
    client: options.client ?? world.dynamodb,
    tableName: world.tables[0] as string,
    ttlSeconds: TTL_SECONDS,
    now: options.now,
  });

/** A consumer of `operation` on `store` (its records living TTL_SECONDS), dead-lettering to `dlqUrl`. */
function consumerOf(operation: ConsumerOperation, dlqUrl: string, store: LeaseStore) {
  const metrics = metricsRecorder();
  const handler = middy<SQSEvent, SQSBatchResponse>().use(
    fifoBatch({
      store,
      operations: { Named: operation },
      deadLetterQueue: { client: world.sqs, queueUrl: dlqUrl },
      logger: silentLogger(),
      metrics,
    }),
  );
  return { handler, metrics };
}

const LATE_REPUBLICATION =
  'a late re-publication, dead-lettered behind a failing record and redriven after the first record expired, does not run again';

/**
 * A key completed, re-published 300 s later behind a record of its group that keeps failing (SQS
 * dead-letters both), redriven 400 s later: past the first record's expiry, within the copy's horizon.
 * `storeOn` makes the consumer's store on the test's clock, `read` reads its record.
 */
async function lateRepublication(
  mode: Mode,
  storeOn: (now: () => number) => LeaseStore,
  read: (id: string) => Promise<IdempotencyRecord | undefined>,
) {
  const { queue, dlq } = await world.queuePair({ maxReceiveCount: 2, visibilityTimeoutSeconds: 1 });
  const clock = movableClock();
  const { operation, effects, namespace } = countingOperation(mode);
  const { handler, metrics } = consumerOf(operation, dlq.url, storeOn(clock.now));
  const group = `G-${randomUUID().slice(0, 8)}`;
  const order = named(group, 'K');

  // K is published and completed: its record lives TTL_SECONDS from now.
  await publishAt(queue, order, clock.now(), 'first');
  await pollUntil(world.sqs, queue, handler, async () => (await effects('K')) === 1);

  // 300 s later the producer publishes K again: a fresh publishedAt, whose horizon ends 840 s
  // after the first publication, past the record's expiry at 600 s. It sits behind a record of
  // its group that keeps failing, so SQS dead-letters it after maxReceiveCount receives.
  clock.advance(300);
  const pill = named(group, 'poison-pill');
  await publishAt(queue, pill, clock.now(), 'pill');
  const republishedAt = clock.now();
  await publishAt(queue, order, republishedAt, 'again');
  await pollUntil(world.sqs, queue, handler, async () => (await messagesInQueue(world.sqs, dlq.url)) === 2, {
    timeoutMs: 60_000,
  });
  expect(metrics.counts[CONSUMER_METRICS.skipped]).toBeGreaterThanOrEqual(2);

  // 400 s later the first record has expired by its own expiresAt, but the copy is still
  // inside its horizon. An operator redrives it.
  clock.advance(400);
  await redrive(dlq, queue, order.key as string);
  const polls = await pollUntil(
    world.sqs,
    queue,
    handler,
    (done) => done.some((poll) => poll.deleted.length > 0),
    {
      timeoutMs: 60_000,
    },
  );
  expect(polls.flatMap((poll) => poll.records)).not.toHaveLength(0);
  expect(await effects('K')).toBe(1);
  // The record that answered it lives until the copy's horizon has passed.
  const record = await read(`${namespace}#${order.key}`);
  expect(record?.status).toBe('COMPLETED');
  expect(record?.expiresAt).toBeGreaterThanOrEqual(Math.floor(republishedAt / 1000) + TTL_SECONDS);
}

describe.concurrent.each(LEASE_STORES)(
  'the dedup horizon of a re-publication (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it.each<LeaseMode>(['at-least-once', 'at-most-once'])(
      `%s: ${LATE_REPUBLICATION}`,
      (mode) =>
        lateRepublication(mode, (now) => records.store({ ttlSeconds: TTL_SECONDS, now }), records.read),
      60_000,
    );
  },
);

// Transactional mode refuses a Valkey store: its records are DynamoDB's (one transaction with the effect).
describe.concurrent('the dedup horizon of a re-publication, transactional (DynamoDB only)', () => {
  it(
    `transactional: ${LATE_REPUBLICATION}`,
    () =>
      lateRepublication(
        'transactional',
        (now) => tableStore({ now }),
        (id) => readItem(world.tables[0] as string, id),
      ),
    60_000,
  );
});

/** Writes a bare record of `status` that expires at `expiresAt` (epoch seconds). */
async function putRecord(id: string, status: string, expiresAt: number) {
  await DynamoDBDocumentClient.from(world.dynamodb).send(
    new PutCommand({ TableName: world.tables[0] as string, Item: { id, status, expiresAt } }),
  );
}

const nowSec = () => Math.floor(Date.now() / 1000);
const isKeep = (operation: string, input: Record<string, unknown>) =>
  operation === 'UpdateItem' && input.UpdateExpression === 'SET expiresAt = :until';

// The store's own: the first test writes bare DynamoDB items (test/idempotency/valkey-store.test.ts
// has Valkey's keepUntil), the second loses an answer inside the SDK's retry loop.
describe.concurrent('keeping a record for a returning copy (DynamoDBIdempotencyStore.keepUntil)', () => {
  it('lengthens a live record of any status, and never shortens, revives or creates one', async () => {
    const client = localDynamoClient();
    const store = new DynamoDBIdempotencyStore({ client, tableName: world.tables[0] as string });
    const id = (name: string) => `keep-${randomUUID().slice(0, 8)}#${name}`;
    const [live, inDoubt, long, dead, absent] = ['live', 'in-doubt', 'long', 'dead', 'absent'].map(
      id,
    ) as string[];
    await putRecord(live as string, 'COMPLETED', nowSec() + 100);
    await putRecord(inDoubt as string, 'IN_DOUBT', nowSec() + 100);
    await putRecord(long as string, 'COMPLETED', nowSec() + 5_000);
    await putRecord(dead as string, 'COMPLETED', nowSec() - 1);
    const until = nowSec() + 1_000;

    expect(await store.keepUntil(live as string, until)).toBe(true);
    expect(await store.keepUntil(inDoubt as string, until)).toBe(true);
    expect(await store.keepUntil(long as string, until)).toBe(false);
    expect(await store.keepUntil(dead as string, until)).toBe(false);
    expect(await store.keepUntil(absent as string, until)).toBe(false);
    const table = world.tables[0] as string;
    expect((await readItem(table, live as string))?.expiresAt).toBe(until);
    expect((await readItem(table, inDoubt as string))?.status).toBe('IN_DOUBT');
    expect((await readItem(table, long as string))?.expiresAt).toBeGreaterThan(until);
    expect((await readItem(table, dead as string))?.expiresAt).toBeLessThan(nowSec());
    expect(await readItem(table, absent as string)).toBeUndefined();
    client.destroy();
  });

  it('is applied once when its answer is lost: the SDK’s retry finds it done and does not fail', async () => {
    const client = localDynamoClient();
    const lost = loseAnswers(client, isKeep);
    const store = new DynamoDBIdempotencyStore({ client, tableName: world.tables[0] as string });
    const id = `keep-${randomUUID().slice(0, 8)}#lost`;
    await putRecord(id, 'COMPLETED', nowSec() + 100);
    const until = nowSec() + 1_000;

    expect(await store.keepUntil(id, until)).toBe(false); // the retry's condition: already long enough
    expect(lost.lost).toBe(1);
    expect((await readItem(world.tables[0] as string, id))?.expiresAt).toBe(until);
    client.destroy();
  });
});

describe.concurrent.each(LEASE_STORES)(
  'keeping a record for a returning copy (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it('failing, leaves the batch’s answer as it was and counts the copy; the next delivery keeps the record', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5, visibilityTimeoutSeconds: 1 });
      const steps = steppedStore(records.store({ ttlSeconds: TTL_SECONDS }));
      const failure = steps.fail('keepUntil');
      const { operation, effects, namespace } = countingOperation('at-least-once');
      const { handler, metrics } = consumerOf(operation, dlq.url, steps.store);
      const group = `G-${randomUUID().slice(0, 8)}`;
      const order = named(group, 'K');
      await publishAt(queue, order, Date.now(), 'first');
      await pollUntil(world.sqs, queue, handler, async () => (await effects('K')) === 1);
      const pill = named(group, 'poison-pill');
      await publishAt(queue, pill, Date.now(), 'pill');
      const republishedAt = Date.now() + 120_000; // a producer whose clock is ahead: a later horizon
      await publishAt(queue, order, republishedAt, 'again');

      const [failed] = await pollUntil(world.sqs, queue, handler, (polls) =>
        polls.some((poll) => poll.records.length === 2),
      );
      expect(failed?.error).toBeUndefined();
      expect(failed?.response?.batchItemFailures).toHaveLength(2);
      expect(failure.failures).toBeGreaterThanOrEqual(1);
      expect(metrics.counts[CONSUMER_METRICS.recordLifeNotExtended]).toBeGreaterThanOrEqual(1);
      const record = () => records.read(`${namespace}#${order.key}`);
      expect((await record())?.expiresAt).toBeLessThan(Math.floor(republishedAt / 1000) + TTL_SECONDS);

      failure.stop();
      await pollUntil(world.sqs, queue, handler, (polls) => polls.some((poll) => poll.records.length === 2), {
        timeoutMs: 60_000,
      });
      expect((await record())?.expiresAt).toBe(Math.ceil(republishedAt / 1000) + TTL_SECONDS);
    });

    // The SDK's resend of the keep is DynamoDB's own (above); here the consumer meets the lost answer.
    it('applied with its answer lost, keeps the record all the same and leaves the batch’s answer; the next delivery finds it kept', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5, visibilityTimeoutSeconds: 1 });
      const { operation, effects, namespace } = countingOperation('at-least-once');
      const group = `G-${randomUUID().slice(0, 8)}`;
      const order = named(group, 'K');
      const id = `${namespace}#${order.key}`;
      const steps = steppedStore(records.store({ ttlSeconds: TTL_SECONDS }));
      const lost = steps.loseAnswers('keepUntil', (call) => call.id === id);
      const { handler, metrics } = consumerOf(operation, dlq.url, steps.store);
      await publishAt(queue, order, Date.now(), 'first');
      await pollUntil(world.sqs, queue, handler, async () => (await effects('K')) === 1);
      await publishAt(queue, named(group, 'poison-pill'), Date.now(), 'pill');
      const republishedAt = Date.now() + 120_000; // a producer whose clock is ahead: a later horizon
      await publishAt(queue, order, republishedAt, 'again');

      const first = await pollUntil(world.sqs, queue, handler, (polls) =>
        polls.some((poll) => poll.records.length === 2),
      );
      const both = first.find((poll) => poll.records.length === 2);
      expect(both?.error).toBeUndefined();
      expect(both?.response?.batchItemFailures).toHaveLength(2);
      expect(lost.lost).toBe(1);
      expect(metrics.counts[CONSUMER_METRICS.recordLifeNotExtended]).toBe(1);
      const kept = Math.ceil(republishedAt / 1000) + TTL_SECONDS;
      expect((await records.read(id))?.expiresAt).toBe(kept);

      // Its next delivery keeps it again: found long enough, not a failure, and not shortened.
      const keeps = steps.count('keepUntil', (call) => call.id === id);
      await pollUntil(world.sqs, queue, handler, (polls) => polls.some((poll) => poll.records.length === 2), {
        timeoutMs: 60_000,
      });
      expect(steps.count('keepUntil', (call) => call.id === id)).toBeGreaterThan(keeps);
      expect(metrics.counts[CONSUMER_METRICS.recordLifeNotExtended]).toBe(1);
      expect((await records.read(id))?.expiresAt).toBe(kept);
      expect(await effects('K')).toBe(1);
    });
  },
);
