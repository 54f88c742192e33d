import { randomUUID } from 'node:crypto';
import {
  BatchGetItemCommand,
  ConditionalCheckFailedException,
  DynamoDBClient,
  GetItemCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dynamoDbClientVia, sqsClientVia } from '../../chaos/sdk-clients.js';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import type { ChaosRequest, Fault } from '../../harness/faults.js';
import { HungRequestTimeoutError } from '../../harness/held-requests.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { freePort } from '../../sandbox/free-port.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';
import { recordRetryDecisions } from './retry-decisions.js';

/**
 * The test's (first) `operation` request gets `fault` on every send, SDK retries included; with
 * `times: 1`, on its first try only.
 */
const onOperation = (operation: string, fault: Fault, times?: number) =>
  targetedFaultPlan({
    match: (request) => request.operation === operation,
    fault,
    ...(times ? { times } : {}),
  });

describe('fault proxy in front of DynamoDB Local, with the real SDK', () => {
  const direct = localDynamoClient();
  let table: string;
  let proxy: FaultProxy;
  let client: DynamoDBClient;

  beforeAll(async () => {
    table = await createTable(direct, 'chaos');
  });
  afterAll(() => direct.destroy());
  beforeEach(async () => {
    proxy = await startFaultProxy({ service: 'dynamodb', upstream: emulatorEndpoint('dynamodbEndpoint') });
    client = dynamoDbClientVia(proxy);
  });
  afterEach(async () => {
    client.destroy();
    await proxy.close();
  });

  /** Acquire-like: a conditional put that returns the existing item when its condition fails. */
  const putOnce = (target: DynamoDBClient, id: string, token: string) =>
    target.send(
      new PutItemCommand({
        TableName: table,
        Item: { id: { S: id }, token: { S: token } },
        ConditionExpression: 'attribute_not_exists(id)',
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );

  it("shows the plan each request's service, operation, parsed body and ordinal", async () => {
    const seen: ChaosRequest[] = [];
    proxy.setPlan((request) => {
      seen.push(request);
      return undefined;
    });
    const id = randomUUID();

    await putOnce(client, id, 'mine');
    await client.send(new GetItemCommand({ TableName: table, Key: { id: { S: id } } }));

    expect(seen).toMatchObject([
      {
        service: 'dynamodb',
        operation: 'PutItem',
        body: { TableName: table, Item: { id: { S: id } } },
        ordinal: 1,
      },
      { service: 'dynamodb', operation: 'GetItem', body: { Key: { id: { S: id } } }, ordinal: 2 },
    ]);
    expect(proxy.stats()).toMatchObject({
      requests: { PutItem: 1, GetItem: 1 },
      faults: { 'fail-before': 0 },
    });
  });

  it('fail-before answers InternalServerError (500), which the SDK retries as transient; nothing is applied', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'fail-before' }));
    const decisions = await recordRetryDecisions(client);
    const id = randomUUID();

    const error = await putOnce(client, id, 'mine').catch((caught: unknown) => caught);

    expect(error).toMatchObject({
      name: 'InternalServerError',
      $metadata: { httpStatusCode: 500, attempts: 3 },
    });
    expect(decisions).toEqual(['TRANSIENT', 'TRANSIENT', 'TRANSIENT']);
    expect(proxy.stats().requests.PutItem).toBe(3);
    expect(await readItem(table, id)).toBeUndefined();
  });

  it('fail-before once: the SDK retry succeeds, one item written, two requests', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'fail-before' }, 1));
    const id = randomUUID();

    const output = await putOnce(client, id, 'mine');

    expect(output.$metadata.attempts).toBe(2);
    expect(await readItem(table, id)).toEqual({ id, token: 'mine' });
    expect(proxy.stats()).toMatchObject({ requests: { PutItem: 2 }, faults: { 'fail-before': 1 } });
  });

  it.each([
    { how: 'a 500 answer', reset: false },
    { how: 'a connection reset', reset: true },
  ])('lose-answer by $how: the put is applied, and its SDK retry meets its own item', async ({ reset }) => {
    proxy.setPlan(onOperation('PutItem', { kind: 'lose-answer', reset }, 1));
    const decisions = await recordRetryDecisions(client);
    const id = randomUUID();

    const error = await putOnce(client, id, 'mine').catch((caught: unknown) => caught);

    // The retry's condition fails on the item its own first try wrote: ALL_OLD shows the token.
    expect(error).toBeInstanceOf(ConditionalCheckFailedException);
    expect((error as ConditionalCheckFailedException).Item).toEqual({ id: { S: id }, token: { S: 'mine' } });
    expect(decisions).toEqual(['TRANSIENT', 'CLIENT_ERROR']);
    expect(proxy.stats()).toMatchObject({ requests: { PutItem: 2 }, faults: { 'lose-answer': 1 } });
  });

  it('throttle answers ProvisionedThroughputExceededException (400), which the SDK classifies as throttling', async () => {
    const once = dynamoDbClientVia(proxy, 1);
    const decisions = await recordRetryDecisions(once);
    proxy.setPlan(onOperation('PutItem', { kind: 'throttle' }));
    const id = randomUUID();

    const error = await putOnce(once, id, 'mine').catch((caught: unknown) => caught);
    once.destroy();

    expect(error).toMatchObject({
      name: 'ProvisionedThroughputExceededException',
      $metadata: { httpStatusCode: 400, attempts: 1 },
    });
    expect(decisions).toEqual(['THROTTLING']);
    expect(await readItem(table, id)).toBeUndefined();
  });

  it('throttle once: the SDK retry succeeds', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'throttle' }, 1));
    const decisions = await recordRetryDecisions(client);
    const id = randomUUID();

    const output = await putOnce(client, id, 'mine');

    expect(output.$metadata.attempts).toBe(2);
    expect(decisions).toEqual(['THROTTLING']);
    expect(await readItem(table, id)).toEqual({ id, token: 'mine' });
  });

  it('unprocessed-keys answers BatchGetItem with every key unprocessed and nothing read; the SDK does not retry it', async () => {
    const id = randomUUID();
    await putOnce(direct, id, 'mine');
    proxy.setPlan(onOperation('BatchGetItem', { kind: 'unprocessed-keys' }, 1));
    const request = { [table]: { Keys: [{ id: { S: id } }], ConsistentRead: true } };

    const first = await client.send(new BatchGetItemCommand({ RequestItems: request }));
    const second = await client.send(new BatchGetItemCommand({ RequestItems: request }));

    expect(first.Responses).toEqual({ [table]: [] });
    expect(first.UnprocessedKeys).toEqual(request);
    expect(first.$metadata.attempts).toBe(1);
    expect(second.Responses?.[table]).toEqual([{ id: { S: id }, token: { S: 'mine' } }]);
    expect(proxy.stats()).toMatchObject({ requests: { BatchGetItem: 2 }, faults: { 'unprocessed-keys': 1 } });
  });

  it('delay forwards the request after the delay', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'delay', ms: 150 }));
    const id = randomUUID();

    const started = performance.now();
    const output = await putOnce(client, id, 'mine');

    expect(performance.now() - started).toBeGreaterThanOrEqual(145);
    expect(output.$metadata.attempts).toBe(1);
    expect(await readItem(table, id)).toEqual({ id, token: 'mine' });
  });

  it('hang holds the request, unapplied, until released; then it goes on', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'hang' }));
    const id = randomUUID();
    let settled = false;
    const put = putOnce(client, id, 'mine').finally(() => {
      settled = true;
    });

    await proxy.waitForHung();
    // A later request through the same proxy completes while the hung one does not.
    const { Item } = await client.send(new GetItemCommand({ TableName: table, Key: { id: { S: id } } }));
    expect(Item).toBeUndefined();
    expect(settled).toBe(false);
    expect(proxy.stats()).toMatchObject({ hung: 1, faults: { hang: 1 } });

    proxy.releaseHung();
    expect((await put).$metadata.attempts).toBe(1);
    expect(await readItem(table, id)).toEqual({ id, token: 'mine' });
    expect(proxy.stats().hung).toBe(0);
  });

  it('closing the proxy drops a hung request: its caller fails and nothing is applied', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'hang' }));
    const id = randomUUID();
    const put = putOnce(client, id, 'mine').catch((caught: unknown) => caught);

    await proxy.waitForHung();
    await proxy.close();

    expect(await put).toBeInstanceOf(Error);
    expect(await readItem(table, id)).toBeUndefined();
  });

  it('closing the proxy drops a delayed request too', async () => {
    proxy.setPlan(onOperation('PutItem', { kind: 'delay', ms: 60_000 }));
    const id = randomUUID();
    const put = putOnce(client, id, 'mine').catch((caught: unknown) => caught);

    await expect.poll(() => proxy.stats().faults.delay, { timeout: 60_000 }).toBe(1);
    await proxy.close();

    expect(await put).toBeInstanceOf(Error);
    expect(await readItem(table, id)).toBeUndefined();
  });

  it('waitForHung gives up after its bound when nothing hangs', async () => {
    await expect(proxy.waitForHung(1, 50)).rejects.toThrow(HungRequestTimeoutError);
  });

  it("the SDK's own default: DynamoDBClient makes 4 attempts (the helpers set 3)", async () => {
    const defaults = new DynamoDBClient(localAwsConfig(proxy.endpoint));
    proxy.setPlan(onOperation('GetItem', { kind: 'fail-before' }));

    const error = await defaults
      .send(new GetItemCommand({ TableName: table, Key: { id: { S: randomUUID() } } }))
      .catch((caught: unknown) => caught);
    defaults.destroy();

    expect(error).toMatchObject({ $metadata: { attempts: 4 } });
    expect(proxy.stats().requests.GetItem).toBe(4);
  });
});

