import { randomUUID } from 'node:crypto';
import { setTimeout as effectTakes } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PAST_DEDUP_HORIZON } from '../../lambdas/common/dedup-horizon.js';
import { createEnvelope, InvalidEnvelopeError, type OutgoingMessage } from '../../lambdas/common/envelope.js';
import { sha256Hex } from '../../lambdas/common/message-key.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import * as consumerExports from '../../lambdas/consumer/index.js';
import {
  CONSUMER_METRICS,
  type ConsumerOperation,
  DLQ_ATTRIBUTES,
  type FifoBatchOptions,
  fifoBatch,
  IdempotencyStoreUnavailableError,
  leaseOperation,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import * as idempotencyExports from '../../lambdas/idempotency/index.js';
import {
  DynamoDBIdempotencyStore,
  MAX_RESULT_BYTES,
  NonRetryableError,
  OncelyError,
  OutcomeUnknownError,
} from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import { namedPayload, recordingOperation } from '../support/recording-operation.js';
import {
  createFifoQueue,
  type FifoQueue,
  named,
  publish,
  receiveMessages,
  sendBody,
} from '../support/sqs.js';
import { pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Reliability rules of the FIFO batch middleware (DESIGN §2 dedup horizon, §3 no acknowledgement
// without a record, §5 deadline, per-record errors, DLQ once and at the size limit), against the SQS
// emulator, with the lease records in DynamoDB Local and in Valkey. Each test owns its queues and
// keys, so they run concurrently.

const world = consumerTestWorld('reliability-idem', 'reliability-business');
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let idempotencyTable: string;
let businessTable: string;
beforeAll(() => {
  ({ dynamodb, sqs } = world);
  [idempotencyTable, businessTable] = world.tables as [string, string];
});

const queuePair = (maxReceiveCount = 5, visibilityTimeoutSeconds = 3) =>
  world.queuePair({ maxReceiveCount, visibilityTimeoutSeconds });

/** A queue and its DLQ that both take messages of at most `maximumMessageSize` bytes. */
async function smallQueuePair(maximumMessageSize: number) {
  const dlq = await createFifoQueue(sqs, { MaximumMessageSize: String(maximumMessageSize) });
  const queue = await createFifoQueue(sqs, {
    MaximumMessageSize: String(maximumMessageSize),
    // Its tests wait for no redelivery: long enough for the receipt handles to outlast a slow batch.
    VisibilityTimeout: '10',
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 5 }),
  });
  world.own(queue, dlq);
  return { queue, dlq };
}

interface ConsumerSetup {
  store?: { ttlSeconds?: number; now?: () => number };
  /** A store of the test's own (one whose steps it faults), instead of one made with `store`. */
  leaseStore?: LeaseStore;
  batch?: Pick<FifoBatchOptions, 'recordTimeReserveMs' | 'dedupHorizonMarginSeconds' | 'maxConcurrentGroups'>;
  sourceQueueUrl?: string;
}

/**
 * A FIFO consumer on the records of `records`, or (without them) on the file's DynamoDB table. With
 * Valkey lease records, transactional operations keep theirs in the table, as OncelyPipeline's
 * `leaseRecords: 'valkey'` deploys them.
 */
function consumer(
  records: LeaseRecords | undefined,
  operations: Record<string, ConsumerOperation>,
  dlqUrl: string,
  setup: ConsumerSetup = {},
) {
  const metrics = metricsRecorder();
  const tableStore = (options: ConsumerSetup['store']) =>
    new DynamoDBIdempotencyStore({ client: dynamodb, tableName: idempotencyTable, ...options });
  const store = setup.leaseStore ?? records?.store(setup.store) ?? tableStore(setup.store);
  const handler = middy<SQSEvent, SQSBatchResponse>().use(
    fifoBatch({
      store,
      transactionalStore: store.kind === 'valkey' ? tableStore({}) : undefined,
      operations,
      deadLetterQueue: { client: sqs, queueUrl: dlqUrl, sourceQueueUrl: setup.sourceQueueUrl },
      logger: silentLogger(),
      metrics,
      ...setup.batch,
    }),
  );
  return { handler, metrics, store };
}

/** A store clock that tests move forward, to expire leases. */
function movableClock() {
  let offsetMs = 0;
  return {
    now: () => Date.now() + offsetMs,
    advance: (ms: number) => {
      offsetMs += ms;
    },
  };
}

/** A Lambda context whose remaining time the test sets. */
function controlledContext(remainingMs: () => number): Context {
  return { ...lambdaContext(), getRemainingTimeInMillis: remainingMs };
}

/** Publishes an envelope as the publisher would have `ageSeconds` ago. */
function publishAged(queue: FifoQueue, message: OutgoingMessage, ageSeconds: number): Promise<string> {
  const envelope = createEnvelope(message, new Date(Date.now() - ageSeconds * 1000));
  return sendBody(sqs, queue.url, JSON.stringify(envelope), message.groupId, envelope.key);
}

const failureIds = (response: SQSBatchResponse | undefined) =>
  response?.batchItemFailures.map((failure) => failure.itemIdentifier);

const connectionRefused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });

