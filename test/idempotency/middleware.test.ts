import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import middy from '@middy/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DynamoDBIdempotencyStore,
  IdempotencyConflictError,
  IdempotencyInProgressError,
  idempotentRequest,
} from '../../lambdas/idempotency/index.js';
import { createTable, localDynamoClient, readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';

interface PublishRequest {
  requestId?: string;
  body: string;
}

let client: DynamoDBClient;
let table: string;
let store: DynamoDBIdempotencyStore;

beforeEach(async () => {
  client = localDynamoClient();
  table = await createTable(client, 'idem');
  store = new DynamoDBIdempotencyStore({ client, tableName: table });
});

afterEach(() => client.destroy());

function requestIdempotency() {
  return idempotentRequest<PublishRequest, unknown>({
    store,
    namespace: 'publish',
    key: (event) => event.requestId,
    cache: false,
  });
}

/** A handler that can be held open, to make invocations overlap on purpose. */
function controllableHandler(respond: (event: PublishRequest) => unknown = () => undefined) {
  let calls = 0;
  let release: () => void = () => undefined;
  let gate: Promise<void> = Promise.resolve();
  return {
    get calls() {
      return calls;
    },
    hold() {
      gate = new Promise((resolve) => (release = resolve));
    },
    release: () => release(),
    handler: async (event: PublishRequest) => {
      calls++;
      await gate;
      return respond(event);
    },
  };
}

describe('idempotentRequest middleware', () => {
  it('returns the stored response to a repeat without running the handler, also when it is undefined', async () => {
    const target = controllableHandler(() => undefined);
    const handler = middy(target.handler).use(requestIdempotency());

    expect(await handler({ requestId: 'r1', body: 'a' }, lambdaContext())).toBeUndefined();
    expect(await handler({ requestId: 'r1', body: 'a' }, lambdaContext())).toBeUndefined();
    expect(target.calls).toBe(1);
    expect(await readItem(table, 'publish#r1')).toMatchObject({ status: 'COMPLETED' });
  });

  it('replays a stored response', async () => {
    const target = controllableHandler((event) => ({ echoed: event.body }));
    const handler = middy(target.handler).use(requestIdempotency());
    await handler({ requestId: 'r1', body: 'a' }, lambdaContext());
    expect(await handler({ requestId: 'r1', body: 'a' }, lambdaContext())).toEqual({ echoed: 'a' });
    expect(target.calls).toBe(1);
  });

  it('runs without idempotency when the event has no key', async () => {
    const target = controllableHandler(() => 'ok');
    const handler = middy(target.handler).use(requestIdempotency());
    await handler({ body: 'a' }, lambdaContext());
    await handler({ body: 'a' }, lambdaContext());
    expect(target.calls).toBe(2);
  });

  it('gives a concurrent repeat an in-progress error, then the stored response', async () => {
    const target = controllableHandler(() => 'published');
    const handler = middy(target.handler).use(requestIdempotency());
    target.hold();
    const first = handler({ requestId: 'r1', body: 'a' }, lambdaContext());
    await expect.poll(() => target.calls, { timeout: 60_000 }).toBe(1);

    await expect(handler({ requestId: 'r1', body: 'a' }, lambdaContext())).rejects.toThrow(
      IdempotencyInProgressError,
    );
    target.release();
    expect(await first).toBe('published');
    expect(await handler({ requestId: 'r1', body: 'a' }, lambdaContext())).toBe('published');
    expect(target.calls).toBe(1);
  });

  it('reports the same key with another body as a conflict', async () => {
    const handler = middy(controllableHandler(() => 'x').handler).use(requestIdempotency());
    await handler({ requestId: 'r1', body: 'a' }, lambdaContext());
    await expect(handler({ requestId: 'r1', body: 'b' }, lambdaContext())).rejects.toThrow(
      IdempotencyConflictError,
    );
  });

  it('records a handler failure so that the next repeat runs again', async () => {
    let fail = true;
    const handler = middy(async () => {
      if (fail) throw new Error('queue unavailable');
      return 'sent';
    }).use(requestIdempotency());
    await expect(handler({ requestId: 'r1', body: 'a' }, lambdaContext())).rejects.toThrow(
      'queue unavailable',
    );
    expect(await readItem(table, 'publish#r1')).toMatchObject({ status: 'FAILED' });
    fail = false;
    expect(await handler({ requestId: 'r1', body: 'a' }, lambdaContext())).toBe('sent');
  });

  it('never touches a record it did not acquire when an earlier middleware throws', async () => {
    const owner = controllableHandler(() => 'owner');
    const ownerHandler = middy(owner.handler).use(requestIdempotency());
    owner.hold();
    const inFlight = ownerHandler({ requestId: 'r1', body: 'a' }, lambdaContext());
    await expect.poll(() => owner.calls, { timeout: 60_000 }).toBe(1);
    const held = await readItem(table, 'publish#r1');

    const failingEarlier = { before: async () => Promise.reject(new Error('validation failed')) };
    const other = middy(controllableHandler().handler).use(failingEarlier).use(requestIdempotency());
    await expect(other({ requestId: 'r1', body: 'a' }, lambdaContext())).rejects.toThrow('validation failed');
    expect(await readItem(table, 'publish#r1')).toEqual(held);

    owner.release();
    expect(await inFlight).toBe('owner');
    await expect(other({ requestId: 'r1', body: 'a' }, lambdaContext())).rejects.toThrow('validation failed');
    expect(await readItem(table, 'publish#r1')).toMatchObject({ status: 'COMPLETED', result: '"owner"' });
  });

  it('leaves a completed record alone when a later after-middleware fails', async () => {
    const failingAfter = { after: async () => Promise.reject(new Error('serialisation failed')) };
    const handler = middy(controllableHandler(() => 'done').handler)
      .use(failingAfter)
      .use(requestIdempotency());
    await expect(handler({ requestId: 'r1', body: 'a' }, lambdaContext())).rejects.toThrow(
      'serialisation failed',
    );
    expect(await readItem(table, 'publish#r1')).toMatchObject({ status: 'COMPLETED', result: '"done"' });
  });
});
