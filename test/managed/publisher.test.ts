import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { PUBLISH_NAMESPACE, recordId } from '../../lambdas/idempotency/keys.js';
import type { PublishResponse } from '../../lambdas/publisher/contract.js';
import { PUBLISHER_ENVIRONMENT } from '../../lambdas/publisher/environment.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import {
  createFifoQueue,
  deleteQueues,
  type FifoQueue,
  localSqsClient,
  receiveMessages,
} from '../support/sqs.js';
import {
  bundleHandler,
  bundlesDirectory,
  emulatorEnvironment,
  type ManagedFunction,
  managedFunction,
  removeBundles,
} from './managed-function.js';

// The publisher as the stack bundles it, two requests at once in one environment as on Lambda
// Managed Instances: A's SendMessageBatch is held by a proxy before the SQS emulator while B's
// whole request runs. Each must get its own results, record and deadline.

const TIMEOUT_SECONDS = 30;
let directory: string;
let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let proxy: FaultProxy;
let idempotencyTable: string;
let queue: FifoQueue;
let publisher: ManagedFunction;

beforeAll(async () => {
  directory = await bundlesDirectory();
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
  proxy = await startFaultProxy({ service: 'sqs', upstream: emulatorEndpoint('sqsEndpoint') });
  let codeDirectory: string;
  [codeDirectory, idempotencyTable, queue] = await Promise.all([
    bundleHandler('lambdas/publisher/handler.ts', directory, 'publisher'),
    createTable(dynamodb, 'managed-publish'),
    createFifoQueue(sqs),
  ]);
  publisher = managedFunction({
    name: 'managed-publisher',
    codeDirectory,
    timeoutSeconds: TIMEOUT_SECONDS,
    environment: {
      ...emulatorEnvironment({ dynamodb: emulatorEndpoint('dynamodbEndpoint'), sqs: proxy.endpoint }),
      // Through the proxy: the SDK sends to the queue URL's host.
      [PUBLISHER_ENVIRONMENT.queueUrl]: queue.url.replace(new URL(queue.url).origin, proxy.endpoint),
      [PUBLISHER_ENVIRONMENT.idempotencyTableName]: idempotencyTable,
    },
  });
}, 240_000);

afterAll(async () => {
  await publisher?.runtime.stop();
  await proxy?.close();
  if (sqs) await deleteQueues(sqs, queue ? [queue] : []);
  sqs?.destroy();
  dynamodb?.destroy();
  await removeBundles(directory);
});

async function answerOf(
  invocation: ReturnType<ManagedFunction['runtime']['invoke']>,
): Promise<PublishResponse> {
  const answer = await invocation;
  if (!answer.ok) throw new Error(`${answer.error.errorType}: ${answer.error.errorMessage}`);
  return answer.result as PublishResponse;
}

describe('the publisher, two requests at once in one environment (Lambda Managed Instances)', () => {
  it('gives each request its own results, record and deadline while the other waits on SQS', async () => {
    onTestFailed(() => console.log(publisher.lines.join('\n')));
    const run = randomUUID().slice(0, 8);
    const heldGroup = `held-${run}`;
    // The first send carrying A's group hangs until released; everything else goes on.
    let held = false;
    proxy.setPlan((request) => {
      if (held || !JSON.stringify(request.body).includes(heldGroup)) return undefined;
      held = true;
      return { kind: 'hang' };
    });
    const request = (name: string, groupId: string) => ({
      requestId: `${name}-${run}`,
      callId: `call-${name}`,
      messages: [{ type: 'OrderPlaced', groupId, key: `${name}-key-${run}`, payload: { name } }],
    });

    const a = answerOf(publisher.runtime.invoke(request('a', heldGroup), 'invocation-a'));
    await proxy.waitForHung(1, 10_000);
    const heldSince = Date.now();
    const aRecord = await readItem(idempotencyTable, recordId(PUBLISH_NAMESPACE, `a-${run}`));
    const b = await answerOf(publisher.runtime.invoke(request('b', `free-${run}`), 'invocation-b'));
    proxy.releaseHung();
    const aAnswer = await a;

    expect(publisher.runtime.usage().heapUsedBytes).toHaveLength(1);
    expect(b).toMatchObject({ callId: 'call-b', results: [{ key: `b-key-${run}`, status: 'sent' }] });
    expect(aAnswer).toMatchObject({ callId: 'call-a', results: [{ key: `a-key-${run}`, status: 'sent' }] });
    // Each request's record holds its own response.
    for (const [name, answer] of [
      ['a', aAnswer],
      ['b', b],
    ] as const) {
      const record = await readItem(idempotencyTable, recordId(PUBLISH_NAMESPACE, `${name}-${run}`));
      expect(record).toMatchObject({ status: 'COMPLETED' });
      expect(JSON.parse(String(record?.result))).toEqual(answer);
    }
    // A's lease, taken before B started, runs to A's deadline (+ 2 s), not B's.
    expect(aRecord).toMatchObject({ status: 'IN_PROGRESS' });
    expect(Number(aRecord?.leaseExpiresAt)).toBeLessThanOrEqual(heldSince + TIMEOUT_SECONDS * 1000 + 2_000);
    const sent = await receiveMessages(sqs, queue.url, 2);
    expect(sent.map((message) => JSON.parse(message.Body ?? '{}').key).sort()).toEqual([
      `a-key-${run}`,
      `b-key-${run}`,
    ]);
  });
});