/** What a DLQ copy says about itself. */
function dlqCopy(message: Message | undefined) {
  const attribute = (name: string) => message?.MessageAttributes?.[name]?.StringValue;
  return {
    body: message?.Body,
    group: message?.Attributes?.MessageGroupId,
    deduplicationId: message?.Attributes?.MessageDeduplicationId,
    errorName: attribute(DLQ_ATTRIBUTES.errorName),
    errorMessage: attribute(DLQ_ATTRIBUTES.errorMessage),
    originalMessageId: attribute(DLQ_ATTRIBUTES.originalMessageId),
    attributeNames: Object.keys(message?.MessageAttributes ?? {}).sort(),
  };
}

/** The DLQ copies by original message id (the copies must carry the attribute). */
async function dlqCopiesById(dlq: FifoQueue, count: number) {
  const copies = (await receiveMessages(sqs, dlq.url, count)).map(dlqCopy);
  return Object.fromEntries(copies.map((copy) => [copy.originalMessageId, copy]));
}

describe.concurrent.each(LEASE_STORES)('consumer reliability (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  // ── §2 the dedup horizon ──────────────────────────────────────────────────────────────────────

  it('dead-letters a message past the dedup horizon without running it, and runs one just inside', async () => {
    // Nothing here comes back: a longer visibility timeout keeps the receipt handles valid for the
    // deletes, however slow a loaded machine makes the DLQ's send and mark.
    const { queue, dlq } = await queuePair(5, 10);
    const { ran, operation } = recordingOperation();
    // TTL 600 s, default margin min(1 h, TTL/10) = 60 s: the horizon is 540 s.
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      store: { ttlSeconds: 600 },
    });
    const past = named('P', 'P1');
    const ids = {
      past: await publishAged(queue, past, 545),
      laterOfGroup: await publish(sqs, queue.url, named('P', 'P2')),
      justInside: await publishAged(queue, named('Q', 'Q1'), 530),
    };

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(3);
    expect(poll.error).toBeUndefined();
    expect(failureIds(poll.response)).toEqual([]);
    expect(poll.deleted.sort()).toEqual(Object.values(ids).sort());
    expect(ran.sort()).toEqual(['P2', 'Q1']);
    expect(metrics.counts[CONSUMER_METRICS.pastDedupHorizon]).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.processed]).toBe(2);
    // Never run, not even acquired: nothing proves its record (if any) still protects the key.
    expect(await records.read(`${operation.namespace}#${past.key}`)).toBeUndefined();

    const [dead] = await receiveMessages(sqs, dlq.url, 1);
    expect(dlqCopy(dead)).toMatchObject({
      group: 'P',
      errorName: PAST_DEDUP_HORIZON,
      originalMessageId: ids.past,
      body: expect.stringContaining(past.key),
    });
    expect(dlqCopy(dead).errorName).toBe('PastDedupHorizon');
  });

  it('places the dedup horizon by the dedupHorizonMarginSeconds option', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation();
    // TTL 600 s less a 300 s margin: the horizon is 300 s (the default margin would make it 540 s).
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      store: { ttlSeconds: 600 },
      batch: { dedupHorizonMarginSeconds: 300 },
    });
    const pastId = await publishAged(queue, named('A', 'A1'), 330);
    await publishAged(queue, named('B', 'B1'), 270);

    const poll = await pollOnce(sqs, queue, handler);
    expect(failureIds(poll.response)).toEqual([]);
    expect(ran).toEqual(['B1']);
    expect(metrics.counts[CONSUMER_METRICS.pastDedupHorizon]).toBe(1);
    const [dead] = await receiveMessages(sqs, dlq.url, 1);
    expect(dlqCopy(dead)).toMatchObject({ errorName: PAST_DEDUP_HORIZON, originalMessageId: pastId });
  });

  // ── §5 the deadline ───────────────────────────────────────────────────────────────────────────

  it('starts no record with less time left than a fixed recordTimeReserveMs, and runs them with enough', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation();
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      batch: { recordTimeReserveMs: 5_000 },
    });
    const ids = [
      await publish(sqs, queue.url, named('A', 'A1')),
      await publish(sqs, queue.url, named('A', 'A2')),
      await publish(sqs, queue.url, named('B', 'B1')),
    ];

    const short = await pollOnce(sqs, queue, handler, { context: lambdaContext(4_999) });
    expect(short.records).toHaveLength(3);
    expect(short.error).toBeUndefined();
    expect(failureIds(short.response)).toEqual(ids);
    expect(ran).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.deferredAtDeadline]).toBe(3);
    expect(metrics.counts[CONSUMER_METRICS.failed]).toBeUndefined();

    const redelivered = await pollUntil(
      sqs,
      queue,
      handler,
      (polls) => polls.flatMap((poll) => poll.deleted).length === 3,
      { context: lambdaContext(5_000) },
    );
    expect(redelivered.flatMap((poll) => failureIds(poll.response) ?? [])).toEqual([]);
    expect(ran.filter((name) => name.startsWith('A'))).toEqual(['A1', 'A2']);
    expect(ran.sort()).toEqual(['A1', 'A2', 'B1']);
    expect(metrics.counts[CONSUMER_METRICS.deferredAtDeadline]).toBe(3);
  });

  it('learns the default reserve: twice its recent slow records defers the next group’s record', async () => {
    let remaining = 5_000;
    // The invocation outlasts 1 s: a longer visibility timeout keeps A1's receipt handle valid for
    // its delete, on a loaded machine too; B1 and B2 come back after it.
    const { queue, dlq } = await queuePair(5, 4);
    const ran: string[] = [];
    const operation = leaseOperation({
      namespace: `slow-${randomUUID().slice(0, 8)}`,
      mode: 'at-most-once',
      payload: namedPayload,
      run: async (message) => {
        ran.push(message.payload.name);
        if (message.payload.name === 'A1') {
          await effectTakes(700); // a slow effect, after which 1.1 s of the invocation are left
          remaining = 1_100;
        }
      },
    });
    // One group at a time, so A1 finishes before B1 is considered.
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      batch: { maxConcurrentGroups: 1 },
    });
    const a1 = await publish(sqs, queue.url, named('A', 'A1'));
    const b1Message = named('B', 'B1');
    const b1 = await publish(sqs, queue.url, b1Message);
    const b2 = await publish(sqs, queue.url, named('B', 'B2'));

    // The batch starts with 5 s (half of it caps nothing); after A1, 1.1 s are left: above the
    // initial reserve (1 s), below twice A1's 700+ ms.
    remaining = 5_000;
    const context = controlledContext(() => remaining);
    const poll = await pollOnce(sqs, queue, handler, { context });
    expect(poll.records.map((record) => record.messageId)).toEqual([a1, b1, b2]);
    expect(failureIds(poll.response)).toEqual([b1, b2]);
    expect(poll.deleted).toEqual([a1]);
    expect(ran).toEqual(['A1']);
    expect(metrics.counts[CONSUMER_METRICS.deferredAtDeadline]).toBe(2);
    expect(await records.read(`${operation.namespace}#${b1Message.key}`)).toBeUndefined();

    // The container keeps what it learnt; with time enough the deferred group runs, in order.
    await pollUntil(sqs, queue, handler, (polls) => polls.flatMap((p) => p.deleted).length === 2, {
      context: controlledContext(() => 5_000),
    });
    expect(ran).toEqual(['A1', 'B1', 'B2']);
  });

  // ── §5 errors that belong to one record ───────────────────────────────────────────────────────

  it('records a lease-mode effect whose result is too large to store as done, never dead-letters it', async () => {
    const { queue, dlq } = await queuePair();
    const large = { blob: 'x'.repeat(MAX_RESULT_BYTES + 10 * 1024) };
    const { ran, operation } = recordingOperation({
      run: async (message) => {
        ran.push(message.payload.name);
        return large;
      },
    });
    const first = consumer(records, { Named: operation }, dlq.url);
    const message = named('G', 'large');
    const id = await publish(sqs, queue.url, message);

    const poll = await pollOnce(sqs, queue, first.handler);
    expect(failureIds(poll.response)).toEqual([]);
    expect(poll.deleted).toEqual([id]);
    expect(first.metrics.counts[CONSUMER_METRICS.resultNotStored]).toBe(1);
    expect(first.metrics.counts[CONSUMER_METRICS.processed]).toBe(1);
    expect(first.metrics.counts[CONSUMER_METRICS.sentToDlq]).toBeUndefined();
    const record = await records.read(`${operation.namespace}#${message.key}`);
    expect(record).toMatchObject({
      status: 'COMPLETED',
      resultBytes: Buffer.byteLength(JSON.stringify(large)),
    });
    expect(record?.result).toBeUndefined();

    // The same message after SQS's dedup window, in the same container and in a fresh one.
    const again = recordingOperation({ namespace: operation.namespace });
    const fresh = consumer(records, { Named: again.operation }, dlq.url);
    for (const handler of [first.handler, fresh.handler]) {
      const duplicateId = await publish(sqs, queue.url, message, randomUUID());
      const duplicate = await pollOnce(sqs, queue, handler);
      expect(failureIds(duplicate.response)).toEqual([]);
      expect(duplicate.deleted).toEqual([duplicateId]);
    }
    expect(first.metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
    expect(fresh.metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
    expect(ran).toEqual(['large']);
    expect(again.ran).toEqual([]);
    expect(first.metrics.counts[CONSUMER_METRICS.sentToDlq]).toBeUndefined();
    expect(await messagesInQueue(sqs, dlq.url)).toBe(0);
  });

  // ── the DLQ: at the size limit, and once ──────────────────────────────────────────────────────

  it('gets a poison message at the queue’s size limit into the DLQ, with fewer attributes or none', async () => {
    const maxBytes = 2_048;
    const { queue, dlq } = await smallQueuePair(maxBytes);
    const { operation } = recordingOperation({
      fail: (name) => {
        if (name.startsWith('refused')) throw new NonRetryableError('the gateway refused it for good');
      },
    });
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url);
    /** An envelope body of exactly `length` characters (ASCII). */
    const bodyOf = (message: OutgoingMessage & { key: string }, length: number) => {
      const padded = (pad: string) =>
        JSON.stringify(createEnvelope({ ...message, payload: { ...(message.payload as object), pad } }));
      const body = padded('x'.repeat(length - padded('').length));
      expect(body).toHaveLength(length);
      return body;
    };
    const atLimit = named('A', 'at-limit', 'NoSuchType');
    const nearLimit = named('B', 'refused-near-limit');
    // Without a key, keyed by its deduplication id: no room to write the key in (dead-letter-body.ts).
    const keyless = named('C', 'keyless-at-limit', 'NoSuchType');
    const bodies = {
      atLimit: bodyOf(atLimit, maxBytes),
      nearLimit: bodyOf(nearLimit, maxBytes - 100),
      keyless: bodyOf(keyless, maxBytes).replace(
        `"key":"${keyless.key}",`,
        `"kez":"${'y'.repeat(keyless.key.length)}",`,
      ),
    };
    const ids = {
      atLimit: await sendBody(sqs, queue.url, bodies.atLimit, 'A', atLimit.key),
      nearLimit: await sendBody(sqs, queue.url, bodies.nearLimit, 'B', nearLimit.key),
      keyless: await sendBody(sqs, queue.url, bodies.keyless, 'C', keyless.key),
    };

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(3);
    expect(failureIds(poll.response)).toEqual([]);
    expect(poll.deleted.sort()).toEqual(Object.values(ids).sort());
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(3);
    expect(metrics.counts[CONSUMER_METRICS.dlqSendFailed]).toBeUndefined();

    const dead = (await receiveMessages(sqs, dlq.url, 3)).map(dlqCopy);
    const atLimitCopy = dead.find((copy) => copy.body === bodies.atLimit);
    const nearLimitCopy = dead.find((copy) => copy.body === bodies.nearLimit);
    // At the limit, not even the error's name fits: the body alone, in its group.
    expect(atLimitCopy).toMatchObject({ group: 'A', attributeNames: [] });
    // 100 bytes short of it: the error's name fits, the other attributes do not.
    expect(nearLimitCopy).toMatchObject({
      group: 'B',
      attributeNames: [DLQ_ATTRIBUTES.errorName],
      errorName: 'NonRetryableError',
    });
    // Its key does not fit in: it goes as it came, and a redrive will say its key is gone.
    expect(dead.find((copy) => copy.group === 'C')).toMatchObject({
      body: bodies.keyless,
      attributeNames: [],
    });
  });

  it('sends a dead-lettered record to the DLQ once when its batch then fails, deleting it from the source queue', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation();
    const a2 = named('A', 'A2');
    const stepped = steppedStore(records.store());
    const failing = stepped.fail(
      'acquire',
      (call) => call.id === `${operation.namespace}#${a2.key}`,
      connectionRefused,
    );
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      leaseStore: stepped.store,
      sourceQueueUrl: queue.url,
    });
    const poisonId = await publish(sqs, queue.url, named('A', 'A1', 'NoSuchType'));
    const a2Id = await publish(sqs, queue.url, a2);

    // A1 goes to the DLQ, then A2's acquire meets an unreachable table: the whole batch fails.
    const first = await pollOnce(sqs, queue, handler);
    expect(first.records.map((record) => record.messageId)).toEqual([poisonId, a2Id]);
    expect(first.error).toBeInstanceOf(IdempotencyStoreUnavailableError);
    expect(first.deleted).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    failing.stop();

    const redelivered = await pollUntil(sqs, queue, handler, (polls) =>
      polls.some((poll) => poll.deleted.includes(a2Id)),
    );
    expect(redelivered.flatMap((poll) => poll.records.map((record) => record.messageId))).toEqual([a2Id]);
    expect(ran).toEqual(['A2']);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    // Counted, not received: a FIFO queue would hide a second copy of the group behind the first.
    expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
    const dead = await receiveMessages(sqs, dlq.url, 1);
    expect(dead.map(dlqCopy)).toMatchObject([
      {
        originalMessageId: poisonId,
        errorName: 'UnknownMessageTypeError',
        deduplicationId: sha256Hex(poisonId),
      },
    ]);
  });

  it('without sourceQueueUrl, a dead-lettered record back with its failed batch is not sent to the DLQ again', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation();
    const a2 = named('A', 'A2');
    const stepped = steppedStore(records.store());
    const failing = stepped.fail(
      'acquire',
      (call) => call.id === `${operation.namespace}#${a2.key}`,
      connectionRefused,
    );
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      leaseStore: stepped.store,
    });
    const poisonId = await publish(sqs, queue.url, named('A', 'A1', 'NoSuchType'));
    const a2Id = await publish(sqs, queue.url, a2);

    const first = await pollOnce(sqs, queue, handler);
    expect(first.error).toBeInstanceOf(IdempotencyStoreUnavailableError);
    failing.stop();

    const redelivered = await pollUntil(sqs, queue, handler, (polls) =>
      polls.some((poll) => poll.deleted.includes(a2Id)),
    );
    // The poison message came back with its batch; its mark says it is in the DLQ already …
    expect(redelivered.flatMap((poll) => poll.records.map((record) => record.messageId))).toEqual([
      poisonId,
      a2Id,
    ]);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    expect(await records.read(`oncely/dead-lettered#${poisonId}`)).toMatchObject({
      deadLetteredAt: expect.any(Number),
    });
    expect(ran).toEqual(['A2']);
    // … so the DLQ holds one copy, whatever SQS's 5-minute window (dead-letter-once.test.ts).
    expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
    const dead = await receiveMessages(sqs, dlq.url, 1);
    expect(dead.map(dlqCopy)).toMatchObject([
      { originalMessageId: poisonId, deduplicationId: sha256Hex(poisonId) },
    ]);
  });

  // ── §3 no acknowledgement without a record ────────────────────────────────────────────────────

  it('does not acknowledge an outcome-unknown effect whose IN_DOUBT write fails; the redelivery parks it', async () => {
    const { queue, dlq } = await queuePair();
    const clock = movableClock();
    const { ran, operation } = recordingOperation({
      mode: 'at-most-once',
      fail: () => {
        throw new OutcomeUnknownError('POST /charge timed out after the request went out');
      },
    });
    const stepped = steppedStore(records.store({ now: clock.now }));
    const inDoubtWrites = stepped.fail('markInDoubt', () => true, connectionRefused);
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      leaseStore: stepped.store,
    });
    const message = named('G', 'charge');
    const id = await publish(sqs, queue.url, message);
    const recordId = `${operation.namespace}#${message.key}`;

    const first = await pollOnce(sqs, queue, handler);
    expect(first.error).toBeUndefined();
    expect(failureIds(first.response)).toEqual([id]);
    expect(first.deleted).toEqual([]);
    expect(inDoubtWrites.failures).toBeGreaterThan(0);
    expect(ran).toEqual(['charge']);
    expect(metrics.counts[CONSUMER_METRICS.failureWriteFailed]).toBe(1);
    expect(await records.read(recordId)).toMatchObject({ status: 'IN_PROGRESS' });

    inDoubtWrites.stop();
    clock.advance(60_000); // past the lease: the 30 s the context had left, plus the margin
    await pollUntil(sqs, queue, handler, (polls) => polls.some((poll) => poll.deleted.includes(id)));
    expect(ran).toEqual(['charge']);
    expect(await records.read(recordId)).toMatchObject({
      status: 'IN_DOUBT',
      unresolved: 'IN_DOUBT',
      message: { body: expect.stringContaining(message.key), groupId: 'G' },
    });
    expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBeUndefined();
  });

  it('does not acknowledge an effect whose COMPLETED write keeps failing; the redelivery parks it at-most-once', async () => {
    const { queue, dlq } = await queuePair();
    const clock = movableClock();
    const { ran, operation } = recordingOperation({ mode: 'at-most-once' });
    const stepped = steppedStore(records.store({ now: clock.now }));
    const completions = stepped.fail('complete', () => true, connectionRefused);
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url, {
      leaseStore: stepped.store,
    });
    const message = named('G', 'pay');
    const id = await publish(sqs, queue.url, message);
    const recordId = `${operation.namespace}#${message.key}`;

    const first = await pollOnce(sqs, queue, handler);
    expect(first.error).toBeUndefined();
    expect(failureIds(first.response)).toEqual([id]);
    expect(completions.failures).toBeGreaterThan(0);
    expect(metrics.counts[CONSUMER_METRICS.completionWriteFailed]).toBe(1);
    expect(await records.read(recordId)).toMatchObject({ status: 'IN_PROGRESS' });

    completions.stop();
    clock.advance(60_000);
    await pollUntil(sqs, queue, handler, (polls) => polls.some((poll) => poll.deleted.includes(id)));
    expect(ran).toEqual(['pay']);
    expect(await records.read(recordId)).toMatchObject({
      status: 'IN_DOUBT',
      unresolved: 'IN_DOUBT',
      message: { body: expect.stringContaining(message.key), groupId: 'G' },
    });
    expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBe(1);
  });

  // ── §10 fixed error names ─────────────────────────────────────────────────────────────────────

  it('names every dead-lettered error by its fixed name, and a user subclass by its class', async () => {
    class PaymentDeclined extends NonRetryableError {}
    class CardBlocked extends NonRetryableError {
      static override readonly errorName: string = 'CardBlockedByIssuer';
    }
    class CardExpired extends CardBlocked {}
    const { queue, dlq } = await queuePair();
    const thrown: Record<string, () => Error> = {
      plain: () => new NonRetryableError('no'),
      declined: () => new PaymentDeclined('the card was declined'),
      blocked: () => new CardBlocked('the issuer blocked the card'),
      expired: () => new CardExpired('the card expired'),
    };
    const { operation } = recordingOperation({
      fail: (name) => {
        const error = thrown[name];
        if (error) throw error();
      },
    });
    // A write whose condition fails: a business rule, described or not.
    const outOfStock = (message: { key: string }) => ({
      writes: [
        {
          ConditionCheck: {
            TableName: businessTable,
            Key: { id: `missing-${message.key}` },
            ConditionExpression: 'attribute_exists(id)',
          },
        },
      ],
    });
    const stock = transactionalOperation({
      namespace: `stock-${randomUUID().slice(0, 8)}`,
      plan: outOfStock,
    });
    const describedStock = transactionalOperation({
      namespace: `described-${randomUUID().slice(0, 8)}`,
      plan: outOfStock,
      describeViolation: () => 'the item is out of stock',
    });
    const { handler } = consumer(
      records,
      { Named: operation, Stock: stock, Described: describedStock },
      dlq.url,
    );
    const declined = named('declined', 'declined');
    const expected: Record<string, string> = {};
    const send = async (name: string, sent: Promise<string>) => {
      expected[await sent] = name;
    };
    await send('NonRetryableError', publish(sqs, queue.url, named('plain', 'plain')));
    await send('PaymentDeclined', publish(sqs, queue.url, declined));
    await send('CardBlockedByIssuer', publish(sqs, queue.url, named('blocked', 'blocked')));
    await send('CardExpired', publish(sqs, queue.url, named('expired', 'expired')));
    await send('UnknownMessageTypeError', publish(sqs, queue.url, named('unknown', 'u', 'NoSuchType')));
    await send(
      'InvalidPayloadError',
      publish(sqs, queue.url, { type: 'Named', groupId: 'invalid', key: randomUUID(), payload: { name: 7 } }),
    );
    await send(
      'InvalidEnvelopeError',
      sendBody(sqs, queue.url, '{"not":"an envelope"}', 'envelope', randomUUID()),
    );
    await send('TransactionConditionFailedError', publish(sqs, queue.url, named('stock', 's', 'Stock')));
    await send('BusinessRuleViolationError', publish(sqs, queue.url, named('described', 'd', 'Described')));

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(9);
    expect(failureIds(poll.response)).toEqual([]);
    const dead = await dlqCopiesById(dlq, 9);
    const names = Object.fromEntries(Object.keys(expected).map((id) => [id, dead[id]?.errorName]));
    expect(names).toEqual(expected);
    expect(await records.read(`${operation.namespace}#${declined.key}`)).toMatchObject({
      status: 'REJECTED',
      error: { name: 'PaymentDeclined' },
    });
  });
});

