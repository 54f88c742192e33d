import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import {
  type BatchReport,
  type PollerOptions,
  startEventSourcePoller,
} from '../../sandbox/event-source-poller.js';
import type { InvocationResult } from '../../sandbox/lambda-context.js';
import { LOCAL_REGION, localAwsConfig } from '../../sandbox/local-aws-config.js';
import type { LocalEventSource } from '../../sandbox/provision.js';
import { MAX_BATCH_BYTES } from '../../sandbox/sqs-batch-gatherer.js';
import { type SqsEmulator, startSqsEmulator } from '../../sandbox/sqs-emulator.js';
import { uniqueName } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

const sqs = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
const pollers: { stop: () => Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
});
afterAll(() => sqs.destroy());

async function fifoSource(maxConcurrency = 2): Promise<LocalEventSource> {
  const name = `${uniqueName('poll')}.fifo`;
  const { QueueUrl } = await sqs.send(
    new CreateQueueCommand({ QueueName: name, Attributes: { FifoQueue: 'true', VisibilityTimeout: '1' } }),
  );
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return {
    logicalId: 'Source',
    queue: { logicalId: 'Queue', name, url: String(QueueUrl), arn: String(Attributes?.QueueArn) },
    functionName: 'consumer',
    batchSize: 10,
    maximumBatchingWindowInSeconds: 0,
    reportBatchItemFailures: true,
    maxConcurrency,
    maxConcurrencySet: true,
    filterPatterns: [],
    enabled: true,
  };
}

/** A standard queue read in batches of up to 100 over a 2-second window, by one poller. */
async function bulkSource(): Promise<LocalEventSource> {
  const name = uniqueName('bulk');
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name }));
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  return {
    logicalId: 'Bulk',
    queue: { logicalId: 'Queue', name, url: String(QueueUrl), arn: String(Attributes?.QueueArn) },
    functionName: 'consumer',
    batchSize: 100,
    maximumBatchingWindowInSeconds: 2,
    reportBatchItemFailures: false,
    maxConcurrency: 1,
    maxConcurrencySet: true,
    filterPatterns: [],
    enabled: true,
  };
}

async function send(source: LocalEventSource, messages: { group: string; body: string }[]) {
  for (let i = 0; i < messages.length; i += 10) {
    await sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: source.queue.url,
        Entries: messages.slice(i, i + 10).map((m, index) => ({
          Id: String(index),
          MessageBody: m.body,
          MessageGroupId: m.group,
          MessageDeduplicationId: m.body,
        })),
      }),
    );
  }
}

function poll(
  source: LocalEventSource,
  invoke: (event: SQSEvent) => Promise<InvocationResult>,
  duplicateDeliveries?: PollerOptions['duplicateDeliveries'],
) {
  const reports: BatchReport[] = [];
  pollers.push(
    startEventSourcePoller({
      sqs,
      source,
      region: LOCAL_REGION,
      invoke,
      onBatch: (r) => reports.push(r),
      waitTimeSeconds: 1,
      duplicateDeliveries,
    }),
  );
  return reports;
}

const bodies = (event: SQSEvent) => event.Records.map((record) => record.body);

/**
 * An SQS emulator in this process, for duplicate deliveries: a copy is received again through it,
 * with a receipt handle of its own (the global one runs in another process).
 */
let emulator: SqsEmulator;
let localSqs: SQSClient;
beforeAll(async () => {
  emulator = await startSqsEmulator();
  localSqs = new SQSClient(localAwsConfig(emulator.endpoint));
});
afterAll(async () => {
  localSqs.destroy();
  await emulator.stop();
});

