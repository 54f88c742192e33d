import { randomUUID } from 'node:crypto';
import {
  type ChangeMessageVisibilityBatchCommandInput,
  ChangeMessageVisibilityCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { DEFAULT_MAX_CONCURRENT_RECORDS } from '../../lambdas/consumer/environment.js';
import { FifoQueueRecordError, StandardQueueRecordError } from '../../lambdas/consumer/errors.js';
import {
  CONSUMER_METRICS,
  type ConsumerHooks,
  type ConsumerOperation,
  DLQ_ATTRIBUTES,
  type InDoubtHookEvent,
  leaseOperation,
  OutcomeUnknownError,
  processFifoBatch,
  processStandardBatch,
  type RecordHookEvent,
  type StandardBatchOptions,
  standardBatch,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { failRequests, loseAnswers } from '../support/sdk-middleware.js';
import {
  createStandardQueueWithDlq,
  type FifoQueue,
  localSqsClient,
  named,
  publish,
  receiveMessages,
} from '../support/sqs.js';
import { pollUntil } from '../support/sqs-event-source.js';
import { steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Issue 32, item 1 (DESIGN §5.1): `standardBatch` on a standard queue of the SQS emulator, with its
// lease records in DynamoDB Local and in Valkey, through the real clients. The visibility a record
// is given is read from the ChangeMessageVisibilityBatch the consumer sends, never from a time.

const world = consumerTestWorld('consumer-standard');
let table: string;
const clients: SQSClient[] = [];
beforeAll(() => {
  [table] = world.tables as [string];
});
afterAll(() => {
  for (const client of clients) client.destroy();
});

/** A standard queue and DLQ of the test's own (a 30 s visibility timeout unless told). */
async function standardPair(visibilityTimeoutSeconds = 30, maxReceiveCount = 50) {
  const pair = await createStandardQueueWithDlq(world.sqs, { visibilityTimeoutSeconds, maxReceiveCount });
  world.own(pair.queue, pair.dlq);
  return pair;
}

/** An SQS client of the test's own that records the visibility changes it sends. */
function recordingSqs() {
  const client = localSqsClient();
  clients.push(client);
  const changes: ChangeMessageVisibilityBatchCommandInput[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === 'ChangeMessageVisibilityBatchCommand') {
        changes.push(args.input as ChangeMessageVisibilityBatchCommandInput);
      }
      return next(args);
    },
    { step: 'initialize', name: `recordVisibility${Math.random()}` },
  );
  const seconds = () =>
    changes.flatMap(({ Entries = [] }) => Entries.map((entry) => entry.VisibilityTimeout ?? 0));
  return { client, changes, seconds };
}

/** Sends an envelope to a standard queue: no deduplication id; a group only as a fair queue's tenant key. */
async function send(queue: FifoQueue, key: string, name: string, type = 'Named', groupId?: string) {
  const envelope = createEnvelope({ type, groupId: groupId ?? 'tenant', key, payload: { name } });
  await world.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.url,
      MessageBody: JSON.stringify(envelope),
      ...(groupId ? { MessageGroupId: groupId } : {}),
    }),
  );
}

/** Receives `count` messages (real receipt handles) as the event Lambda's event source would hand over. */
async function receiveEvent(queue: FifoQueue, count: number, timeoutMs = 10_000): Promise<SQSEvent> {
  const messages = await receiveMessages(world.sqs, queue.url, count, timeoutMs);
  expect(messages).toHaveLength(count);
  return { Records: messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION)) };
}

/** Waits for `condition`, polling, or fails after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Holds chosen requests of a client before they leave it, until `release`: an outage's requests
 * that hang. Counts how many are held at once.
 */
function holdRequests(client: SQSClient, select: (operation: string) => boolean) {
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let held = 0;
  let maxHeld = 0;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (select(String(context.commandName).replace(/Command$/, ''))) {
        held++;
        maxHeld = Math.max(maxHeld, held);
        await released;
        held--;
      }
      return next(args);
    },
    { step: 'initialize', name: `hold${Math.random()}` },
  );
  return {
    release,
    get maxHeld() {
      return maxHeld;
    },
  };
}

/** `promise`, or a failure after `timeoutMs`: a bounded wait for what must come. */
async function within<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** A lease operation that counts its effects by name, failing those `fails` names. */
function countingOperation(fails: (name: string) => boolean = () => false, gate?: Promise<void>) {
  const effects: string[] = [];
  const runs: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const operation = leaseOperation<{ name: string }>({
    namespace: `standard-${randomUUID().slice(0, 8)}`,
    mode: 'at-least-once',
    run: async ({ payload: { name } }) => {
      runs.push(name);
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        await gate;
        if (fails(name)) throw new Error(`${name}: the downstream service is unavailable`);
        effects.push(name);
        return { name };
      } finally {
        inFlight--;
      }
    },
  });
  return {
    operation,
    effects,
    runs,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
  };
}