// Transactional mode commits its record with its writes in one DynamoDB transaction: it takes no Valkey store.
describe.concurrent('consumer reliability in transactional mode (records in DynamoDB)', () => {
  // ── §5 errors that belong to one record ───────────────────────────────────────────────────────

  it('dead-letters a record whose own DynamoDB writes are invalid, and the rest of the batch goes on', async () => {
    const { queue, dlq } = await queuePair();
    const writes = transactionalOperation({
      namespace: `tx-${randomUUID().slice(0, 8)}`,
      payload: z.object({ kind: z.enum(['ok', 'too-large', 'bad-expression']), item: z.string() }),
      plan: ({ payload: { kind, item } }) => {
        switch (kind) {
          case 'ok':
            return {
              writes: [{ Put: { TableName: businessTable, Item: { id: item, n: 1 } } }],
              result: item,
            };
          case 'too-large': // over DynamoDB's 400 KB item limit
            return {
              writes: [
                { Put: { TableName: businessTable, Item: { id: item, blob: 'x'.repeat(410 * 1024) } } },
              ],
            };
          case 'bad-expression':
            return {
              writes: [
                {
                  Update: {
                    TableName: businessTable,
                    Key: { id: item },
                    UpdateExpression: 'SET = :n',
                    ExpressionAttributeValues: { ':n': 1 },
                  },
                },
              ],
            };
        }
      },
    });
    const { handler, metrics } = consumer(undefined, { Write: writes }, dlq.url);
    const message = (groupId: string, kind: string) => ({
      type: 'Write',
      groupId,
      key: randomUUID(),
      payload: { kind, item: randomUUID() },
    });
    const tooLarge = message('L', 'too-large');
    const afterTooLarge = message('L', 'ok');
    const badExpression = message('X', 'bad-expression');
    const ok = message('K', 'ok');
    const ids = {
      tooLarge: await publish(sqs, queue.url, tooLarge),
      afterTooLarge: await publish(sqs, queue.url, afterTooLarge),
      badExpression: await publish(sqs, queue.url, badExpression),
      ok: await publish(sqs, queue.url, ok),
    };

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(4);
    expect(poll.error).toBeUndefined();
    expect(failureIds(poll.response)).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(2);
    expect(metrics.counts[CONSUMER_METRICS.processed]).toBe(2);

    const dead = await dlqCopiesById(dlq, 2);
    expect(dead[ids.tooLarge]).toMatchObject({ group: 'L', errorName: 'InvalidRecordWriteError' });
    expect(dead[ids.badExpression]).toMatchObject({ group: 'X', errorName: 'InvalidRecordWriteError' });
    const recordOf = (m: { key: string }) => readItem(idempotencyTable, `${writes.namespace}#${m.key}`);
    const itemOf = (m: { payload: { item: string } }) => readItem(businessTable, m.payload.item);
    expect(await recordOf(ok)).toMatchObject({ status: 'COMPLETED' });
    expect(await itemOf(ok)).toMatchObject({ n: 1 });
    expect(await recordOf(afterTooLarge)).toMatchObject({ status: 'COMPLETED' });
    expect(await recordOf(tooLarge)).toBeUndefined();
    expect(await itemOf(tooLarge)).toBeUndefined();
    expect(await recordOf(badExpression)).toBeUndefined();
  });

  it('names a write that grows an existing item past 400 KB InvalidRecordWriteError, not a business rule', async () => {
    // DynamoDB cancels such a transaction with a ValidationError reason (not a ValidationException):
    // "Item size to update has exceeded the maximum allowed size".
    const { queue, dlq } = await queuePair();
    const grow = (message: { payload: unknown }) => {
      const { item } = message.payload as { item: string };
      return {
        writes: [
          {
            Update: {
              TableName: businessTable,
              Key: { id: item },
              UpdateExpression: 'SET more = :more',
              ExpressionAttributeValues: { ':more': 'y'.repeat(200 * 1024) },
            },
          },
        ],
      };
    };
    const plain = transactionalOperation({ namespace: `grow-${randomUUID().slice(0, 8)}`, plan: grow });
    const described = transactionalOperation({
      namespace: `grow-described-${randomUUID().slice(0, 8)}`,
      plan: grow,
      describeViolation: () => 'the account is overdrawn',
    });
    const { handler } = consumer(undefined, { Grow: plain, GrowDescribed: described }, dlq.url);
    const item = () => randomUUID();
    const items = { plain: item(), described: item() };
    // Two items of 300 KB: valid on their own, too large once the update adds 200 KB.
    const documents = DynamoDBDocumentClient.from(dynamodb);
    for (const id of Object.values(items)) {
      await documents.send(
        new PutCommand({ TableName: businessTable, Item: { id, blob: 'x'.repeat(300 * 1024) } }),
      );
    }
    const ids = {
      plain: await publish(sqs, queue.url, {
        type: 'Grow',
        groupId: 'P',
        key: randomUUID(),
        payload: { item: items.plain },
      }),
      described: await publish(sqs, queue.url, {
        type: 'GrowDescribed',
        groupId: 'D',
        key: randomUUID(),
        payload: { item: items.described },
      }),
    };

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.error).toBeUndefined();
    expect(failureIds(poll.response)).toEqual([]);
    const dead = await dlqCopiesById(dlq, 2);
    expect({ plain: dead[ids.plain]?.errorName, described: dead[ids.described]?.errorName }).toEqual({
      plain: 'InvalidRecordWriteError',
      described: 'InvalidRecordWriteError',
    });
  });
});

