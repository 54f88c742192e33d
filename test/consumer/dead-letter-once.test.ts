import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import middy from '@middy/core';
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import {
  CONSUMER_METRICS,
  fifoBatch,
  IdempotencyStoreUnavailableError,
  leaseOperation,
} from '../../lambdas/consumer/index.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type SqsEmulator, startSqsEmulator } from '../../sandbox/sqs-emulator.js';
import { LEASE_STORES, type LeaseRecords, leaseRecords } from '../support/lease-stores.js';
import { failRequests } from '../support/sdk-middleware.js';
import { createQueueWithDlq, deleteQueues, type FifoQueue, named, publish } from '../support/sqs.js';
import { type Poll, pollOnce, pollUntil } from '../support/sqs-event-source.js';
import { type StepCall, type StepSelect, type StoreStep, steppedStore } from '../support/store-steps.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// DESIGN §5: a record the consumer dead-letters is in the DLQ once, even when it comes back more
// than 5 minutes after its DLQ send, past SQS's deduplication window. The SQS emulator runs in this
// file's own process, so that moving this process's clock (`pastDedupWindow`) moves the emulator's
// window: a visibility timeout longer than 5 minutes, without waiting for it. The tests run one
// after the other, as they share that clock; the DLQ claims and marks are in DynamoDB or Valkey.

const DEDUP_WINDOW_MS = 5 * 60_000;
const realNow = Date.now;
let skippedMs = 0;
/** Moves this process's clock past SQS's deduplication window, as a long visibility timeout would. */
const pastDedupWindow = () => {
  skippedMs += DEDUP_WINDOW_MS + 1_000;
};

/** The claim of a DLQ send by an invocation with `pollOnce`'s 30 s left: those and the 2 s margin. */
const CLAIM_MS = 30_000 + 2_000;
/** Moves this process's clock past the DLQ claim of a container that died, within SQS's window. */
const pastTheClaim = () => {
  skippedMs += CLAIM_MS + 1_000;
};
let emulator: SqsEmulator;
let sqs: SQSClient;
const queues: FifoQueue[] = [];

beforeAll(async () => {
  emulator = await startSqsEmulator();
  sqs = new SQSClient(localAwsConfig(emulator.endpoint));
  vi.spyOn(Date, 'now').mockImplementation(() => realNow() + skippedMs);
});

afterAll(async () => {
  vi.restoreAllMocks();
  await deleteQueues(sqs, queues);
  sqs.destroy();
  await emulator.stop();
});

async function queuePair() {
  const pair = await createQueueWithDlq(sqs, { visibilityTimeoutSeconds: 3, maxReceiveCount: 5 });
  queues.push(pair.queue, pair.dlq);
  return pair;
}

function recordingOperation() {
  const ran: string[] = [];
  const operation = leaseOperation({
    namespace: `dlq-once-${randomUUID().slice(0, 8)}`,
    mode: 'at-least-once',
    payload: z.object({ name: z.string() }),
    run: async (message) => {
      ran.push(message.payload.name);
      return { ran: message.payload.name };
    },
  });
  return { ran, operation };
}

/**
 * A consumer container: its own SQS client and store, so that a test can fail or crash its
 * requests and its store's steps. `crashAt` and `crashAtStep` make the container die at the first
 * request or step they select: it never answers, and `died` resolves, as when Lambda's container
 * is killed mid-request.
 */
