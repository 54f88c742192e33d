import { randomUUID } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import {
  CONSUMER_METRICS,
  type ConsumerOperation,
  DLQ_ATTRIBUTES,
  fifoBatch,
  leaseOperation,
  processFifoBatch,
  processStandardBatch,
  type StandardBatchOptions,
} from '../../lambdas/consumer/index.js';
import { payloadHash } from '../../lambdas/idempotency/keys.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import {
  createStandardQueueWithDlq,
  eventRecord,
  type FifoQueue,
  localSqsClient,
  named,
  publish,
  receiveMessages,
} from '../support/sqs.js';
import { pollUntil } from '../support/sqs-event-source.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Issue 40 (items 6, 7 and 16): what becomes of a record that keeps failing, or dying, or goes to
// the DLQ from two invocations at once — on a standard queue (`processStandardBatch`) and a FIFO
// one (`fifoBatch`), against the SQS emulator, with the records in DynamoDB Local or Valkey.

const world = consumerTestWorld();
const clients: SQSClient[] = [];
afterAll(() => {
  for (const client of clients) client.destroy();
});

/** Waits for `condition`, polling, or fails after `timeoutMs`. */
async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function standardPair() {
  const pair = await createStandardQueueWithDlq(world.sqs, {
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 50,
  });
  world.own(pair.queue, pair.dlq);
  return pair;
}

/** Sends an envelope to a standard queue (no deduplication id, no group). */
async function send(queue: FifoQueue, key: string, name: string, type = 'Named') {
  const envelope = createEnvelope({ type, groupId: 'tenant', key, payload: { name } });
  await world.sqs.send(
    new SendMessageCommand({ QueueUrl: queue.url, MessageBody: JSON.stringify(envelope) }),
  );
}

/** Receives `count` messages as the event Lambda's event source would hand over. */
async function receiveEvent(queue: FifoQueue, count: number): Promise<SQSEvent> {
  const messages = await receiveMessages(world.sqs, queue.url, count);
  expect(messages).toHaveLength(count);
  return { Records: messages.map((message) => toSqsRecord(message, queue.arn, LOCAL_REGION)) };
}

/** An at-least-once operation that records what it ran, failing every run when `fails`. */
function recordingOperation(fails = false) {
  const runs: string[] = [];
  const operation = leaseOperation<{ name: string }>({
    namespace: `residues-${randomUUID().slice(0, 8)}`,
    mode: 'at-least-once',
    payload: z.object({ name: z.string() }),
    run: async ({ payload: { name } }) => {
      runs.push(name);
      if (fails) throw new Error(`${name}: the downstream service is unavailable`);
      return { name };
    },
  });
  return { runs, operation };
}

function standardOptions(
  records: LeaseRecords,
  operations: Record<string, ConsumerOperation>,
  dlq: FifoQueue,
  client: SQSClient = world.sqs,
  extra: Partial<StandardBatchOptions> = {},
) {
  const metrics = metricsRecorder();
  const consumerOptions: StandardBatchOptions = {
    operations,
    store: records.store(),
    deadLetterQueue: { client, queueUrl: dlq.url },
    logger: silentLogger(),
    metrics,
    ...extra,
  };
  return { consumerOptions, metrics };
}

/**
 * Leaves the record of `key` as `runs` invocations that died in its effect leave it: each took its
 * lease (an acquire, counted) and never wrote again. Their clocks lie in the past, so that each
 * lease has expired for the next and for the consumer.
 */
async function diedInEffect(
  records: LeaseRecords,
  operation: ConsumerOperation,
  key: string,
  payload: unknown,
  runs: number,
) {
  for (let run = 0; run < runs; run++) {
    const past = Date.now() - 60_000 + run * 2_000;
    const store = records.store({ now: () => past });
    const acquired = await store.acquire({
      id: `${operation.namespace}#${key}`,
      payloadHash: payloadHash(payload),
      leaseMs: 1_000,
      takeOverExpiredLease: true,
    });
    expect(acquired.acquired).toBe(true);
  }
}