/** A standard queue on the in-process emulator with m1, m2 and m3, read in one batch by one poller. */
async function duplicatedSource(): Promise<LocalEventSource> {
  const name = uniqueName('twice');
  const { QueueUrl } = await localSqs.send(new CreateQueueCommand({ QueueName: name }));
  const { Attributes } = await localSqs.send(
    new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ['QueueArn'] }),
  );
  await localSqs.send(
    new SendMessageBatchCommand({
      QueueUrl,
      Entries: ['m1', 'm2', 'm3'].map((body) => ({ Id: body, MessageBody: body })),
    }),
  );
  return {
    logicalId: 'Twice',
    queue: { logicalId: 'Queue', name, url: String(QueueUrl), arn: String(Attributes?.QueueArn) },
    functionName: 'consumer',
    batchSize: 10,
    maximumBatchingWindowInSeconds: 0,
    reportBatchItemFailures: true,
    maxConcurrency: 1,
    maxConcurrencySet: true,
    filterPatterns: [],
    enabled: true,
  };
}

/** Polls `source` on the in-process emulator with duplicate deliveries. */
function pollLocal(source: LocalEventSource, invoke: (event: SQSEvent) => Promise<InvocationResult>) {
  const reports: BatchReport[] = [];
  pollers.push(
    startEventSourcePoller({
      sqs: localSqs,
      source,
      region: LOCAL_REGION,
      invoke,
      onBatch: (r) => reports.push(r),
      waitTimeSeconds: 1,
      duplicateDeliveries: { receiveAgain: emulator.receiveAgain },
    }),
  );
  return reports;
}

