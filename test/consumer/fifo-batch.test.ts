import { randomUUID } from 'node:crypto';
import { GetQueueAttributesCommand, type SQSClient, StartMessageMoveTaskCommand } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CONSUMER_METRICS,
  type ConsumerLogger,
  type ConsumerOperation,
  DLQ_ATTRIBUTES,
  type FifoBatchOptions,
  fifoBatch,
  IdempotencyStoreUnavailableError,
  type LogFields,
  leaseOperation,
  type ParsedMessage,
  processFifoBatch,
} from '../../lambdas/consumer/index.js';
import { NonRetryableError } from '../../lambdas/idempotency/index.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import { recordingOperation } from '../support/recording-operation.js';
import { type FifoQueue, named, publish, receiveMessages, sendBody } from '../support/sqs.js';
import { pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// The FIFO batch middleware against the SQS emulator, its records in DynamoDB Local or Valkey, with
// in-memory effects: each test owns its queues and its keys (one set of records per store), so they
// run concurrently.

const world = consumerTestWorld();
let sqs: SQSClient;
beforeAll(() => {
  ({ sqs } = world);
});

const queuePair = (maxReceiveCount = 5) => world.queuePair({ maxReceiveCount });

function consumer(
  records: LeaseRecords,
  operations: Record<string, ConsumerOperation>,
  dlqUrl: string,
  overrides: Partial<FifoBatchOptions> = {},
) {
  const metrics = metricsRecorder();
  const handler = middy<SQSEvent, SQSBatchResponse>().use(
    fifoBatch({
      store: records.store(),
      operations,
      deadLetterQueue: { client: sqs, queueUrl: dlqUrl },
      logger: silentLogger(),
      metrics,
      ...overrides,
    }),
  );
  return { handler, metrics };
}

const failureIds = (response: SQSBatchResponse | undefined) =>
  response?.batchItemFailures.map((failure) => failure.itemIdentifier);

describe.concurrent.each(LEASE_STORES)('FIFO batch middleware (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  it('keeps group B going after a failure in group A, skips A’s later records, and redelivers A in order', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation({
      fail: (name, attempt) => {
        if (name === 'A2' && attempt === 1) throw new Error('gateway 503');
      },
    });
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url);
    const ids: Record<string, string> = {};
    for (const [group, name] of [
      ['A', 'A1'],
      ['A', 'A2'],
      ['A', 'A3'],
      ['B', 'B1'],
      ['B', 'B2'],
    ] as const) {
      ids[name] = await publish(sqs, queue.url, named(group, name));
    }

    const first = await pollOnce(sqs, queue, handler);
    expect(first.records).toHaveLength(5);
    expect(failureIds(first.response)).toEqual([ids.A2, ids.A3]);
    expect(ran.filter((name) => name.startsWith('A'))).toEqual(['A1', 'A2']); // A3 did not run
    expect(ran.filter((name) => name.startsWith('B'))).toEqual(['B1', 'B2']);
    expect(first.deleted.sort()).toEqual([ids.A1, ids.B1, ids.B2].sort());
    expect(metrics.counts[CONSUMER_METRICS.skipped]).toBe(1);

    const redelivered = await pollUntil(sqs, queue, handler, (polls) =>
      polls.some((poll) => poll.records.length > 0),
    );
    const redelivery = redelivered.find((poll) => poll.records.length > 0);
    expect(redelivery?.records.map((record) => record.messageId)).toEqual([ids.A2, ids.A3]);
    expect(failureIds(redelivery?.response)).toEqual([]);
    expect(ran.filter((name) => name.startsWith('A'))).toEqual(['A1', 'A2', 'A2', 'A3']);
    expect(metrics.counts[CONSUMER_METRICS.processed]).toBe(5);
  });

  it('runs the same message once across two batches, also in a fresh container', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation();
    const message = named('G', 'once');
    await publish(sqs, queue.url, message);
    const first = consumer(records, { Named: operation }, dlq.url);
    expect(failureIds((await pollOnce(sqs, queue, first.handler)).response)).toEqual([]);

    // The same message again after SQS's dedup window (another dedup id), to a new container (no cache).
    await publish(sqs, queue.url, message, randomUUID());
    const secondContainer = recordingOperation({ namespace: operation.namespace });
    const second = consumer(records, { Named: secondContainer.operation }, dlq.url);
    const again = await pollOnce(sqs, queue, second.handler);
    expect(again.records).toHaveLength(1);
    expect(failureIds(again.response)).toEqual([]);
    expect(second.metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
    expect(ran).toEqual(['once']);
    expect(secondContainer.ran).toEqual([]);
  });

  it('runs a message once when its visibility expires mid-run and a second invocation gets it', async () => {
    const { queue, dlq } = await queuePair();
    let effectStarted!: () => void;
    const started = new Promise<void>((resolve) => (effectStarted = resolve));
    let finishEffect!: () => void;
    const finish = new Promise<void>((resolve) => (finishEffect = resolve));
    let runs = 0;
    const slow = leaseOperation({
      namespace: 'slow',
      mode: 'at-least-once',
      run: async () => {
        runs++;
        effectStarted();
        await finish;
      },
    });
    const { handler, metrics } = consumer(records, { Slow: slow }, dlq.url);
    const id = await publish(sqs, queue.url, { type: 'Slow', groupId: 'G', key: randomUUID(), payload: {} });

    const firstInvocation = pollOnce(sqs, queue, handler);
    await started;
    // The visibility timeout (3 s) expires while the first invocation still runs the effect.
    const concurrent = await pollUntil(sqs, queue, handler, (polls) =>
      polls.some((poll) => poll.records.length > 0),
    );
    expect(failureIds(concurrent.at(-1)?.response)).toEqual([id]);
    expect(metrics.counts[CONSUMER_METRICS.inProgressElsewhere]).toBe(1);

    finishEffect();
    const first = await firstInvocation;
    expect(failureIds(first.response)).toEqual([]);
    // Its receipt handle may be stale by now; whichever delivery comes next is a duplicate.
    await pollUntil(
      sqs,
      queue,
      handler,
      (polls) => first.deleted.includes(id) || polls.some((poll) => poll.deleted.includes(id)),
    );
    expect(runs).toBe(1);
  });

  it('recognises a completed message that reached the DLQ anyway and was redriven with a new dedup id', async () => {
    const { queue, dlq } = await queuePair(1);
    const { ran, operation } = recordingOperation();
    const message = named('G', 'redriven');
    await publish(sqs, queue.url, message);

    // The effect completes, but the delete fails: SQS moves the message to the DLQ on its next receive.
    const { handler } = consumer(records, { Named: operation }, dlq.url);
    expect(failureIds((await pollOnce(sqs, queue, handler, { acknowledge: false })).response)).toEqual([]);
    await pollUntil(sqs, queue, handler, async () => (await visibleMessages(dlq)) === 1);

    await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn }));
    const freshContainer = recordingOperation({ namespace: operation.namespace });
    const fresh = consumer(records, { Named: freshContainer.operation }, dlq.url);
    const [redrive] = await pollUntil(
      sqs,
      queue,
      fresh.handler,
      (polls) => polls.length > 0 && polls[0]?.records.length === 1,
    );
    const record = redrive?.records[0];
    expect(record?.attributes.MessageDeduplicationId).not.toBe(message.key);
    expect(failureIds(redrive?.response)).toEqual([]);
    expect(fresh.metrics.counts[CONSUMER_METRICS.duplicate]).toBe(1);
    expect(ran).toEqual(['redriven']);
    expect(freshContainer.ran).toEqual([]);
  });

  it('sends poison records to the DLQ at once with their error, and their group goes on', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation();
    const { handler, metrics } = consumer(records, { Named: operation }, dlq.url);
    const p1 = named('P', 'P1');
    const invalid = { type: 'Named', groupId: 'P', key: randomUUID(), payload: { name: 7 } };
    const ids = {
      p1: await publish(sqs, queue.url, p1),
      unknownType: await publish(sqs, queue.url, named('P', 'P2', 'constructor')),
      invalidPayload: await publish(sqs, queue.url, invalid),
      conflict: await publish(sqs, queue.url, { ...p1, payload: { name: 'not P1' } }, randomUUID()),
      p5: await publish(sqs, queue.url, named('P', 'P5')),
      notJson: await sendBody(sqs, queue.url, 'not json', 'Q', randomUUID()),
    };

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(6);
    expect(failureIds(poll.response)).toEqual([]);
    expect(ran).toEqual(['P1', 'P5']);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(4);
    expect(metrics.counts[CONSUMER_METRICS.conflict]).toBe(1);

    const dead = await receiveMessages(sqs, dlq.url, 4);
    const errorOf = (messageId: string) => {
      const copy = dead.find(
        (m) => m.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue === messageId,
      );
      const attribute = (name: string) => copy?.MessageAttributes?.[name]?.StringValue;
      return {
        group: copy?.Attributes?.MessageGroupId,
        name: attribute(DLQ_ATTRIBUTES.errorName),
        message: attribute(DLQ_ATTRIBUTES.errorMessage),
        receiveCount: attribute(DLQ_ATTRIBUTES.receiveCount),
      };
    };
    expect(errorOf(ids.unknownType)).toMatchObject({
      group: 'P',
      name: 'UnknownMessageTypeError',
      message: expect.stringContaining('no operation handles message type "constructor"'),
      receiveCount: '1',
    });
    expect(errorOf(ids.invalidPayload)).toMatchObject({
      name: 'InvalidPayloadError',
      message: expect.stringContaining('name: Invalid input: expected string'),
    });
    expect(errorOf(ids.conflict)).toMatchObject({ name: 'IdempotencyConflictError' });
    expect(errorOf(ids.notJson)).toMatchObject({ group: 'Q', name: 'InvalidEnvelopeError' });
    expect(dead.find((m) => m.Body === 'not json')).toBeDefined();
    // Lease mode recorded the rejection: a redrive of the same message is refused without running.
    expect(await records.read(`${operation.namespace}#${invalid.key}`)).toMatchObject({
      status: 'REJECTED',
      error: { name: 'InvalidPayloadError' },
    });
  });

  it('fails a poison record normally when the DLQ cannot take it, and skips the rest of its group', async () => {
    const { queue } = await queuePair();
    const missingDlq = `${queue.url.replace(/[^/]+$/, '')}no-such-dlq.fifo`;
    const { ran, operation } = recordingOperation({
      fail: (name) => {
        if (name === 'X1') throw new NonRetryableError('the gateway refused it');
      },
    });
    const { handler, metrics } = consumer(records, { Named: operation }, missingDlq);
    const x1 = await publish(sqs, queue.url, named('X', 'X1'));
    const x2 = await publish(sqs, queue.url, named('X', 'X2'));

    const poll = await pollOnce(sqs, queue, handler);
    expect(failureIds(poll.response)).toEqual([x1, x2]);
    expect(ran).toEqual(['X1']);
    expect(metrics.counts[CONSUMER_METRICS.dlqSendFailed]).toBe(1);
  });

  it('retries a transient failure, then SQS moves it to the DLQ after maxReceiveCount', async () => {
    const { queue, dlq } = await queuePair(2);
    const receiveCounts: number[] = [];
    const flaky = leaseOperation({
      namespace: 'flaky',
      mode: 'at-least-once',
      run: async (message) => {
        receiveCounts.push(message.receiveCount);
        throw new Error('the downstream service is unavailable');
      },
    });
    const { handler, metrics } = consumer(records, { Flaky: flaky }, dlq.url);
    const key = randomUUID();
    await publish(sqs, queue.url, { type: 'Flaky', groupId: 'G', key, payload: {} });

    await pollUntil(sqs, queue, handler, async () => (await visibleMessages(dlq)) === 1);
    expect(receiveCounts).toEqual([1, 2]);
    expect(metrics.counts[CONSUMER_METRICS.failed]).toBe(2);
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBeUndefined(); // SQS moved it, not the consumer
    expect(await records.read(`flaky#${key}`)).toMatchObject({ status: 'FAILED', attempts: 2 });
  });

  it('fails the whole batch when the store fails, after releasing the leases it took meanwhile', async () => {
    const { queue, dlq } = await queuePair();
    const steps = steppedStore(records.store());
    const { ran, operation } = recordingOperation();
    const a1 = named('A', 'A1');
    const b1 = named('B', 'B1');
    const idOf = (message: { key: string }) => `${operation.namespace}#${message.key}`;
    // A1's acquire is held until B1's has failed: A1 then holds a lease in a batch that is failing.
    // (The failure reaches the batch in microtasks, before A1's answer can come back from the store.)
    let b1Failed!: () => void;
    steps.hold(
      'acquire',
      (call) => call.id === idOf(a1),
      new Promise<void>((resolve) => (b1Failed = resolve)),
    );
    const unreachable = steps.fail(
      'acquire',
      (call) => call.id === idOf(b1),
      () => {
        b1Failed();
        return Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });
      },
    );
    const { handler } = consumer(records, { Named: operation }, dlq.url, { store: steps.store });
    const a2 = named('A', 'A2');
    await publish(sqs, queue.url, a1);
    await publish(sqs, queue.url, a2);
    await publish(sqs, queue.url, b1);

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(3);
    expect(unreachable.failures).toBe(1);
    expect(steps.count('acquire', (call) => call.id === idOf(a1))).toBe(1); // held, then applied
    expect(poll.error).toBeInstanceOf(IdempotencyStoreUnavailableError);
    expect(String(poll.error)).toContain('ECONNREFUSED');
    expect(poll.deleted).toEqual([]);
    expect(ran).toEqual([]);
    expect(await records.read(idOf(a1))).toBeUndefined(); // released, not left IN_PROGRESS
    // A2's lease, taken ahead with A1's when group A started, is given back too.
    expect(await records.read(idOf(a2))).toBeUndefined();
  });

  it('keys a message by its envelope key, by its dedup id when the body has none, or by an extractor', async () => {
    const { queue, dlq } = await queuePair();
    const byDefault = recordingOperation();
    const byOrder = recordingOperation({
      key: (message) => `order-${(message.payload as { name: string }).name}`,
    });
    const { handler } = consumer(
      records,
      { Default: byDefault.operation, ByOrder: byOrder.operation },
      dlq.url,
    );
    const withKey = named('G', 'keyed', 'Default');
    await publish(sqs, queue.url, withKey, randomUUID());
    const { key: _omitted, ...withoutKey } = {
      ...withKey,
      payload: { name: 'unkeyed' },
      publishedAt: new Date().toISOString(),
    };
    const dedupId = randomUUID();
    await sendBody(sqs, queue.url, JSON.stringify(withoutKey), 'G', dedupId);
    const orderName = randomUUID();
    await publish(sqs, queue.url, named('G', orderName, 'ByOrder'));

    expect(failureIds((await pollOnce(sqs, queue, handler)).response)).toEqual([]);
    const statusOf = async (id: string) => (await records.read(id))?.status;
    expect(await statusOf(`${byDefault.operation.namespace}#${withKey.key}`)).toBe('COMPLETED');
    expect(await statusOf(`${byDefault.operation.namespace}#${dedupId}`)).toBe('COMPLETED');
    expect(await statusOf(`${byOrder.operation.namespace}#order-${orderName}`)).toBe('COMPLETED');
  });

  it('processes a batch with processFifoBatch, without Middy, by the same rules', async () => {
    const { queue, dlq } = await queuePair();
    const { ran, operation } = recordingOperation({
      fail: (name) => {
        if (name === 'A1') throw new Error('gateway 503');
      },
    });
    const metrics = metricsRecorder();
    // One options object for the container's life: the consumer keeps its state with it.
    const options: FifoBatchOptions = {
      store: records.store(),
      operations: { Named: operation },
      deadLetterQueue: { client: sqs, queueUrl: dlq.url },
      logger: silentLogger(),
      metrics,
    };
    const handler = (event: SQSEvent, context: Context) => processFifoBatch(event, context, options);
    const a1 = await publish(sqs, queue.url, named('A', 'A1'));
    const a2 = await publish(sqs, queue.url, named('A', 'A2'));
    const b1 = await publish(sqs, queue.url, named('B', 'B1'));
    const poisonId = await publish(sqs, queue.url, named('C', 'C1', 'NoSuchType'));

    const poll = await pollOnce(sqs, queue, handler);
    expect(failureIds(poll.response)).toEqual([a1, a2]);
    expect(poll.deleted.sort()).toEqual([b1, poisonId].sort());
    expect(ran.sort()).toEqual(['A1', 'B1']);
    expect(metrics.counts).toMatchObject({
      [CONSUMER_METRICS.failed]: 1,
      [CONSUMER_METRICS.skipped]: 1,
      [CONSUMER_METRICS.processed]: 1,
      [CONSUMER_METRICS.sentToDlq]: 1,
    });
    const [dead] = await receiveMessages(sqs, dlq.url, 1);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('UnknownMessageTypeError');
  });

  it('reads bodies that are not envelopes with a parse option, keyed by the dedup id; what it throws goes to the DLQ', async () => {
    const { queue, dlq } = await queuePair();
    const payloads: unknown[] = [];
    const operation = leaseOperation({
      namespace: `orders-${randomUUID().slice(0, 8)}`,
      mode: 'at-least-once',
      payload: z.object({ orderId: z.string() }),
      run: (message) => {
        payloads.push({ ...message.payload, groupId: message.groupId, key: message.key });
      },
    });
    class NotAnOrderError extends NonRetryableError {}
    // A raw producer's body: `{ "orderId": … }`, its type implied by the queue, its key the dedup id.
    const parse = (record: SQSRecord): ParsedMessage => {
      const body = JSON.parse(record.body) as { orderId?: unknown };
      if (typeof body.orderId !== 'string') throw new NotAnOrderError('the body has no orderId');
      return {
        type: 'OrderPlaced',
        key: record.attributes.MessageDeduplicationId ?? '',
        payload: { orderId: body.orderId },
        publishedAt: new Date(Number(record.attributes.SentTimestamp)).toISOString(),
      };
    };
    const { handler, metrics } = consumer(records, { OrderPlaced: operation }, dlq.url, { parse });
    const dedupId = randomUUID();
    await sendBody(sqs, queue.url, JSON.stringify({ orderId: 'o-1' }), 'customer-1', dedupId);
    const ids = {
      notJson: await sendBody(sqs, queue.url, 'not json', 'customer-2', randomUUID()),
      notAnOrder: await sendBody(sqs, queue.url, '{"sku":"s-1"}', 'customer-3', randomUUID()),
    };

    const poll = await pollOnce(sqs, queue, handler);
    expect(poll.records).toHaveLength(3);
    expect(failureIds(poll.response)).toEqual([]);
    expect(payloads).toEqual([{ orderId: 'o-1', groupId: 'customer-1', key: dedupId }]);
    expect(await records.read(`${operation.namespace}#${dedupId}`)).toMatchObject({
      status: 'COMPLETED',
    });
    expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(2);
    const dead = await receiveMessages(sqs, dlq.url, 2);
    const copyOf = (messageId: string) => {
      const copy = dead.find(
        (m) => m.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue === messageId,
      );
      return {
        group: copy?.Attributes?.MessageGroupId,
        name: copy?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue,
        message: copy?.MessageAttributes?.[DLQ_ATTRIBUTES.errorMessage]?.StringValue,
      };
    };
    // A plain error from the parser is named for what it means; a non-retryable one keeps its name.
    expect(copyOf(ids.notJson)).toMatchObject({
      group: 'customer-2',
      name: 'UnparsableMessageError',
      message: expect.stringContaining('SyntaxError'),
    });
    expect(copyOf(ids.notAnOrder)).toMatchObject({ group: 'customer-3', name: 'NotAnOrderError' });
  });

  it('logs to a structural logger, each line with its record’s fields', async () => {
    const { queue, dlq } = await queuePair();
    const lines: { level: string; message: string; fields: LogFields }[] = [];
    const line =
      (level: string) =>
      (message: string, ...extra: LogFields[]) =>
        lines.push({ level, message, fields: Object.assign({}, ...extra) });
    const logger: ConsumerLogger = {
      debug: line('debug'),
      info: line('info'),
      warn: line('warn'),
      error: line('error'),
    };
    const operation = leaseOperation({
      namespace: `logged-${randomUUID().slice(0, 8)}`,
      mode: 'at-least-once',
      run: (_message, context) => context.logger.info('charging', { amountCents: 1250 }),
    });
    const { handler } = consumer(records, { Named: operation }, dlq.url, { logger });
    const message = named('G', 'logged');
    const id = await publish(sqs, queue.url, message);
    const poisonId = await publish(sqs, queue.url, named('H', 'poison', 'NoSuchType'));

    expect(failureIds((await pollOnce(sqs, queue, handler)).response)).toEqual([]);
    const recordId = `${operation.namespace}#${message.key}`;
    const fields = { messageId: id, groupId: 'G', messageKey: message.key, messageType: 'Named', recordId };
    expect(lines).toContainEqual({
      level: 'info',
      message: 'charging',
      fields: { ...fields, amountCents: 1250 },
    });
    // The line of its verdict says it.
    expect(lines).toContainEqual({
      level: 'info',
      message: 'processed',
      fields: { ...fields, outcome: 'applied' },
    });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: expect.stringContaining('sent to the DLQ'),
        fields: expect.objectContaining({ messageId: poisonId, groupId: 'H', messageType: 'NoSuchType' }),
      }),
    );
  });
});

async function visibleMessages(queue: FifoQueue): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queue.url, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}