describe.each(LEASE_STORES)('record residues (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  describe('a copy of a key dead-lettered in its batch (item 6)', () => {
    it('is not run again: acknowledged, the DLQ holding its key once', async () => {
      const pair = await standardPair();
      const { runs, operation } = recordingOperation(true);
      const { consumerOptions, metrics } = standardOptions(
        records,
        { Named: operation },
        pair.dlq,
        world.sqs,
        { maxAttempts: 1 },
      );
      const key = `doomed-${randomUUID()}`;
      await send(pair.queue, key, 'doomed');
      await send(pair.queue, key, 'doomed'); // the producer's retry: another message, the same key
      const event = await receiveEvent(pair.queue, 2);

      const response = await processStandardBatch(event, lambdaContext(), consumerOptions);

      expect(response.batchItemFailures).toEqual([]);
      expect(runs).toEqual(['doomed']); // its one run failed: maxAttempts reached
      expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
      expect(await messagesInQueue(world.sqs, pair.dlq.url)).toBe(1);
      expect(await records.read(`${operation.namespace}#${key}`)).toMatchObject({
        status: 'FAILED',
        attempts: 1,
        attemptsAtDeadLetter: 1,
      });
    });
  });

  describe('two invocations dead-lettering one message at once (item 7)', () => {
    it('send it to a standard DLQ once: the first to claim it sends, the other fails and comes back', async () => {
      const pair = await standardPair();
      const { operation } = recordingOperation();
      await send(pair.queue, `poison-${randomUUID()}`, 'poison', 'NoSuchType');
      const event = await receiveEvent(pair.queue, 1);

      // The first invocation's DLQ send waits until the second has answered.
      let reachedSend!: () => void;
      const atSend = new Promise<void>((resolve) => {
        reachedSend = resolve;
      });
      let secondAnswered!: () => void;
      const answered = new Promise<void>((resolve) => {
        secondAnswered = resolve;
      });
      const held = localSqsClient();
      clients.push(held);
      held.middlewareStack.add(
        (next, context) => async (args) => {
          if (context.commandName === 'SendMessageCommand') {
            reachedSend();
            await answered;
          }
          return next(args);
        },
        { step: 'initialize', name: 'holdDlqSend' },
      );
      const first = standardOptions(records, { Named: operation }, pair.dlq, held);
      const second = standardOptions(records, { Named: operation }, pair.dlq);

      const firstResponse = processStandardBatch(event, lambdaContext(), first.consumerOptions);
      await atSend;
      const secondResponse = await processStandardBatch(event, lambdaContext(), second.consumerOptions);
      secondAnswered();

      expect((await firstResponse).batchItemFailures).toEqual([]);
      expect(secondResponse.batchItemFailures).toHaveLength(1); // back later: the mark then says sent
      expect(await messagesInQueue(world.sqs, pair.dlq.url)).toBe(1);
      // Back again, the message is acknowledged without a second send.
      const again = await processStandardBatch(event, lambdaContext(), second.consumerOptions);
      expect(again.batchItemFailures).toEqual([]);
      const copies = await receiveMessages(world.sqs, pair.dlq.url, 2);
      expect(
        copies.map((copy) => copy.MessageAttributes?.[DLQ_ATTRIBUTES.originalMessageId]?.StringValue),
      ).toEqual([event.Records[0]?.messageId]);
    });
  });

  describe('an at-least-once record whose invocation dies in every run (item 16)', () => {
    it('standard: goes to the DLQ, unrun, once maxAttempts runs died', async () => {
      const pair = await standardPair();
      const { runs, operation } = recordingOperation();
      const key = `crashing-${randomUUID()}`;
      await diedInEffect(records, operation, key, { type: 'Named', payload: { name: 'crashing' } }, 2);
      await send(pair.queue, key, 'crashing');
      const { consumerOptions, metrics } = standardOptions(
        records,
        { Named: operation },
        pair.dlq,
        world.sqs,
        { maxAttempts: 2 },
      );

      const response = await processStandardBatch(
        await receiveEvent(pair.queue, 1),
        lambdaContext(),
        consumerOptions,
      );

      expect(response.batchItemFailures).toEqual([]);
      expect(runs).toEqual([]);
      expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
      const [copy] = await receiveMessages(world.sqs, pair.dlq.url, 1);
      expect(copy?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('AttemptsExhaustedError');
      expect(await records.read(`${operation.namespace}#${key}`)).toMatchObject({ status: 'FAILED' });
    });

    it('FIFO: goes to the DLQ, unrun, in its group, and the records behind it run', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 50 });
      const { runs, operation } = recordingOperation();
      const crashing = named('G', 'crashing');
      const behind = named('G', 'behind');
      await diedInEffect(
        records,
        operation,
        crashing.key,
        { type: crashing.type, payload: crashing.payload },
        2,
      );
      const metrics = metricsRecorder();
      const store = records.store();
      const handler = middy<SQSEvent, SQSBatchResponse>().use(
        fifoBatch({
          store,
          operations: { Named: operation },
          deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
          logger: silentLogger(),
          metrics,
          maxAttempts: 2,
        }),
      );
      await publish(world.sqs, queue.url, crashing);
      await publish(world.sqs, queue.url, behind);
      await pollUntil(
        world.sqs,
        queue,
        handler,
        async () => (await messagesInQueue(world.sqs, queue.url)) === 0,
        {
          timeoutMs: 60_000,
        },
      );
      expect(runs).toEqual(['behind']);
      expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
      expect(await messagesInQueue(world.sqs, dlq.url)).toBe(1);
    });

    it('FIFO: a record behind one whose invocation dies is not charged a run: its lease, taken ahead, counts none', async () => {
      const { dlq } = await world.queuePair();
      const runs: string[] = [];
      const operation = leaseOperation<{ name: string }>({
        namespace: `residues-${randomUUID().slice(0, 8)}`,
        mode: 'at-least-once',
        // The head's effect never ends: its invocation dies there, as far as its records can tell.
        run: ({ payload: { name } }) => {
          runs.push(name);
          return new Promise(() => {});
        },
      });
      const [head, behind] = [
        eventRecord('Named', { name: 'head' }),
        eventRecord('Named', { name: 'behind' }),
      ];
      void processFifoBatch({ Records: [head, behind] }, lambdaContext(), {
        store: records.store(),
        operations: { Named: operation },
        deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
        logger: silentLogger(),
        metrics: metricsRecorder(),
        maxAttempts: 2,
      });
      await until(() => runs.length > 0);
      expect(runs).toEqual(['head']);
      const behindKey = JSON.parse(behind.body).key as string;
      // The group's leases are written together, but the head may start before the write's answer
      // for the one behind it is in: wait (bounded) for that record, then judge it.
      const id = `${operation.namespace}#${behindKey}`;
      const deadline = Date.now() + 10_000;
      let record = await records.read(id);
      while (!record && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        record = await records.read(id);
      }
      expect(record).toMatchObject({ status: 'IN_PROGRESS', attempts: 0 }); // taken ahead, uncounted
    });

    it('FIFO: a record taken ahead whose last run died counts this run before its effect, so a death again counts', async () => {
      const { dlq } = await world.queuePair();
      const runs: string[] = [];
      const operation = leaseOperation<{ name: string }>({
        namespace: `residues-${randomUUID().slice(0, 8)}`,
        mode: 'at-least-once',
        // The second record's effect never ends: its invocation dies there.
        run: ({ payload: { name } }) => {
          runs.push(name);
          return name === 'dying' ? new Promise(() => {}) : name;
        },
      });
      const [head, dying] = [eventRecord('Named', { name: 'head' }), eventRecord('Named', { name: 'dying' })];
      const dyingKey = JSON.parse(dying.body).key as string;
      await diedInEffect(records, operation, dyingKey, { type: 'Named', payload: { name: 'dying' } }, 1);
      void processFifoBatch({ Records: [head, dying] }, lambdaContext(), {
        store: records.store(),
        operations: { Named: operation },
        deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
        logger: silentLogger(),
        metrics: metricsRecorder(),
      });
      await until(() => runs.includes('dying'));
      const record = await records.read(`${operation.namespace}#${dyingKey}`);
      expect(record).toMatchObject({ status: 'IN_PROGRESS', attempts: 2 });
    });
  });
});