describe('local event source poller', () => {
  it('delivers every message once, in order per group, with bounded concurrency', async () => {
    const source = await fifoSource(2);
    const sent = Array.from({ length: 30 }, (_, i) => ({ group: `g${i % 3}`, body: `g${i % 3}-${i}` }));
    await send(source, sent);
    const seen: string[] = [];
    let running = 0;
    let peak = 0;
    poll(source, async (event) => {
      peak = Math.max(peak, ++running);
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(...bodies(event));
      running--;
      return { ok: true, result: { batchItemFailures: [] } };
    });
    await expect.poll(() => seen.length, { timeout: 60_000 }).toBe(30);
    for (const group of ['g0', 'g1', 'g2']) {
      expect(seen.filter((b) => b.startsWith(group))).toEqual(
        sent.filter((m) => m.group === group).map((m) => m.body),
      );
    }
    expect(peak).toBeLessThanOrEqual(2);
  });

  it('keeps only the reported failures, which come back after the visibility timeout, in order', async () => {
    const source = await fifoSource();
    await send(source, [
      { group: 'a', body: 'a1' },
      { group: 'a', body: 'a2' },
      { group: 'b', body: 'b1' },
    ]);
    const deliveries: string[] = [];
    let failedOnce = false;
    const reports = poll(source, async (event) => {
      deliveries.push(...bodies(event));
      if (failedOnce) return { ok: true, result: { batchItemFailures: [] } };
      failedOnce = true;
      const failures = event.Records.filter((r) => r.attributes.MessageGroupId === 'a');
      return {
        ok: true,
        result: { batchItemFailures: failures.map((r) => ({ itemIdentifier: r.messageId })) },
      };
    });
    await expect.poll(() => deliveries.filter((b) => b.startsWith('a')).length, { timeout: 60_000 }).toBe(4);
    expect(deliveries.filter((b) => b === 'b1')).toHaveLength(1);
    expect(deliveries.filter((b) => b.startsWith('a'))).toEqual(['a1', 'a2', 'a1', 'a2']);
    expect(reports[0]).toMatchObject({ received: 3, deleted: 1, retained: 2 });
  });

  it('leaves the whole batch on a function error or an invalid partial response', async () => {
    for (const firstOutcome of [
      { ok: false, error: { errorType: 'Error', errorMessage: 'boom' } } as const,
      { ok: true, result: { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] } } as const,
    ]) {
      const source = await fifoSource();
      await send(source, [
        { group: 'a', body: 'a1' },
        { group: 'b', body: 'b1' },
      ]);
      const receiveCounts: string[] = [];
      let calls = 0;
      const reports = poll(source, async (event) => {
        receiveCounts.push(...event.Records.map((r) => `${r.body}:${r.attributes.ApproximateReceiveCount}`));
        return calls++ === 0 ? firstOutcome : { ok: true, result: undefined };
      });
      await expect.poll(() => receiveCounts.length, { timeout: 60_000 }).toBe(4);
      expect(receiveCounts.sort()).toEqual(['a1:1', 'a1:2', 'b1:1', 'b1:2']);
      expect(reports[0]).toMatchObject({ received: 2, deleted: 0, retained: 2 });
      await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
    }
  });

  it('with duplicateDeliveries, gives a standard queue’s batch to two invocations at once, then once more; a message is done once one succeeds', async () => {
    const source = await duplicatedSource();
    const calls: SQSEvent[] = [];
    const twinArrived = new Map<string, () => void>();
    const reports = pollLocal(source, async (event) => {
      const batch = bodies(event).join();
      calls.push(event);
      const copy = calls.filter((call) => bodies(call).join() === batch).length;
      // The first copy answers only once its twin is in flight: the two run at once.
      if (copy === 1) await new Promise<void>((resolve) => twinArrived.set(batch, resolve));
      if (copy === 2) twinArrived.get(batch)?.();
      // The first copy fails every record, the others succeed: the messages are still done.
      const failures = copy === 1 ? event.Records.map((r) => ({ itemIdentifier: r.messageId })) : [];
      return { ok: true, result: { batchItemFailures: failures } };
    });
    await expect.poll(() => calls.flatMap(bodies).length, { timeout: 60_000 }).toBe(9);
    await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
    const deliveries = calls.flatMap(bodies);
    for (const body of ['m1', 'm2', 'm3']) expect(deliveries.filter((d) => d === body)).toHaveLength(3);
    expect(await messagesInQueue(localSqs, source.queue.url)).toBe(0);
    // Per batch: the two at once (every message deleted), then the late copy.
    expect(reports.filter((report) => report.retained > 0)).toEqual([]);
    expect(reports.reduce((sum, report) => sum + report.received, 0)).toBe(6);
  });

  it('with duplicateDeliveries, gives each copy its own receipt handle, as a receive does: a copy that succeeds with an earlier one does not delete the message', async () => {
    const source = await duplicatedSource();
    const copies: SQSEvent[] = [];
    const reports = pollLocal(source, async (event) => {
      copies.push(event);
      // The first copy (the batch as received) succeeds, its twin (received again) fails every
      // record; the late copy, received once more, succeeds.
      const failures = copies.length === 2 ? event.Records.map((r) => ({ itemIdentifier: r.messageId })) : [];
      return { ok: true, result: { batchItemFailures: failures } };
    });
    await expect.poll(() => copies.length, { timeout: 60_000 }).toBe(3);
    await expect.poll(() => messagesInQueue(localSqs, source.queue.url), { timeout: 60_000 }).toBe(0);
    await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
    const handlesOf = (event: SQSEvent | undefined) => event?.Records.map((r) => r.receiptHandle) ?? [];
    expect(new Set(copies.flatMap(handlesOf)).size).toBe(9);
    expect(copies.map((copy) => copy.Records.map((r) => r.attributes.ApproximateReceiveCount))).toEqual([
      ['1', '1', '1'],
      ['2', '2', '2'],
      ['3', '3', '3'],
    ]);
    // The first copy's delete used a handle the second receive replaced: the messages stayed, in
    // flight, for the late copy to delete with the latest handle.
    expect(reports).toEqual([
      { received: 3, deleted: 0, retained: 3 },
      { received: 3, deleted: 3, retained: 0 },
    ]);
  });

  it('with duplicateDeliveries, still gives a FIFO queue’s batch to one invocation', async () => {
    const source = await fifoSource();
    await send(source, [
      { group: 'a', body: 'a1' },
      { group: 'b', body: 'b1' },
    ]);
    const deliveries: string[] = [];
    poll(
      source,
      async (event) => {
        deliveries.push(...bodies(event));
        return { ok: true, result: { batchItemFailures: [] } };
      },
      {
        receiveAgain: () => {
          throw new Error('a FIFO queue’s batch is never received again');
        },
      },
    );
    await expect.poll(() => messagesInQueue(sqs, source.queue.url), { timeout: 60_000 }).toBe(0);
    await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
    expect(deliveries.sort()).toEqual(['a1', 'b1']);
  });

  it('invokes early rather than pass 6 MB, the next batch starting with the message that did not fit', async () => {
    const source = await bulkSource();
    // 30 bodies of 250,000 bytes: 25 fit in 6 MB with their records' metadata, 26 do not.
    for (let i = 0; i < 30; i++) {
      await sqs.send(
        new SendMessageCommand({ QueueUrl: source.queue.url, MessageBody: `${i}:`.padEnd(250_000, 'x') }),
      );
    }
    const batches: { ids: string[]; bytes: number }[] = [];
    poll(source, async (event) => {
      batches.push({
        ids: event.Records.map((record) => record.body.split(':')[0]),
        bytes: Buffer.byteLength(JSON.stringify(event)),
      });
      return { ok: true, result: undefined };
    });
    await expect.poll(() => batches.flatMap((batch) => batch.ids).length, { timeout: 60_000 }).toBe(30);
    expect(batches.map((batch) => batch.ids.length)).toEqual([25, 5]);
    expect(new Set(batches.flatMap((batch) => batch.ids)).size).toBe(30);
    for (const batch of batches) expect(batch.bytes).toBeLessThanOrEqual(MAX_BATCH_BYTES);
  });

  it('starts 5 pollers, adds more while messages keep coming up to maxConcurrency, and scales back when idle', async () => {
    const source = {
      ...(await bulkSource()),
      batchSize: 1,
      maximumBatchingWindowInSeconds: 0,
      maxConcurrency: 8,
    };
    // A client that counts the receives in flight: one per poller waiting on the queue.
    const counting = new SQSClient(localAwsConfig(emulatorEndpoint('sqsEndpoint')));
    let receiving = 0;
    let peakReceiving = 0;
    let receives = 0;
    counting.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'ReceiveMessageCommand') return next(args);
        peakReceiving = Math.max(peakReceiving, ++receiving);
        try {
          return await next(args);
        } finally {
          receiving--;
          receives++;
        }
      },
      { step: 'initialize' },
    );
    let running = 0;
    let peakRunning = 0;
    let delivered = 0;
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    pollers.push(
      startEventSourcePoller({
        sqs: counting,
        source,
        region: LOCAL_REGION,
        waitTimeSeconds: 1,
        invoke: async () => {
          peakRunning = Math.max(peakRunning, ++running);
          await released;
          running--;
          delivered++;
          return { ok: true, result: undefined };
        },
      }),
    );
    // An idle queue: two rounds of long polls, never more than the first 5 pollers.
    await expect.poll(() => receives, { timeout: 60_000 }).toBeGreaterThanOrEqual(10);
    expect(peakReceiving).toBe(5);

    for (let i = 0; i < 30; i += 10) {
      await sqs.send(
        new SendMessageBatchCommand({
          QueueUrl: source.queue.url,
          Entries: Array.from({ length: 10 }, (_, index) => ({
            Id: String(index),
            MessageBody: `m${i + index}`,
          })),
        }),
      );
    }
    // Messages keep coming and every batch is held: pollers are added, up to maxConcurrency.
    await expect.poll(() => running, { timeout: 60_000 }).toBe(8);
    release();
    await expect.poll(() => delivered, { timeout: 60_000 }).toBe(30);
    expect(peakRunning).toBe(8);
    // Idle again: the pollers added end at their first empty receive.
    await expect.poll(() => receiving, { timeout: 60_000 }).toBe(5);
    await Promise.all(pollers.splice(0).map((poller) => poller.stop()));
    counting.destroy();
  });
});