describe('consumer reliability: error names', () => {
  it('fixes the name of every Oncely error class, so a minified bundle keeps it', () => {
    const classes = [
      ...Object.values(consumerExports),
      ...Object.values(idempotencyExports),
      InvalidEnvelopeError,
    ]
      .filter((value): value is typeof OncelyError => typeof value === 'function')
      .filter((value) => value.prototype instanceof OncelyError);
    expect(classes.length).toBeGreaterThan(10);
    const unnamed = classes.filter((type) => {
      const own = Object.getOwnPropertyDescriptor(type, 'errorName')?.value;
      return typeof own !== 'string' || own === '';
    });
    expect(unnamed.map((type) => type.name)).toEqual([]);
    // What a consumer throws comes from oncely/consumer too: the very classes of oncely/idempotency.
    expect(consumerExports.NonRetryableError).toBe(idempotencyExports.NonRetryableError);
    expect(consumerExports.OutcomeUnknownError).toBe(idempotencyExports.OutcomeUnknownError);
    // Instances report it, not their class's name (PastDedupHorizonError is named PastDedupHorizon).
    expect(new consumerExports.PastDedupHorizonError('2020-01-01T00:00:00.000Z', 600).name).toBe(
      PAST_DEDUP_HORIZON,
    );
  });
});
