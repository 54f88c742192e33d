import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import middy from '@middy/core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { dynamoDbClientVia } from '../../chaos/sdk-clients.js';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import type { ChaosRequest, Fault } from '../../harness/faults.js';
import {
  DynamoDBIdempotencyStore,
  type IdempotencyObserver,
  idempotentRequest,
  RecordNotWrittenError,
} from '../../lambdas/idempotency/index.js';
import { PUBLISHER_STORE_CLIENT_CONFIG } from '../../lambdas/publisher/handler.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { lambdaContext } from '../support/lambda-context.js';
import { orders, usePublisherFixture } from '../support/publisher.js';
import { setsStatus } from '../support/sdk-middleware.js';
import { drainQueue } from '../support/sqs.js';

// Issue 30, item 3: a response is returned only once its record says COMPLETED, so that what a
// caller is told is what every repeat is told. A completion write that fails for good, or whose
// every answer is lost, makes the request fail (retryably) instead.

let table: string;
let proxy: FaultProxy;
let viaProxy: DynamoDBClient;
/** The fault the COMPLETED writes of the record under test get, for the next `faultsLeft` of them. */
let completionFault: Fault | undefined;
let faultsLeft = Number.POSITIVE_INFINITY;
let target = '';
let now = Date.now();

beforeAll(async () => {
  const setup = localDynamoClient();
  table = await createTable(setup, 'request-completion');
  setup.destroy();
  proxy = await startFaultProxy({
    service: 'dynamodb',
    upstream: emulatorEndpoint('dynamodbEndpoint'),
    plan: ({ operation, body }: ChaosRequest) =>
      operation === 'UpdateItem' &&
      (body.Key as { id?: { S?: string } } | undefined)?.id?.S === target &&
      setsStatus(body, 'COMPLETED') &&
      faultsLeft-- > 0
        ? completionFault
        : undefined,
  });
  viaProxy = dynamoDbClientVia(proxy);
});

afterAll(async () => {
  viaProxy.destroy();
  await proxy.close();
});

beforeEach(() => {
  now = Date.now();
  completionFault = undefined;
  faultsLeft = Number.POSITIVE_INFINITY;
});

const silent: IdempotencyObserver = {
  completionWriteFailed: () => undefined,
  leaseLost: () => undefined,
  inDoubt: () => undefined,
  failureWriteFailed: () => undefined,
  resultNotStored: () => undefined,
};

interface Request {
  requestId: string;
}

/** A handler that counts its runs, behind `idempotentRequest` on a store through `client`. */
function countingHandler(client: DynamoDBClient) {
  let runs = 0;
  const store = new DynamoDBIdempotencyStore({ client, tableName: table, now: () => now });
  const handler = middy(async () => ({ run: ++runs })).use(
    idempotentRequest<Request, { run: number }>({
      store,
      namespace: 'req',
      key: (event) => event.requestId,
      cache: false,
      observer: silent,
    }),
  );
  return {
    handler,
    get runs() {
      return runs;
    },
  };
}

function newRequest(): Request {
  const requestId = `r-${Math.random().toString(36).slice(2)}`;
  target = `req#${requestId}`;
  return { requestId };
}

const LEASE_MS = 30_000;

describe('idempotentRequest: a response whose completion is not recorded', () => {
  it('is not returned when the write fails every try: the caller gets RecordNotWrittenError, a repeat after the lease runs it again', async () => {
    const counted = countingHandler(viaProxy);
    const request = newRequest();
    completionFault = { kind: 'fail-before' };

    await expect(counted.handler(request, lambdaContext(LEASE_MS))).rejects.toThrow(RecordNotWrittenError);
    expect(await readItem(table, target)).toMatchObject({ status: 'IN_PROGRESS' });

    // Whoever repeats it once the lease expired runs it again, and that response is recorded.
    completionFault = undefined;
    now += LEASE_MS + 2_001;
    expect(await counted.handler(request, lambdaContext(LEASE_MS))).toEqual({ run: 2 });
    expect(await readItem(table, target)).toMatchObject({ status: 'COMPLETED', result: '{"run":2}' });
  });

  it('is not returned when the write is applied but every answer is lost: the repeat gets it, stored, without a run', async () => {
    const counted = countingHandler(viaProxy);
    const request = newRequest();
    completionFault = { kind: 'lose-answer' };

    await expect(counted.handler(request, lambdaContext(LEASE_MS))).rejects.toThrow(RecordNotWrittenError);
    expect(await readItem(table, target)).toMatchObject({ status: 'COMPLETED', result: '{"run":1}' });

    completionFault = undefined;
    expect(await counted.handler(request, lambdaContext(LEASE_MS))).toEqual({ run: 1 });
    expect(counted.runs).toBe(1);
  });

  it('is returned when one answer is lost and a retry finds the write its own', async () => {
    const counted = countingHandler(viaProxy);
    const request = newRequest();
    completionFault = { kind: 'lose-answer' };
    faultsLeft = 1;
    expect(await counted.handler(request, lambdaContext(LEASE_MS))).toEqual({ run: 1 });
    expect(proxy.stats().faults['lose-answer']).toBeGreaterThanOrEqual(1);
    expect(await readItem(table, target)).toMatchObject({ status: 'COMPLETED', result: '{"run":1}' });
  });
});

describe('the publisher, whose completion write fails', () => {
  const fixture = usePublisherFixture();

  it('answers RecordNotWrittenError, not `sent`; its repeat after the lease gets the same message ids, each message queued once', async () => {
    const store = new DynamoDBIdempotencyStore({
      client: viaProxy,
      tableName: fixture.table,
      now: () => now,
    });
    const publisher = fixture.publisher({ store });
    const request = { requestId: `p-${Math.random().toString(36).slice(2)}`, messages: orders(4, 2) };
    target = `publish#${request.requestId}`;
    completionFault = { kind: 'fail-before' };

    await expect(publisher(request, lambdaContext(LEASE_MS))).rejects.toThrow(RecordNotWrittenError);

    // The client's retry waits out the lease (well within SQS's 5 minutes) and runs the request
    // again: SQS drops what landed and answers with the first message ids.
    completionFault = undefined;
    now += LEASE_MS + 2_001;
    const { results } = await publisher(request, lambdaContext(LEASE_MS));
    expect(results.map((result) => result.status)).toEqual(['sent', 'sent', 'sent', 'sent']);
    const received = await drainQueue(fixture.sqs, fixture.queueUrl, 4); // and not one more
    expect(results.map((result) => (result.status === 'sent' ? result.messageId : undefined)).sort()).toEqual(
      received.map((message) => message.messageId).sort(),
    );
    expect(await readItem(fixture.table, target)).toMatchObject({ status: 'COMPLETED' });
  });
});

describe("the publisher's store client", () => {
  it('cuts off a hung record write, so the completion ends within the reserve instead of the invocation', async () => {
    const client = new DynamoDBClient({
      ...localAwsConfig(proxy.endpoint),
      ...PUBLISHER_STORE_CLIENT_CONFIG,
    });
    try {
      const counted = countingHandler(client);
      const request = newRequest();
      completionFault = { kind: 'hang' };
      await expect(counted.handler(request, lambdaContext(LEASE_MS))).rejects.toThrow(RecordNotWrittenError);
      expect(proxy.stats().faults.hang).toBeGreaterThanOrEqual(1);
    } finally {
      proxy.releaseHung();
      client.destroy();
    }
  });
});
