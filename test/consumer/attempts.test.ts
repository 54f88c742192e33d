import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Message, SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseEnvelope } from '../../lambdas/common/envelope.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { readConsumerEnvironment } from '../../lambdas/consumer/environment.js';
import {
  CONSUMER_METRICS,
  type ConsumerOperation,
  DLQ_ATTRIBUTES,
  type FifoBatchOptions,
  fifoBatch,
  leaseOperation,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import { payloadHash } from '../../lambdas/idempotency/keys.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { failRequests, loseAnswers } from '../support/sdk-middleware.js';
import { type FifoQueue, localSqsClient, named, publish, receiveMessages } from '../support/sqs.js';
import { pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { type StepCall, steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// Issue 30, item 7 (DESIGN §5, "A record's own attempts"): the consumer, not SQS's receive count,
// decides when a record has failed enough. A group's head that keeps failing is dead-lettered by
// the consumer after `maxAttempts` failed runs of its own, in its group, and the records skipped
// behind it — whose receive counts rose with its — run after it, in order, none dead-lettered.
// The queues keep SQS's former default of 5 receives, so that today's code shows the bug.

const world = consumerTestWorld('consumer-attempts');
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
/** The DynamoDB-only tests' table: the transactional one's, and the one that faults DynamoDB's requests. */
let table: string;
beforeAll(() => {
  ({ dynamodb, sqs } = world);
  [table] = world.tables as [string];
});

/** A lease-mode operation that records the names it ran, and fails those `fails` says to. */
function recordingOperation(fails: (name: string, run: number) => boolean) {
  const ran: string[] = [];
  const operation = leaseOperation({
    namespace: `attempts-${randomUUID().slice(0, 8)}`,
    mode: 'at-least-once',
    payload: z.object({ name: z.string() }),
    run: async ({ payload: { name } }) => {
      ran.push(name);
      if (fails(name, ran.filter((other) => other === name).length)) {
        throw new Error(`${name}: the downstream service is unavailable`);
      }
      return { ran: name };
    },
  });
  return { ran, operation };
}

function consumer(
  operations: Record<string, ConsumerOperation>,
  dlqUrl: string,
  maxAttempts: number,
  { store, dlqClient = sqs }: { store: LeaseStore; dlqClient?: SQSClient },
) {
  const metrics = metricsRecorder();
  const options: FifoBatchOptions = {
    store,
    operations,
    deadLetterQueue: { client: dlqClient, queueUrl: dlqUrl },
    logger: silentLogger(),
    metrics,
    maxAttempts,
  };
  return { handler: middy<SQSEvent, SQSBatchResponse>().use(fifoBatch(options)), metrics, store };
}

/** Polls until the queue holds nothing more: every message acknowledged or dead-lettered. */
const drained = (queue: FifoQueue) => async () => (await messagesInQueue(sqs, queue.url)) === 0;

/** Up to `expected` of the DLQ's messages (received, not deleted: each is received once per test). */
const deadLettered = (dlq: FifoQueue, expected: number): Promise<Message[]> =>
  receiveMessages(sqs, dlq.url, expected);
const nameOf = (message: Message) => (parseEnvelope(message.Body ?? '').payload as { name: string }).name;

describe('a record’s own attempts (maxAttempts)', () => {
  it('is a positive integer, from the option or MAX_ATTEMPTS', () => {
    expect(() => fifoBatch({ operations: {}, maxAttempts: 0 })).toThrow(
      'maxAttempts must be a positive integer, not 0.',
    );
    expect(readConsumerEnvironment(['maxAttempts'], { MAX_ATTEMPTS: '7' })).toEqual({ maxAttempts: 7 });
    expect(readConsumerEnvironment(['maxAttempts'], {})).toEqual({ maxAttempts: undefined });
    expect(() => readConsumerEnvironment(['maxAttempts'], { MAX_ATTEMPTS: '0' })).toThrow(/MAX_ATTEMPTS/);
  });
});

describe.concurrent.each(LEASE_STORES)(
  'a record’s own attempts (maxAttempts) (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it('dead-letters a head after maxAttempts failed runs of its own, then runs its followers in order, none in the DLQ', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      // H always fails; F1, skipped behind it three times, then fails once itself: its first run.
      const { ran, operation } = recordingOperation(
        (name, run) => name === 'H' || (name === 'F1' && run === 1),
      );
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, 3, { store: records.store() });
      const messages = ['H', 'F1', 'F2'].map((name) => named('G', name));
      for (const message of messages) await publish(sqs, queue.url, message);

      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });

      expect(ran).toEqual(['H', 'H', 'H', 'F1', 'F1', 'F2']);
      // Counted, not received: a FIFO queue hides a group's rest behind its head in flight.
      expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
      const [head] = await deadLettered(dlq, 1);
      expect(nameOf(head as Message)).toBe('H');
      expect(head?.Attributes?.MessageGroupId).toBe('G');
      expect(head?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('AttemptsExhaustedError');
      expect(head?.MessageAttributes?.[DLQ_ATTRIBUTES.errorMessage]?.StringValue).toContain(
        'H: the downstream service is unavailable',
      );
      expect(metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
      const [h, f1, f2] = messages.map((message) => `${operation.namespace}#${message.key}`) as [
        string,
        string,
        string,
      ];
      expect(await records.read(h)).toMatchObject({ status: 'FAILED', attempts: 3 });
      expect(await records.read(f1)).toMatchObject({ status: 'COMPLETED', attempts: 2 });
      expect(await records.read(f2)).toMatchObject({ status: 'COMPLETED', attempts: 1 });
    });

    it('gives a redriven copy of a record it dead-lettered a fresh budget', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      // Fails its first four runs, then succeeds: two budgets of 2 spent, the third run of the redrive's.
      const { ran, operation } = recordingOperation((_, run) => run <= 4);
      const { handler } = consumer({ Named: operation }, dlq.url, 2, { store: records.store() });
      const message = named('G', 'H');
      await publish(sqs, queue.url, message);
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      expect(ran).toEqual(['H', 'H']);
      expect((await deadLettered(dlq, 1)).map(nameOf)).toEqual(['H']);

      // The redrive: a new message (new id and dedup id), the same key.
      await publish(sqs, queue.url, message, randomUUID());
      const first = await pollOnce(sqs, queue, handler);
      expect(first.deleted).toEqual([]); // failed on its first run since: not dead-lettered at once
      expect(ran).toEqual(['H', 'H', 'H']);
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      expect(ran).toEqual(['H', 'H', 'H', 'H']);
      // Dead-lettered again after its second run since: a second copy in the DLQ.
      expect(await messagesInQueue(sqs, dlq.url)).toBe(2);
      const id = `${operation.namespace}#${message.key}`;
      expect(await records.read(id)).toMatchObject({ status: 'FAILED', attempts: 4 });
    });

    it('counts a run whose invocation died after its acquire', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      const { ran, operation } = recordingOperation(() => true);
      const { handler, store } = consumer({ Named: operation }, dlq.url, 2, { store: records.store() });
      const message = named('G', 'H');
      // An invocation took the lease and died: attempt 1 counted, nothing else written.
      const id = `${operation.namespace}#${message.key}`;
      const acquired = await store.acquire({
        id,
        payloadHash: payloadHash({ type: message.type, payload: message.payload }),
        leaseMs: 1,
        takeOverExpiredLease: true,
      });
      expect(acquired.acquired).toBe(true);
      await publish(sqs, queue.url, message);
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      expect(ran).toEqual(['H']); // its takeover was attempt 2: dead-lettered at its first failure
      expect((await deadLettered(dlq, 1)).map(nameOf)).toEqual(['H']);
    });

    it('sends a record to the DLQ once when its invocation dies after the send', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      const { ran, operation } = recordingOperation((_, run) => run <= 3);
      const { handler } = consumer({ Named: operation }, dlq.url, 2, { store: records.store() });
      const message = named('G', 'H');
      await publish(sqs, queue.url, message);
      // Run 1 fails; run 2 fails, is sent to the DLQ and marked, and its invocation dies before the
      // acknowledgement: the message comes back.
      await pollOnce(sqs, queue, handler);
      await pollUntil(sqs, queue, handler, () => ran.length === 2, { acknowledge: false, timeoutMs: 60_000 });
      expect((await deadLettered(dlq, 1)).map(nameOf)).toEqual(['H']);
      // Back again, it is not run (its record names it), and the mark stops a second send: acknowledged.
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      expect(ran).toEqual(['H', 'H']);
      expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
      expect(await records.read(`${operation.namespace}#${message.key}`)).toMatchObject({
        status: 'FAILED',
        attempts: 3,
        attemptsAtDeadLetter: 3,
      });
    });

    it('sends it again, without running it, when its DLQ send failed', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      const dlqClient = localSqsClient(1);
      const outage = failRequests(dlqClient, (operation) => operation === 'SendMessage');
      const { ran, operation } = recordingOperation(() => true);
      const { handler, metrics } = consumer({ Named: operation }, dlq.url, 2, {
        store: records.store(),
        dlqClient,
      });
      await publish(sqs, queue.url, named('G', 'H'));
      await pollUntil(sqs, queue, handler, () => outage.failures > 0, { timeoutMs: 60_000 });
      expect(metrics.counts[CONSUMER_METRICS.dlqSendFailed]).toBe(1);
      outage.stop();
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      dlqClient.destroy();
      expect(ran).toEqual(['H', 'H']); // not a fresh budget: the same message, not a redriven copy
      expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
    });

    it('dead-letters it once when the FAILED write that says so is applied but its answer lost: its retry finds it done', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      const steps = steppedStore(records.store());
      const lost = steps.loseAnswers('fail', deadLettering);
      const { ran, operation } = recordingOperation(() => true);
      const { handler } = consumer({ Named: operation }, dlq.url, 2, { store: steps.store });
      const message = named('G', 'H');
      await publish(sqs, queue.url, message);
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      expect(lost.lost).toBe(1);
      expect(ran).toEqual(['H', 'H']);
      expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
      expect(await records.read(`${operation.namespace}#${message.key}`)).toMatchObject({
        status: 'FAILED',
        attempts: 2,
        attemptsAtDeadLetter: 2,
      });
    });

    it('sends nothing to the DLQ when that FAILED write keeps failing: the redelivery, its runs spent, does without running', async () => {
      const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
      let skewMs = 0;
      const steps = steppedStore(records.store({ now: () => Date.now() + skewMs }));
      const outage = steps.fail('fail', deadLettering);
      const { ran, operation } = recordingOperation(() => true);
      const { handler } = consumer({ Named: operation }, dlq.url, 2, { store: steps.store });
      const message = named('G', 'H');
      await publish(sqs, queue.url, message);
      await pollUntil(sqs, queue, handler, () => outage.failures > 0, { timeoutMs: 60_000 });
      expect(await messagesInQueue(sqs, dlq.url)).toBe(0); // not recorded, not acknowledged, not sent
      outage.stop();
      skewMs = 60_000; // past the lease the failed invocation left IN_PROGRESS
      await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
      // Its takeover is its third run, past maxAttempts, the second unrecorded: dead-lettered unrun (issue 40).
      expect(ran).toEqual(['H', 'H']);
      expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
    });
  },
);