function container(
  records: LeaseRecords,
  operations: Parameters<typeof fifoBatch>[0]['operations'],
  queues: { queue: FifoQueue; dlq: FifoQueue },
) {
  const steps = steppedStore(records.store());
  const dlqClient = new SQSClient(localAwsConfig(emulator.endpoint));
  const metrics = metricsRecorder();
  let dead = false;
  let die: () => void = () => undefined;
  const died = new Promise<void>((resolve) => {
    die = () => {
      dead = true;
      resolve();
    };
  });
  const handler = middy<SQSEvent, SQSBatchResponse>().use(
    fifoBatch({
      store: steps.store,
      operations,
      deadLetterQueue: { client: dlqClient, queueUrl: queues.dlq.url, sourceQueueUrl: queues.queue.url },
      logger: silentLogger(),
      metrics,
    }),
  );
  /** From now on, the container dies at the first DLQ request `select` picks. */
  const crashAt = (select: (operation: string, input: Record<string, unknown>) => boolean) => {
    (dlqClient.middlewareStack as DynamoDBClient['middlewareStack']).add(
      (next, context) => async (args) => {
        const operation = String(context.commandName).replace(/Command$/, '');
        if (!select(operation, args.input as Record<string, unknown>)) return next(args);
        die();
        return new Promise<never>(() => undefined);
      },
      { step: 'build', name: `crash${Math.random()}` },
    );
  };
  /** From now on, the container dies at the first call of `step` that `select` picks, before it is applied. */
  const crashAtStep = (step: StoreStep, select: StepSelect = () => true) => {
    const never = new Promise<void>(() => undefined);
    // Picked, the call dies here: held for ever before the step is applied.
    const dying = (call: StepCall) => {
      if (!select(call)) return false;
      die();
      return true;
    };
    steps.hold(step, dying, never);
  };
  /** One poll of the event source; a container that died acknowledges nothing. */
  const poll = async (): Promise<Poll | 'died'> => {
    const dying = died.then(() => {
      throw new Error('the container died');
    });
    const answer = await pollOnce(sqs, queues.queue, (event, context) =>
      Promise.race([handler(event, context), dying]),
    );
    return dead ? 'died' : answer;
  };
  return { handler, metrics, steps, dlqClient, crashAt, crashAtStep, poll };
}

const connectionRefused = () =>
  Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8000'), { code: 'ECONNREFUSED' });

