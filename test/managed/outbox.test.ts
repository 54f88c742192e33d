import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DynamoDBBatchResponse } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { OUTBOX_ENVIRONMENT } from '../../lambdas/outbox/environment.js';
import { Outbox } from '../../lambdas/outbox/index.js';
import type { SweepReport } from '../../lambdas/outbox/sweeper.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createOutboxTable, markerInserts } from '../support/outbox.js';
import { createFifoQueue, deleteQueues, type FifoQueue, localSqsClient } from '../support/sqs.js';
import {
  bundleHandler,
  bundlesDirectory,
  emulatorEnvironment,
  type ManagedFunction,
  managedFunction,
  removeBundles,
} from './managed-function.js';

// The outbox's relay and sweeper as the stack bundles them, two invocations at once in one
// environment as on Lambda Managed Instances: A's SendMessageBatch is held by a proxy before the SQS
// emulator while B runs whole. B must not take A's claim (each invocation its own owner), and each
// publishes its own metrics.

let directory: string;
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let proxy: FaultProxy;
const queues: FifoQueue[] = [];
const functions: ManagedFunction[] = [];

beforeAll(async () => {
  directory = await bundlesDirectory();
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
  proxy = await startFaultProxy({ service: 'sqs', upstream: emulatorEndpoint('sqsEndpoint') });
}, 240_000);

afterAll(async () => {
  await Promise.all(functions.map((fn) => fn.runtime.stop()));
  await proxy?.close();
  if (sqs) await deleteQueues(sqs, queues);
  sqs?.destroy();
  dynamodb?.destroy();
  await removeBundles(directory);
});

/** A bundled outbox function on its own table and queue, sending through the proxy. */
async function outboxFunction(entry: string, environment: Record<string, string> = {}) {
  const [codeDirectory, layout, queue] = await Promise.all([
    bundleHandler(entry, directory, entry.replaceAll('/', '-')),
    createOutboxTable(dynamodb, 'managed-outbox'),
    createFifoQueue(sqs),
  ]);
  queues.push(queue);
  const fn = managedFunction({
    name: `managed-${entry.split('/').pop()?.replace('.ts', '')}`,
    codeDirectory,
    environment: {
      ...emulatorEnvironment({ dynamodb: emulatorEndpoint('dynamodbEndpoint'), sqs: proxy.endpoint }),
      [OUTBOX_ENVIRONMENT.tableName]: layout.tableName,
      // Through the proxy: the SDK sends to the queue URL's host.
      [OUTBOX_ENVIRONMENT.queueUrl]: queue.url.replace(new URL(queue.url).origin, proxy.endpoint),
      POWERTOOLS_SERVICE_NAME: 'managed-outbox',
      POWERTOOLS_METRICS_NAMESPACE: 'OncelyManagedTest',
      ...environment,
    },
  });
  functions.push(fn);
  return { fn, outbox: new Outbox({ client: dynamodb, ...layout }), layout };
}

/** Writes `count` messages of `groupId`, each in its own transaction, in order. */
async function write(outbox: Outbox, groupId: string, count: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < count; i++) {
    const message = { type: 'OrderPlaced', groupId, key: `${groupId}-${i}`, payload: { i } };
    keys.push(...(await outbox.write({ messages: [message] })).keys);
  }
  return keys;
}

/** The stream event the relay gets for a group's pending markers (its event source's filter passes only those). */

/** Hangs the first SendMessageBatch naming `groupId`; counts every one that names it. */
function holdFirstSendOf(groupId: string): { sends: () => number } {
  let sends = 0;
  proxy.setPlan((request) => {
    if (request.operation !== 'SendMessageBatch' || !JSON.stringify(request.body).includes(groupId))
      return undefined;
    sends++;
    return sends === 1 ? { kind: 'hang' } : undefined;
  });
  return { sends: () => sends };
}

async function resultOf<T>(invocation: ReturnType<ManagedFunction['runtime']['invoke']>): Promise<T> {
  const answer = await invocation;
  if (!answer.ok) throw new Error(`${answer.error.errorType}: ${answer.error.errorMessage}`);
  return answer.result as T;
}

describe('the outbox relay, two invocations at once in one environment (Lambda Managed Instances)', () => {
  it('leaves a group another invocation claimed to it, and publishes its own counts', async () => {
    const { fn, outbox, layout } = await outboxFunction('lambdas/outbox/relay-handler.ts');
    onTestFailed(() => console.log(fn.lines.join('\n')));
    const run = randomUUID().slice(0, 8);
    const [held, free] = [`held-${run}`, `free-${run}`];
    await write(outbox, held, 1);
    await write(outbox, free, 2);
    const sendsOfHeld = holdFirstSendOf(held);

    const a = resultOf<DynamoDBBatchResponse>(
      fn.runtime.invoke(await markerInserts(dynamodb, layout, [held]), 'relay-a'),
    );
    await proxy.waitForHung(1, 10_000);
    // B is told of both groups: the held one is A's claim, not B's to send.
    const b = await resultOf<DynamoDBBatchResponse>(
      fn.runtime.invoke(await markerInserts(dynamodb, layout, [held, free]), 'relay-b'),
    );
    proxy.releaseHung();

    expect(b).toEqual({ batchItemFailures: [] });
    expect(await a).toEqual({ batchItemFailures: [] });
    expect(fn.runtime.usage().heapUsedBytes).toHaveLength(1);
    expect(sendsOfHeld.sends()).toBe(1);
    // B's counts published first, then A's: each its own.
    expect(fn.metrics().slice(-2)).toEqual([
      { OutboxRelayedMessages: 2, OutboxUnsentMessages: 0 },
      { OutboxRelayedMessages: 1, OutboxUnsentMessages: 0 },
    ]);
  });
});

describe('the outbox sweeper, two invocations at once in one environment (Lambda Managed Instances)', () => {
  it('leaves a group another invocation claimed to it, and publishes its own counts', async () => {
    const { fn, outbox } = await outboxFunction('lambdas/outbox/sweeper-handler.ts', {
      [OUTBOX_ENVIRONMENT.sweepAfterSeconds]: '0',
    });
    onTestFailed(() => console.log(fn.lines.join('\n')));
    const run = randomUUID().slice(0, 8);
    const [held, later] = [`held-${run}`, `later-${run}`];
    const [heldKey] = await write(outbox, held, 1);
    const sendsOfHeld = holdFirstSendOf(held);

    const a = resultOf<SweepReport>(fn.runtime.invoke({}, 'sweeper-a'));
    await proxy.waitForHung(1, 10_000);
    // Written once A has listed its groups: only B finds it.
    await write(outbox, later, 2);
    const b = await resultOf<SweepReport>(fn.runtime.invoke({}, 'sweeper-b'));
    proxy.releaseHung();
    const aReport = await a;

    expect(fn.runtime.usage().heapUsedBytes).toHaveLength(1);
    expect(b.groups.find((group) => group.groupId === held)).toMatchObject({
      sent: [],
      stoppedAtHeld: heldKey,
    });
    expect(b.groups.find((group) => group.groupId === later)?.sent).toHaveLength(2);
    expect(aReport.groups.map((group) => [group.groupId, group.sent.length])).toEqual([[held, 1]]);
    expect(sendsOfHeld.sends()).toBe(1);
    const swept = fn
      .metrics()
      .slice(-2)
      .map((metrics) => metrics.OutboxSweptMessages);
    expect(swept).toEqual([2, 1]);
  });
});