/** A consumer's options, with a store made by `store` for each. */
const optionsOn =
  (store: () => LeaseStore) =>
  (
    operations: Record<string, ConsumerOperation>,
    { queue, dlq }: { queue: FifoQueue; dlq: FifoQueue },
    sqs: SQSClient,
    extra: Partial<StandardBatchOptions> = {},
  ) => {
    const metrics = metricsRecorder();
    const consumerOptions: StandardBatchOptions = {
      operations,
      store: store(),
      deadLetterQueue: { client: sqs, queueUrl: dlq.url, sourceQueueUrl: queue.url },
      logger: silentLogger(),
      metrics,
      ...extra,
    };
    return { consumerOptions, metrics };
  };

/** Options whose records are in the file's DynamoDB table. */
const dynamoDbOptions = optionsOn(
  () => new DynamoDBIdempotencyStore({ client: world.dynamodb, tableName: table }),
);

const failedIds = (response: { batchItemFailures: { itemIdentifier: string }[] }) =>
  response.batchItemFailures.map(({ itemIdentifier }) => itemIdentifier).sort();

describe.each(LEASE_STORES)('standardBatch (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);
  const options = optionsOn(() => records.store());

  it('runs copies of one key in a batch once: the others answer from its record', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const counting = countingOperation();
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client);
    const key = `dup-${randomUUID()}`;
    for (let copy = 0; copy < 3; copy++) await send(pair.queue, key, 'once');
    await send(pair.queue, `other-${randomUUID()}`, 'other');

    const response = await processStandardBatch(
      await receiveEvent(pair.queue, 4),
      lambdaContext(),
      consumerOptions,
    );

    expect(response.batchItemFailures).toEqual([]);
    expect(counting.effects.sort()).toEqual(['once', 'other']);
    expect(metrics.counts[CONSUMER_METRICS.processed]).toBe(2);
    expect(metrics.counts[CONSUMER_METRICS.duplicate]).toBe(2);
    expect(recording.changes).toEqual([]); // nothing returns
  });

  it('runs a failing key once in a batch: its copies fail unrun, and come back after the backoff', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const counting = countingOperation((name) => name === 'bad');
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      retryBaseDelaySeconds: 100,
    });
    const key = `bad-${randomUUID()}`;
    for (let copy = 0; copy < 3; copy++) await send(pair.queue, key, 'bad');
    const event = await receiveEvent(pair.queue, 3);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(failedIds(response)).toEqual(event.Records.map((record) => record.messageId).sort());
    expect(counting.runs).toEqual(['bad']);
    expect(metrics.counts[CONSUMER_METRICS.failed]).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.skipped]).toBe(2);
    const seconds = recording.seconds();
    expect(seconds).toHaveLength(3);
    for (const delay of seconds) expect(delay >= 50 && delay <= 100).toBe(true);
  });

  it('a record not started for lack of time comes back within seconds, unrun', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const counting = countingOperation();
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      recordTimeReserveMs: 60_000, // more than the invocation's 30 s
      retryBaseDelaySeconds: 100,
    });
    await send(pair.queue, `late-${randomUUID()}`, 'late');
    await send(pair.queue, `late-${randomUUID()}`, 'later');
    const event = await receiveEvent(pair.queue, 2);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(failedIds(response)).toEqual(event.Records.map((record) => record.messageId).sort());
    expect(counting.runs).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.deferredAtDeadline]).toBe(2);
    for (const delay of recording.seconds()) expect(delay >= 1 && delay <= 2).toBe(true);
    expect(recording.seconds()).toHaveLength(2);
  });

  it('takes a batch of 100 records, 40 of them copies, with one effect per key and at most the bound at once', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const counting = countingOperation();
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      maxConcurrentRecords: 10,
    });
    const keys = Array.from({ length: 60 }, (_, index) => ({
      key: `many-${index}-${randomUUID()}`,
      name: `k${index}`,
    }));
    const copies = [...keys, ...keys.slice(0, 40)];
    await Promise.all(copies.map(({ key, name }) => send(pair.queue, key, name)));
    // A batching window's worth: Lambda hands a standard queue's consumer up to 10,000 records.
    const event = await receiveEvent(pair.queue, 100, 20_000);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(response.batchItemFailures).toEqual([]);
    expect(counting.effects.sort()).toEqual(keys.map(({ name }) => name).sort());
    expect(counting.maxInFlight).toBeLessThanOrEqual(10);
    expect(metrics.counts[CONSUMER_METRICS.processed]).toBe(60);
    expect(metrics.counts[CONSUMER_METRICS.duplicate]).toBe(40);
  });

  it('a copy whose key is in flight on another invocation comes back within seconds, then answers from the record', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const counting = countingOperation(() => false, gate);
    const first = options({ Named: counting.operation }, pair, recording.client);
    const second = options({ Named: counting.operation }, pair, recording.client);
    const key = `concurrent-${randomUUID()}`;
    await send(pair.queue, key, 'once');
    await send(pair.queue, key, 'once');
    const [one, two] = (await receiveEvent(pair.queue, 2)).Records as [
      SQSEvent['Records'][0],
      SQSEvent['Records'][0],
    ];

    const running = processStandardBatch({ Records: [one] }, lambdaContext(), first.consumerOptions);
    await until(() => counting.inFlight === 1);
    const answered = await processStandardBatch({ Records: [two] }, lambdaContext(), second.consumerOptions);

    expect(failedIds(answered)).toEqual([two.messageId]);
    expect(second.metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);
    // Soon (1–2 s), not the queue's 30 s visibility timeout.
    expect(recording.changes).toHaveLength(1);
    expect(recording.changes[0]?.Entries?.[0]?.ReceiptHandle).toBe(two.receiptHandle);
    const [seconds = 0] = recording.seconds();
    expect(seconds).toBeGreaterThanOrEqual(1);
    expect(seconds).toBeLessThanOrEqual(2);
    open();
    expect((await running).batchItemFailures).toEqual([]);

    // Back well before its 30 s visibility timeout: its redelivery answers from the record.
    const again = await receiveEvent(pair.queue, 1, 10_000);
    expect(again.Records[0]?.messageId).toBe(two.messageId);
    const settled = await processStandardBatch(again, lambdaContext(), second.consumerOptions);
    expect(settled.batchItemFailures).toEqual([]);
    expect(second.metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
    expect(counting.effects).toEqual(['once']);
  });

  it('copies skipped behind a copy whose key is held elsewhere come back with it, within seconds (issue 40, item 5)', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const counting = countingOperation(() => false, gate);
    const first = options({ Named: counting.operation }, pair, recording.client);
    // A failure's backoff far from the 1–2 s of a key held elsewhere, so that the two cannot be confused.
    const second = options({ Named: counting.operation }, pair, recording.client, {
      retryBaseDelaySeconds: 100,
    });
    const key = `held-${randomUUID()}`;
    for (let copy = 0; copy < 3; copy++) await send(pair.queue, key, 'once');
    const [one, ...others] = (await receiveEvent(pair.queue, 3)).Records as [
      SQSEvent['Records'][0],
      ...SQSEvent['Records'],
    ];

    const running = processStandardBatch({ Records: [one] }, lambdaContext(), first.consumerOptions);
    await until(() => counting.inFlight === 1);
    const answered = await processStandardBatch({ Records: others }, lambdaContext(), second.consumerOptions);

    expect(failedIds(answered)).toEqual(others.map((record) => record.messageId).sort());
    expect(second.metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);
    expect(second.metrics.counts[CONSUMER_METRICS.skipped]).toBe(1);
    const seconds = recording.seconds();
    expect(seconds).toHaveLength(2);
    for (const delay of seconds) expect(delay >= 1 && delay <= 2).toBe(true);
    open();
    expect((await running).batchItemFailures).toEqual([]);
  });

  describe('with inFlightWaitMs, a copy whose key is in flight elsewhere', () => {
    /** Two consumers of one key at once: the first held in its effect until `open`, the second's reads counted. */
    async function heldKey(inFlightWaitMs: number, failReads = false) {
      const pair = await standardPair(30);
      const recording = recordingSqs();
      let open: () => void = () => {};
      const gate = new Promise<void>((resolve) => {
        open = resolve;
      });
      const counting = countingOperation(() => false, gate);
      const first = options({ Named: counting.operation }, pair, recording.client);
      const stepped = steppedStore(records.store());
      const failing = failReads ? stepped.fail('read') : undefined;
      const second = options({ Named: counting.operation }, pair, recording.client, {
        store: stepped.store,
        inFlightWaitMs,
      });
      const key = `waited-${randomUUID()}`;
      await send(pair.queue, key, 'once');
      await send(pair.queue, key, 'once');
      const [one, two] = (await receiveEvent(pair.queue, 2)).Records as [
        SQSEvent['Records'][0],
        SQSEvent['Records'][0],
      ];
      const running = processStandardBatch({ Records: [one] }, lambdaContext(), first.consumerOptions);
      await until(() => counting.inFlight === 1);
      return {
        recording,
        counting,
        second,
        two,
        running,
        open,
        failing,
        get reads() {
          return stepped.count('read');
        },
        done: async () => {
          open();
          expect((await running).batchItemFailures).toEqual([]);
        },
      };
    }

    it('waits for it, then answers from its record: acknowledged, no visibility change, one effect', async () => {
      const held = await heldKey(20_000);
      const answer = processStandardBatch(
        { Records: [held.two] },
        lambdaContext(),
        held.second.consumerOptions,
      );
      await until(() => held.reads >= 2, 10_000); // it is waiting, reading the record
      held.open();

      expect((await answer).batchItemFailures).toEqual([]);
      expect(held.second.metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
      expect(held.second.metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBeUndefined();
      expect(held.recording.changes).toEqual([]);
      await held.done();
      expect(held.counting.effects).toEqual(['once']);
    });

    it('stops at its bound: the copy fails and comes back soon', async () => {
      const held = await heldKey(300);

      const answer = await processStandardBatch(
        { Records: [held.two] },
        lambdaContext(),
        held.second.consumerOptions,
      );

      expect(answer.batchItemFailures).toEqual([{ itemIdentifier: held.two.messageId }]);
      expect(held.reads).toBeGreaterThanOrEqual(1);
      expect(held.second.metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);
      const [seconds = 0] = held.recording.seconds();
      expect(seconds >= 1 && seconds <= 2).toBe(true);
      await held.done();
    });

    it('stops at a read that fails: the copy fails and comes back soon', async () => {
      const held = await heldKey(60_000, true);

      const answer = await processStandardBatch(
        { Records: [held.two] },
        lambdaContext(),
        held.second.consumerOptions,
      );

      expect(answer.batchItemFailures).toEqual([{ itemIdentifier: held.two.messageId }]);
      expect(held.failing?.failures).toBe(1);
      expect(held.second.metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);
      await held.done();
    });

    it("does not wait past the invocation's deadline less the reserve", async () => {
      const held = await heldKey(60_000);

      // 1.5 s left and a 1 s reserve: at most half a second of waiting, whatever inFlightWaitMs says.
      const answer = await processStandardBatch({ Records: [held.two] }, lambdaContext(1_500), {
        ...held.second.consumerOptions,
        recordTimeReserveMs: 1_000,
      });

      expect(answer.batchItemFailures).toEqual([{ itemIdentifier: held.two.messageId }]);
      expect(held.second.metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);
      await held.done();
    });
  });

  it('gives a failing record a growing, capped, jittered visibility; the others of its batch succeed', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    const counting = countingOperation((name) => name.startsWith('bad'));
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      retryBaseDelaySeconds: 100,
      retryMaxDelaySeconds: 300,
    });
    for (let index = 0; index < 8; index++) await send(pair.queue, `bad-${randomUUID()}`, `bad-${index}`);
    await send(pair.queue, `good-${randomUUID()}`, 'good-1');
    await send(pair.queue, `good-${randomUUID()}`, 'good-2');

    const seen: number[][] = [];
    for (let receive = 1; receive <= 3; receive++) {
      const event = await receiveEvent(pair.queue, receive === 1 ? 10 : 8);
      expect(
        event.Records.every((record) => record.attributes.ApproximateReceiveCount === String(receive)),
      ).toBe(true);
      const response = await processStandardBatch(event, lambdaContext(), consumerOptions);
      const bad = event.Records.filter((record) => JSON.parse(record.body).payload.name.startsWith('bad'));
      expect(failedIds(response)).toEqual(bad.map((record) => record.messageId).sort());
      expect(
        recording.changes
          .at(-1)
          ?.Entries?.map((entry) => entry.ReceiptHandle)
          .sort(),
      ).toEqual(bad.map((record) => record.receiptHandle).sort());
      seen.push(recording.seconds().slice(-8));
      // The test stands for time passing: it makes them visible again at once.
      await Promise.all(
        bad.map((record) =>
          world.sqs.send(
            new ChangeMessageVisibilityCommand({
              QueueUrl: pair.queue.url,
              ReceiptHandle: record.receiptHandle,
              VisibilityTimeout: 0,
            }),
          ),
        ),
      );
    }
    const [first = [], second = [], third = []] = seen;
    // Equal jitter between half the ceiling and all of it: 100 s, then 200 s, then capped at 300 s.
    for (const seconds of first) expect(seconds >= 50 && seconds <= 100).toBe(true);
    for (const seconds of second) expect(seconds >= 100 && seconds <= 200).toBe(true);
    for (const seconds of third) expect(seconds >= 150 && seconds <= 300).toBe(true);
    expect(new Set([...first, ...second, ...third]).size).toBeGreaterThan(1); // spread, not one value
    expect(counting.effects.sort()).toEqual(['good-1', 'good-2']);
    expect(metrics.counts[CONSUMER_METRICS.failed]).toBe(24);
  });

  it('caps a retry delay near 12 hours at what is left of them since the receive: SQS applies it (issue 40, item 3)', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    const counting = countingOperation((name) => name === 'bad');
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      retryBaseDelaySeconds: 43_200,
      retryMaxDelaySeconds: 43_200,
    });
    await send(pair.queue, `bad-${randomUUID()}`, 'bad');
    const event = await receiveEvent(pair.queue, 1);

    // The jitter's top draw: the longest backoff, 43,200 s from now, which is past 12 hours from the
    // receive (the emulator refuses it as SQS does).
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.999_999);
    const response = await processStandardBatch(event, lambdaContext(), consumerOptions).finally(() =>
      random.mockRestore(),
    );

    expect(failedIds(response)).toEqual([event.Records[0]?.messageId]);
    expect(metrics.counts[CONSUMER_METRICS.visibilityChangeFailed]).toBeUndefined();
    const [seconds = 0] = recording.seconds();
    expect(seconds).toBeLessThan(43_200);
    expect(seconds).toBeGreaterThan(43_200 - 600); // the receive was moments ago: nearly all of it is left
  });

  it('bounds the end of a failed batch, and answers before the deadline while its requests hang (issue 40, item 4)', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    const heldChanges = holdRequests(
      recording.client,
      (operation) => operation === 'ChangeMessageVisibilityBatch',
    );
    // The store's keepUntil writes hang until the end: each one asked for is held at once.
    const stepped = steppedStore(records.store());
    let releaseWrites: () => void = () => {};
    stepped.hold(
      'keepUntil',
      () => true,
      new Promise<void>((resolve) => {
        releaseWrites = resolve;
      }),
    );
    const counting = countingOperation(() => true);
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      store: stepped.store,
      maxConcurrentRecords: 2,
    });
    await Promise.all(
      Array.from({ length: 30 }, (_, index) => send(pair.queue, `down-${randomUUID()}`, `r${index}`)),
    );
    const event = await receiveEvent(pair.queue, 30, 20_000);

    try {
      // 3 s left: an outage's requests, which hang, must not keep the batch from answering.
      const response = await within(
        processStandardBatch(event, lambdaContext(3_000), consumerOptions),
        20_000,
      );

      expect(failedIds(response)).toEqual(event.Records.map((record) => record.messageId).sort());
      // The records' bound, not one request per record at once: 2 keepUntil writes, 2 visibility batches.
      expect(stepped.count('keepUntil')).toBe(2);
      expect(heldChanges.maxHeld).toBe(2);
      // What the deadline left unsent is counted: 28 writes, and the third batch's 10 records.
      expect(metrics.counts[CONSUMER_METRICS.recordLifeNotExtended]).toBe(28);
      expect(metrics.counts[CONSUMER_METRICS.visibilityChangeFailed]).toBe(10);
    } finally {
      releaseWrites();
      heldChanges.release();
    }
  });

  it('a visibility change that fails leaves the record failed: it comes back after the visibility timeout', async () => {
    const pair = await standardPair(1);
    const recording = recordingSqs();
    const failing = failRequests(
      recording.client,
      (operation) => operation === 'ChangeMessageVisibilityBatch',
    );
    const counting = countingOperation((name) => name === 'bad');
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      retryBaseDelaySeconds: 600,
    });
    await send(pair.queue, `bad-${randomUUID()}`, 'bad');
    const event = await receiveEvent(pair.queue, 1);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(failedIds(response)).toEqual([event.Records[0]?.messageId]);
    expect(failing.failures).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.visibilityChangeFailed]).toBe(1);
    // Not the 5–10 minutes it asked for: the queue's 1 s visibility timeout brings it back.
    const again = await receiveEvent(pair.queue, 1);
    expect(again.Records[0]?.messageId).toBe(event.Records[0]?.messageId);
  });

  it('a visibility change applied whose answer was lost is retried by the SDK: applied, not counted failed', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    const lost = loseAnswers(recording.client, (operation) => operation === 'ChangeMessageVisibilityBatch');
    const counting = countingOperation((name) => name === 'bad');
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      retryBaseDelaySeconds: 1,
    });
    await send(pair.queue, `bad-${randomUUID()}`, 'bad');
    const event = await receiveEvent(pair.queue, 1);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(failedIds(response)).toEqual([event.Records[0]?.messageId]);
    expect(lost.lost).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.visibilityChangeFailed]).toBeUndefined();
    // Back within its 1 s delay, long before the queue's 30 s: the change was applied.
    const again = await receiveEvent(pair.queue, 1, 10_000);
    expect(again.Records[0]?.messageId).toBe(event.Records[0]?.messageId);
  });

  it('by default runs a batch of 30 records all at once: the bound is the batch, up to 100 (issue 40, item 9)', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const counting = countingOperation(() => false, gate);
    const { consumerOptions } = options({ Named: counting.operation }, pair, recording.client);
    expect(consumerOptions.maxConcurrentRecords).toBeUndefined();
    await Promise.all(
      Array.from({ length: 30 }, (_, index) => send(pair.queue, `wide-${randomUUID()}`, `r${index}`)),
    );
    const running = processStandardBatch(
      await receiveEvent(pair.queue, 30, 20_000),
      lambdaContext(),
      consumerOptions,
    );

    // With a bound of 10, the other 20 would wait for a slot, and this would time out.
    await until(() => counting.inFlight === 30, 20_000);
    open();

    expect((await running).batchItemFailures).toEqual([]);
    expect(counting.effects).toHaveLength(30);
    expect(DEFAULT_MAX_CONCURRENT_RECORDS).toBe(100);
  });

  it('runs at most maxConcurrentRecords records at once', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const counting = countingOperation(() => false, gate);
    const { consumerOptions } = options({ Named: counting.operation }, pair, recording.client, {
      maxConcurrentRecords: 3,
    });
    for (let index = 0; index < 10; index++) await send(pair.queue, `bound-${randomUUID()}`, `r${index}`);

    const running = processStandardBatch(
      await receiveEvent(pair.queue, 10),
      lambdaContext(),
      consumerOptions,
    );
    await until(() => counting.inFlight === 3);
    // A round trip to the store: a fourth record's lease, were it being taken, would be answered by then.
    await records.read('no-such-record');
    for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(counting.inFlight).toBe(3); // the others wait for a slot
    open();

    expect((await running).batchItemFailures).toEqual([]);
    expect(counting.maxInFlight).toBe(3);
    expect(counting.effects).toHaveLength(10);
  });

  it('sends a record that failed maxAttempts times to the standard DLQ, without a deduplication id', async () => {
    const pair = await standardPair(30);
    const recording = recordingSqs();
    const counting = countingOperation(() => true);
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client, {
      maxAttempts: 2,
      retryBaseDelaySeconds: 1,
      retryMaxDelaySeconds: 1,
    });
    await send(pair.queue, `doomed-${randomUUID()}`, 'doomed', 'Named', 'tenant-a');

    const first = await receiveEvent(pair.queue, 1);
    expect(first.Records[0]?.attributes.MessageGroupId).toBe('tenant-a'); // a fair queue's tenant key
    expect(
      (await processStandardBatch(first, lambdaContext(), consumerOptions)).batchItemFailures,
    ).toHaveLength(1);
    const second = await receiveEvent(pair.queue, 1); // back after its 1 s delay
    expect((await processStandardBatch(second, lambdaContext(), consumerOptions)).batchItemFailures).toEqual(
      [],
    );

    const [copy] = await receiveMessages(world.sqs, pair.dlq.url, 1);
    expect(copy?.Body).toBe(first.Records[0]?.body);
    expect(copy?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('AttemptsExhaustedError');
    expect(copy?.Attributes?.MessageDeduplicationId).toBeUndefined();
    expect(copy?.Attributes?.MessageGroupId).toBe('tenant-a');
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    expect(counting.effects).toEqual([]);
  });

  it('calls the hooks once each, with the message and its idempotency key; a throwing hook fails nothing', async () => {
    const pair = await standardPair();
    const calls: { hook: string; key: string; messageId: string; reason?: string }[] = [];
    const note =
      (hook: string) =>
      ({
        idempotencyKey,
        message,
        reason,
      }: InDoubtHookEvent | (RecordHookEvent & { reason?: undefined })) => {
        calls.push({ hook, key: idempotencyKey, messageId: message.messageId, reason: reason?.name });
        if (hook === 'onComplete') throw new Error('a hook that throws');
      };
    const hooks: ConsumerHooks = {
      onClaim: note('onClaim'),
      onDuplicate: note('onDuplicate'),
      onComplete: note('onComplete'),
      onInDoubt: note('onInDoubt'),
    };
    const counting = countingOperation();
    const payment = leaseOperation({
      namespace: `standard-pay-${randomUUID().slice(0, 8)}`,
      mode: 'at-most-once',
      run: () => {
        throw new OutcomeUnknownError('the payment API did not answer');
      },
    });
    const { consumerOptions, metrics } = options(
      { Named: counting.operation, Pay: payment },
      pair,
      world.sqs,
      {
        hooks,
      },
    );
    const key = `hooked-${randomUUID()}`;
    await send(pair.queue, key, 'once');
    await send(pair.queue, key, 'once');
    await send(pair.queue, `pay-${randomUUID()}`, 'pay', 'Pay');
    const event = await receiveEvent(pair.queue, 3);
    const named = event.Records.filter((record) => JSON.parse(record.body).type === 'Named');
    const pay = event.Records.find((record) => JSON.parse(record.body).type === 'Pay');

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(response.batchItemFailures).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.inDoubt]).toBe(1);
    const namedKey = `${counting.operation.namespace}#${key}`;
    const payKey = `${payment.namespace}#${JSON.parse(pay?.body ?? '{}').key}`;
    const sorted = [...calls].sort((a, b) => `${a.hook}${a.key}`.localeCompare(`${b.hook}${b.key}`));
    expect(sorted).toEqual([
      { hook: 'onClaim', key: namedKey, messageId: named[0]?.messageId, reason: undefined },
      { hook: 'onClaim', key: payKey, messageId: pay?.messageId, reason: undefined },
      { hook: 'onComplete', key: namedKey, messageId: named[0]?.messageId, reason: undefined },
      { hook: 'onDuplicate', key: namedKey, messageId: named[1]?.messageId, reason: undefined },
      { hook: 'onInDoubt', key: payKey, messageId: pay?.messageId, reason: 'OutcomeUnknownError' },
    ]);
  });

  it('fifoBatch calls the same hooks', async () => {
    const { queue, dlq } = await world.queuePair();
    const calls: string[] = [];
    const counting = countingOperation();
    const handler = (event: SQSEvent) =>
      processFifoBatch(event, lambdaContext(), {
        operations: { Named: counting.operation },
        store: records.store(),
        deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
        logger: silentLogger(),
        metrics: metricsRecorder(),
        hooks: {
          onClaim: ({ message }) =>
            calls.push(`claim ${message.payload && (message.payload as { name: string }).name}`),
          onComplete: ({ idempotencyKey }) => calls.push(`complete ${idempotencyKey}`),
        },
      });
    const message = named('g', 'fifo-hooked');
    await publish(world.sqs, queue.url, message);

    await pollUntil(world.sqs, queue, handler, () => counting.effects.length === 1);

    expect(calls).toEqual(['claim fifo-hooked', `complete ${counting.operation.namespace}#${message.key}`]);
  });

  it('a send to the standard DLQ that fails leaves the poison record failed, back after its backoff', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const failing = failRequests(recording.client, (operation) => operation === 'SendMessage');
    const { consumerOptions, metrics } = options(
      { Named: countingOperation().operation },
      pair,
      recording.client,
      {
        retryBaseDelaySeconds: 100,
      },
    );
    await send(pair.queue, `poison-${randomUUID()}`, 'poison', 'NoSuchType');
    const event = await receiveEvent(pair.queue, 1);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(failedIds(response)).toEqual([event.Records[0]?.messageId]);
    expect(failing.failures).toBeGreaterThan(0);
    expect(metrics.counts[CONSUMER_METRICS.dlqSendFailed]).toBe(1);
    const [seconds = 0] = recording.seconds();
    expect(seconds >= 50 && seconds <= 100).toBe(true);
  });

  it('a send to the standard DLQ whose answer is lost leaves two copies there: no deduplication id drops the retry', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const lost = loseAnswers(recording.client, (operation) => operation === 'SendMessage');
    const { consumerOptions, metrics } = options(
      { Named: countingOperation().operation },
      pair,
      recording.client,
    );
    await send(pair.queue, `poison-${randomUUID()}`, 'poison', 'NoSuchType');
    const event = await receiveEvent(pair.queue, 1);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(response.batchItemFailures).toEqual([]);
    expect(lost.lost).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    const copies = await receiveMessages(world.sqs, pair.dlq.url, 2);
    expect(
      copies.map((copy) => copy.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue),
    ).toEqual([event.Records[0]?.messageId, event.Records[0]?.messageId]);
    expect(copies.map((copy) => copy.Body)).toEqual([event.Records[0]?.body, event.Records[0]?.body]);
  });

  it("without the source queue's URL sets no visibility: a failed record comes back after the visibility timeout", async () => {
    const pair = await standardPair(1);
    const recording = recordingSqs();
    const counting = countingOperation((name) => name === 'bad');
    const { consumerOptions, metrics } = options({ Named: counting.operation }, pair, recording.client);
    consumerOptions.deadLetterQueue = { client: recording.client, queueUrl: pair.dlq.url };
    await send(pair.queue, `bad-${randomUUID()}`, 'bad');
    const event = await receiveEvent(pair.queue, 1);

    const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

    expect(failedIds(response)).toEqual([event.Records[0]?.messageId]);
    expect(recording.changes).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.visibilityChangeFailed]).toBeUndefined();
    expect((await receiveEvent(pair.queue, 1)).Records[0]?.messageId).toBe(event.Records[0]?.messageId);
  });

  it('is what a standard queue needs: fifoBatch fails the batch of a record from one (StandardQueueRecordError)', async () => {
    const pair = await standardPair();
    const { consumerOptions } = options({ Named: countingOperation().operation }, pair, world.sqs);
    await send(pair.queue, `nogroup-${randomUUID()}`, 'x');
    const event = await receiveEvent(pair.queue, 1);

    await expect(processFifoBatch(event, lambdaContext(), consumerOptions)).rejects.toBeInstanceOf(
      StandardQueueRecordError,
    );
    expect((await processStandardBatch(event, lambdaContext(), consumerOptions)).batchItemFailures).toEqual(
      [],
    );
  });
});