describe('fault proxy in front of the SQS emulator, with the real SDK', () => {
  const direct = localSqsClient();
  const queues: FifoQueue[] = [];
  let queue: FifoQueue;
  let proxy: FaultProxy;
  let client: SQSClient;

  afterAll(async () => {
    await deleteQueues(direct, queues);
    direct.destroy();
  });
  beforeEach(async () => {
    queue = await createFifoQueue(direct);
    queues.push(queue);
    proxy = await startFaultProxy({ service: 'sqs', upstream: emulatorEndpoint('sqsEndpoint') });
    client = sqsClientVia(proxy);
  });
  afterEach(async () => {
    client.destroy();
    await proxy.close();
  });

  const sendOne = (target: SQSClient, key: string) =>
    target.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: JSON.stringify(createEnvelope({ type: 'test', key, groupId: 'g', payload: {} })),
        MessageGroupId: 'g',
        MessageDeduplicationId: key,
      }),
    );

  it.each([
    { kind: 'fail-before', name: 'InternalError', status: 500, decision: 'TRANSIENT' },
    { kind: 'throttle', name: 'RequestThrottled', status: 400, decision: 'THROTTLING' },
  ] as const)('$kind answers $name ($status), which the SDK classifies as $decision', async (shape) => {
    const once = sqsClientVia(proxy, 1);
    const decisions = await recordRetryDecisions(once);
    proxy.setPlan(onOperation('SendMessage', { kind: shape.kind }));

    const error = await sendOne(once, randomUUID()).catch((caught: unknown) => caught);
    once.destroy();

    expect(error).toMatchObject({ name: shape.name, $metadata: { httpStatusCode: shape.status } });
    expect(decisions).toEqual([shape.decision]);
    await drainQueue(direct, queue.url, 0);
  });

  it('throttle once: the SDK retry sends the message', async () => {
    proxy.setPlan(onOperation('SendMessage', { kind: 'throttle' }, 1));
    const key = randomUUID();

    const output = await sendOne(client, key);

    expect(output.$metadata.attempts).toBe(2);
    expect((await drainQueue(direct, queue.url, 1)).map(({ envelope }) => envelope.key)).toEqual([key]);
  });

  it('SendMessageBatch whose answer is lost: the SDK retry is deduplicated, each message is queued once', async () => {
    proxy.setPlan(onOperation('SendMessageBatch', { kind: 'lose-answer' }, 1));
    const keys = [randomUUID(), randomUUID(), randomUUID()];

    const output = await client.send(batchOf(keys));

    expect(output.$metadata.attempts).toBe(2);
    expect(output.Successful).toHaveLength(3);
    expect(output.Failed ?? []).toEqual([]);
    expect(proxy.stats()).toMatchObject({ requests: { SendMessageBatch: 2 }, faults: { 'lose-answer': 1 } });
    // drainQueue also fails if any message beyond the three was queued.
    const received = await drainQueue(direct, queue.url, 3);
    expect(received.map(({ envelope }) => envelope.key)).toEqual(keys);
  });

  const batchOf = (keys: string[]) =>
    new SendMessageBatchCommand({
      QueueUrl: queue.url,
      Entries: keys.map((key, i) => ({
        Id: String(i),
        MessageBody: JSON.stringify(createEnvelope({ type: 'test', key, groupId: 'g', payload: { i } })),
        MessageGroupId: 'g',
        MessageDeduplicationId: key,
      })),
    });

  it('fail-entry fails one entry unsent and lets SQS accept the later entries of its group', async () => {
    proxy.setPlan(onOperation('SendMessageBatch', { kind: 'fail-entry', entry: 1 }, 1));
    const keys = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];

    const output = await client.send(batchOf(keys));

    expect(output.$metadata).toMatchObject({ httpStatusCode: 200, attempts: 1 });
    expect(output.Successful?.map((entry) => entry.Id)).toEqual(['0', '2', '3']);
    expect(output.Failed).toEqual([
      { Id: '1', Code: 'InternalError', SenderFault: false, Message: 'entry failed by the fault proxy' },
    ]);
    expect(proxy.stats().faults['fail-entry']).toBe(1);
    // The failed entry never reached the queue; the later ones of its group did.
    const received = await drainQueue(direct, queue.url, 3);
    expect(received.map(({ envelope }) => envelope.key)).toEqual([keys[0], keys[2], keys[3]]);
  });

  it('fail-entry with loseAnswer fails one entry unsent, lets SQS accept the others, and loses the answer', async () => {
    proxy.setPlan(onOperation('SendMessageBatch', { kind: 'fail-entry', entry: 0, loseAnswer: true }, 1));
    const keys = [randomUUID(), randomUUID()];

    const output = await client.send(batchOf(keys));

    // The SDK retried the whole batch after the lost answer: both accepted, the first behind the
    // second — why Oncely sends one message of a group per call (DESIGN §6).
    expect(output.$metadata.attempts).toBe(2);
    expect(output.Successful?.map((entry) => entry.Id)).toEqual(['0', '1']);
    expect(proxy.stats().faults['fail-entry']).toBe(1);
    const received = await drainQueue(direct, queue.url, 2);
    expect(received.map(({ envelope }) => envelope.key)).toEqual([keys[1], keys[0]]);
  });

  it('stale-handle makes SQS refuse one entry of a delete batch, as a receipt handle gone stale', async () => {
    const keys = [randomUUID(), randomUUID()];
    await direct.send(batchOf(keys));
    const { Messages = [] } = await direct.send(
      new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    expect(Messages).toHaveLength(2);
    proxy.setPlan(onOperation('DeleteMessageBatch', { kind: 'stale-handle', entry: 0 }, 1));

    const output = await client.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queue.url,
        Entries: Messages.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
      }),
    );

    expect(output.Successful?.map((entry) => entry.Id)).toEqual(['1']);
    expect(output.Failed?.map((entry) => entry.Id)).toEqual(['0']);
    expect(proxy.stats().faults['stale-handle']).toBe(1);
  });

  it('fail-entry on a batch of one answers it failed without asking SQS', async () => {
    proxy.setPlan(onOperation('SendMessageBatch', { kind: 'fail-entry', entry: 0 }, 1));

    const output = await client.send(batchOf([randomUUID()]));

    expect(output.Successful ?? []).toEqual([]);
    expect(output.Failed).toMatchObject([{ Id: '0', Code: 'InternalError', SenderFault: false }]);
    await drainQueue(direct, queue.url, 0);
  });

  it("the SDK's own default: SQSClient makes 3 attempts", async () => {
    const defaults = new SQSClient(localAwsConfig(proxy.endpoint));
    proxy.setPlan(onOperation('SendMessage', { kind: 'fail-before' }));

    const error = await sendOne(defaults, randomUUID()).catch((caught: unknown) => caught);
    defaults.destroy();

    expect(error).toMatchObject({ $metadata: { attempts: 3 } });
    expect(proxy.stats().requests.SendMessage).toBe(3);
  });
});