describe.concurrent('a record’s own attempts (maxAttempts), DynamoDB only', () => {
  const dynamoStore = (client = dynamodb) => new DynamoDBIdempotencyStore({ client, tableName: table });

  // DynamoDB's own: the SDK resends the applied write inside one `fail` call, which the step-level test above does not reach.
  it('dead-letters it once when the FAILED write that says so is applied but its answer lost: the SDK’s resend finds it done', async () => {
    const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
    const client = localDynamoClient();
    const lost = loseAnswers(
      client,
      (operation, input) => operation === 'UpdateItem' && deadLetteringWrite(input),
    );
    const { ran, operation } = recordingOperation(() => true);
    const { handler } = consumer({ Named: operation }, dlq.url, 2, { store: dynamoStore(client) });
    const message = named('G', 'H');
    await publish(sqs, queue.url, message);
    await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
    client.destroy();
    expect(lost.lost).toBe(1);
    expect(ran).toEqual(['H', 'H']);
    expect(await messagesInQueue(sqs, dlq.url)).toBe(1);
    expect(await readItem(table, `${operation.namespace}#${message.key}`)).toMatchObject({
      status: 'FAILED',
      attempts: 2,
      attemptsAtDeadLetter: 2,
    });
  });

  // Transactional mode refuses a Valkey store: its records are DynamoDB's (one transaction with the effect).
  it('counts a transactional record’s failures by its receive count: it writes no record until it commits', async () => {
    const { queue, dlq } = await world.queuePair({ maxReceiveCount: 5 });
    let plans = 0;
    const operation = transactionalOperation({
      namespace: `attempts-tx-${randomUUID().slice(0, 8)}`,
      plan: () => {
        plans += 1;
        throw new Error('the pricing service is unavailable');
      },
    });
    const { handler } = consumer({ Named: operation }, dlq.url, 2, { store: dynamoStore() });
    await publish(sqs, queue.url, named('G', 'T'));
    await pollUntil(sqs, queue, handler, drained(queue), { timeoutMs: 60_000 });
    expect(plans).toBe(2);
    const [dead] = await deadLettered(dlq, 1);
    expect(dead?.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue).toBe('AttemptsExhaustedError');
  });
});

/** The fenced FAILED write that also records a dead-lettering (the acquire names the attribute bare). */
const deadLetteringWrite = (input: Record<string, unknown>) =>
  JSON.stringify(input).includes('#attemptsAtDeadLetter');

/** The same write as a step of the store: `fail` with the id of the message sent to the DLQ for it. */
const deadLettering = (call: StepCall) => call.args[2] !== undefined;