// Transactional mode commits its record with its writes in one DynamoDB transaction: it takes no Valkey store.
describe('standardBatch in transactional mode (records in DynamoDB)', () => {
  const options = dynamoDbOptions;

  it('runs copies of one key in a batch once in transactional mode too', async () => {
    const pair = await standardPair();
    const recording = recordingSqs();
    const planned: string[] = [];
    const ledger = transactionalOperation<{ name: string }>({
      namespace: `standard-tx-${randomUUID().slice(0, 8)}`,
      plan: ({ payload: { name } }) => {
        planned.push(name);
        return { writes: [] };
      },
    });
    const { consumerOptions, metrics } = options({ Named: ledger }, pair, recording.client);
    const key = `dup-${randomUUID()}`;
    for (let copy = 0; copy < 3; copy++) await send(pair.queue, key, 'credit');

    const response = await processStandardBatch(
      await receiveEvent(pair.queue, 3),
      lambdaContext(),
      consumerOptions,
    );

    expect(response.batchItemFailures).toEqual([]);
    expect(metrics.counts[CONSUMER_METRICS.processed]).toBe(1);
    expect(metrics.counts[CONSUMER_METRICS.duplicate]).toBe(2);
    expect(planned).toEqual(['credit']);
  });
});

describe('standardBatch, before any record reaches a store', () => {
  const options = dynamoDbOptions;

  it('checks its options when it is made', () => {
    const operations = { Named: countingOperation().operation };
    expect(() => standardBatch({ operations, maxConcurrentRecords: 0 })).toThrow(
      /maxConcurrentRecords must be a positive integer/,
    );
    expect(() => standardBatch({ operations, retryBaseDelaySeconds: 1.5 })).toThrow(/retryBaseDelaySeconds/);
    expect(() => standardBatch({ operations, retryMaxDelaySeconds: 43_201 })).toThrow(/at most 43200/);
    expect(() => standardBatch({ operations, inFlightWaitMs: -1 })).toThrow(/inFlightWaitMs/);
    expect(() =>
      standardBatch({ operations, inFlightWaitMs: 0, retryMaxDelaySeconds: 43_200 }),
    ).not.toThrow();
  });

  it('refuses a batch from a FIFO queue, whose groups it would run out of order', async () => {
    const pair = await standardPair();
    const { consumerOptions } = options({ Named: countingOperation().operation }, pair, world.sqs);
    await send(pair.queue, `fifo-${randomUUID()}`, 'x');
    const event = await receiveEvent(pair.queue, 1);
    const fromFifo = {
      Records: event.Records.map((record) => ({
        ...record,
        eventSourceARN: `${record.eventSourceARN}.fifo`,
      })),
    };

    await expect(processStandardBatch(fromFifo, lambdaContext(), consumerOptions)).rejects.toBeInstanceOf(
      FifoQueueRecordError,
    );
  });

  it('is the only middleware that takes a fair queue: fifoBatch refuses its records, groups and all', async () => {
    const pair = await standardPair();
    const counting = countingOperation();
    const { consumerOptions } = options({ Named: counting.operation }, pair, world.sqs);
    await send(pair.queue, `fair-${randomUUID()}`, 'x', 'Named', 'tenant-a');
    const event = await receiveEvent(pair.queue, 1);
    expect(event.Records[0]?.attributes.MessageGroupId).toBe('tenant-a');

    const refused = processFifoBatch(event, lambdaContext(), consumerOptions);
    await expect(refused).rejects.toBeInstanceOf(StandardQueueRecordError);
    await expect(refused).rejects.toThrow(/comes from the standard queue .*: fifoBatch .* Use standardBatch/);
    expect(counting.effects).toEqual([]);
  });
});