describe('fault proxy whose own connection to the upstream fails', () => {
  // Nothing listens on the upstream's port: every request the proxy sends on meets a refused
  // connection, as one sent on a stale pooled socket meets a reset. No fault decided that.
  let proxy: FaultProxy;
  let client: SQSClient;
  const heard: { operation: string; fault?: Fault['kind'] }[] = [];

  beforeEach(async () => {
    heard.length = 0;
    proxy = await startFaultProxy({ service: 'sqs', upstream: `http://127.0.0.1:${await freePort()}` });
    client = sqsClientVia(proxy, 1);
  });
  afterEach(async () => {
    client.destroy();
    await proxy.close();
  });

  const sendBatch = () =>
    client
      .send(
        new SendMessageBatchCommand({
          QueueUrl: `${proxy.endpoint}/123456789012/q.fifo`,
          Entries: [{ Id: '0', MessageBody: '{}', MessageGroupId: 'g', MessageDeduplicationId: 'k' }],
        }),
      )
      .catch((caught: unknown) => caught);
  const watch = (request: ChaosRequest, fault: Fault | undefined) =>
    heard.push({ operation: request.operation, ...(fault ? { fault: fault.kind } : {}) });

  it('tells the watcher of the plan that decided it, with its fault; the caller sees no answer', async () => {
    proxy.setPlan(() => undefined, watch);
    expect(await sendBatch()).toMatchObject({ $metadata: { attempts: 1 } });
    proxy.setPlan(onOperation('SendMessageBatch', { kind: 'fail-entry', entry: 1 }), watch);
    await sendBatch();
    expect(heard).toEqual([
      { operation: 'SendMessageBatch' },
      { operation: 'SendMessageBatch', fault: 'fail-entry' },
    ]);
  });

  it('tells nothing of a request a fault answered, lost the answer of, or never sent on', async () => {
    for (const fault of [{ kind: 'lose-answer' }, { kind: 'fail-before' }] as const) {
      proxy.setPlan(onOperation('SendMessageBatch', fault), watch);
      await sendBatch();
    }
    proxy.setPlan(() => undefined); // a later plan without a watcher: the earlier one hears nothing more
    await sendBatch();
    expect(proxy.stats().requests.SendMessageBatch).toBe(3);
    expect(heard).toEqual([]);
  });
});