describe.each(LEASE_STORES)(
  'a dead-lettered record in the DLQ once, past SQS’s deduplication window (records in %s)',
  (storeName) => {
    const records = leaseRecords(storeName);

    it('a failed source delete, then a whole-batch failure, then a redelivery after 5 minutes: one DLQ copy', async () => {
      const pair = await queuePair();
      const { ran, operation } = recordingOperation();
      const consumer = container(records, { Named: operation }, pair);
      const a2 = named('A', 'A2');
      const deletes = failRequests(consumer.dlqClient, (name) => name === 'DeleteMessage', connectionRefused);
      const acquires = consumer.steps.fail(
        'acquire',
        (call) => call.id === `${operation.namespace}#${a2.key}`,
        connectionRefused,
      );
      const poisonId = await publish(sqs, pair.queue.url, named('A', 'A1', 'NoSuchType'));
      const a2Id = await publish(sqs, pair.queue.url, a2);

      // A1 goes to the DLQ, its delete from the queue fails, then A2's acquire fails the whole batch.
      const first = await pollOnce(sqs, pair.queue, consumer.handler);
      expect(first.records.map((record) => record.messageId)).toEqual([poisonId, a2Id]);
      expect(first.error).toBeInstanceOf(IdempotencyStoreUnavailableError);
      expect(deletes.failures).toBeGreaterThan(0);
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);
      deletes.stop();
      acquires.stop();

      pastDedupWindow();
      const redelivered = await pollUntil(sqs, pair.queue, consumer.handler, (polls) =>
        polls.some((poll) => poll.deleted.includes(a2Id)),
      );
      expect(redelivered.flatMap((poll) => poll.records.map((record) => record.messageId))).toEqual([
        poisonId,
        a2Id,
      ]);
      expect(ran).toEqual(['A2']);
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);
      expect(consumer.metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
    });

    it('a crash between the DLQ send and the source delete, then a redelivery after 5 minutes: one DLQ copy', async () => {
      const pair = await queuePair();
      const { operation } = recordingOperation();
      const dying = container(records, { Named: operation }, pair);
      dying.crashAt((name) => name === 'DeleteMessage');
      const poisonId = await publish(sqs, pair.queue.url, named('A', 'A1', 'NoSuchType'));

      expect(await dying.poll()).toBe('died');
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);

      pastDedupWindow();
      const fresh = container(records, { Named: operation }, pair);
      const polls = await pollUntil(sqs, pair.queue, fresh.handler, (done) =>
        done.some((poll) => poll.deleted.includes(poisonId)),
      );
      expect(polls.flatMap((poll) => poll.records.map((record) => record.messageId))).toEqual([poisonId]);
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);
    });

    // The residue (DESIGN §5): between the DLQ send and its mark, the claim holds a resend off until it
    // expires; then only SQS's window dedupes it.
    const crashBeforeTheMark = async (pastTheWindow: boolean) => {
      const pair = await queuePair();
      const { operation } = recordingOperation();
      const dying = container(records, { Named: operation }, pair);
      dying.crashAtStep('markDeadLettered');
      const poisonId = await publish(sqs, pair.queue.url, named('A', 'A1', 'NoSuchType'));
      expect(await dying.poll()).toBe('died');
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);

      if (pastTheWindow) pastDedupWindow();
      else pastTheClaim();
      const fresh = container(records, { Named: operation }, pair);
      await pollUntil(sqs, pair.queue, fresh.handler, (polls) =>
        polls.some((poll) => poll.deleted.includes(poisonId)),
      );
      return messagesInQueue(sqs, pair.dlq.url);
    };

    it('a crash between the DLQ send and its mark, redelivered within 5 minutes: one copy, SQS drops the resend', async () => {
      expect(await crashBeforeTheMark(false)).toBe(1);
    });

    it('the residue: a crash between the DLQ send and its mark, redelivered after 5 minutes, leaves two copies', async () => {
      expect(await crashBeforeTheMark(true)).toBe(2);
    });

    it('a crash between the claim and the DLQ send loses nothing: once the claim expired, a redelivery sends it', async () => {
      const pair = await queuePair();
      const { operation } = recordingOperation();
      const dying = container(records, { Named: operation }, pair);
      dying.crashAt((name) => name === 'SendMessage');
      const poisonId = await publish(sqs, pair.queue.url, named('A', 'A1', 'NoSuchType'));
      expect(await dying.poll()).toBe('died');
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(0);

      // While the claim runs, a redelivery leaves the send to its claimer; then it takes the claim over.
      const fresh = container(records, { Named: operation }, pair);
      const held = await pollUntil(sqs, pair.queue, fresh.handler, (polls) =>
        polls.some((poll) => poll.records.length > 0),
      );
      expect(held.flatMap((poll) => poll.deleted)).toEqual([]);
      pastTheClaim();
      await pollUntil(sqs, pair.queue, fresh.handler, (polls) =>
        polls.some((poll) => poll.deleted.includes(poisonId)),
      );
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);
    });

    it('a mark that cannot be written is counted, and the record is acknowledged: it is in the DLQ', async () => {
      const pair = await queuePair();
      const { operation } = recordingOperation();
      const consumer = container(records, { Named: operation }, pair);
      const marks = consumer.steps.fail('markDeadLettered', () => true, connectionRefused);
      const poisonId = await publish(sqs, pair.queue.url, named('A', 'A1', 'NoSuchType'));

      const poll = await pollOnce(sqs, pair.queue, consumer.handler);
      expect(poll.deleted).toEqual([poisonId]);
      expect(marks.failures).toBe(3); // RECORD_WRITE_RETRY's tries
      expect(consumer.metrics.counts[CONSUMER_METRICS.sentToDlq]).toBe(1);
      expect(consumer.metrics.counts[CONSUMER_METRICS.dlqMarkNotWritten]).toBe(1);
      expect(await messagesInQueue(sqs, pair.dlq.url)).toBe(1);
    });
  },
);
