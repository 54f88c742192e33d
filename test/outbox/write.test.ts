import { type DynamoDBClient, ScanCommand, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoDbClientVia } from '../../chaos/sdk-clients.js';
import { startFaultProxy } from '../../harness/fault-proxy.js';
import type { Fault } from '../../harness/faults.js';
import { targetedFaultPlan } from '../../harness/targeted-plan.js';
import { deriveMessageKey } from '../../lambdas/common/message-key.js';
import { OUTBOX_ENVIRONMENT } from '../../lambdas/outbox/environment.js';
import {
  OncelyConfigurationError,
  Outbox,
  OutboxTokenReusedError,
  OutboxTooManyItemsError,
  OutboxValidationError,
  OutboxWriteCanceledError,
  OutboxWriteOutcomeUnknownError,
} from '../../lambdas/outbox/index.js';
import {
  DEFAULT_PENDING_SHARDS,
  type OutboxLayout,
  pendingShardOf,
  sequenceOf,
} from '../../lambdas/outbox/layout.js';
import { OutboxItems } from '../../lambdas/outbox/outbox-items.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createOutboxTable } from '../support/outbox.js';
import { forgetTokens, loseAnswers } from '../support/sdk-middleware.js';

let dynamodb: DynamoDBClient;
let layout: OutboxLayout;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  layout = await createOutboxTable(dynamodb);
});
afterAll(() => dynamodb.destroy());

async function itemsOf(tableName: string): Promise<Record<string, unknown>[]> {
  const { Items = [] } = await dynamodb.send(new ScanCommand({ TableName: tableName, ConsistentRead: true }));
  return Items.map((item) => unmarshall(item));
}

const orderWrite = (orderId: string) => ({
  Put: {
    TableName: layout.tableName,
    Item: { pk: `order#${orderId}`, sk: 'order', amountCents: 1200 },
    ConditionExpression: 'attribute_not_exists(pk)',
  },
});

describe('Outbox.write', () => {
  it('commits the writes, each message and its pending marker in one transaction', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    const message = { type: 'OrderPlaced', groupId: 'customer-1', payload: { orderId: 'o-1' } };
    const { keys } = await outbox.write({
      writes: [orderWrite('o-1')],
      messages: [message, { ...message, key: 'given-key', payload: { orderId: 'o-1', second: true } }],
    });
    expect(keys).toEqual([deriveMessageKey(message), 'given-key']);

    const items = await itemsOf(layout.tableName);
    expect(items.find((item) => item.pk === 'order#o-1')).toMatchObject({ amountCents: 1200 });
    const outboxItem = items.find((item) => item.pk === `oncely-outbox#${keys[0]}`);
    expect(outboxItem).toMatchObject({
      outboxStatus: 'PENDING',
      groupId: 'customer-1',
      messageType: 'OrderPlaced',
    });
    expect(JSON.parse(String(outboxItem?.body))).toMatchObject({ key: keys[0], payload: { orderId: 'o-1' } });
    const markers = items.filter((item) => item.pk === 'oncely-outbox-group#customer-1');
    // In the order of the messages: the marker's sort key is the order.
    expect(markers.map((marker) => marker.outboxKey)).toEqual(keys);
    // In the group's shard of the pending index (DESIGN §9.1), by default one of 8.
    expect(markers.map((marker) => marker.outboxPending)).toEqual(
      keys.map(() => pendingShardOf('customer-1', DEFAULT_PENDING_SHARDS)),
    );
  });

  it('writes nothing when a condition of your writes fails, and names the write', async () => {
    const own = await createOutboxTable(dynamodb, 'rollback');
    const outbox = new Outbox({ client: dynamodb, ...own });
    const write = { ...orderWrite('o-2'), Put: { ...orderWrite('o-2').Put, TableName: own.tableName } };
    await outbox.write({ writes: [write], messages: [{ type: 'OrderPlaced', groupId: 'g', payload: 1 }] });
    const before = await itemsOf(own.tableName);

    const error = await outbox
      .write({ writes: [write], messages: [{ type: 'OrderPlaced', groupId: 'g', payload: 2 }] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboxWriteCanceledError);
    expect((error as OutboxWriteCanceledError).name).toBe('OutboxWriteCanceledError');
    expect((error as OutboxWriteCanceledError).failures).toEqual([
      expect.objectContaining({ kind: 'write', index: 0, code: 'ConditionalCheckFailed' }),
    ]);
    expect(await itemsOf(own.tableName)).toHaveLength(before.length);
  });

  it('refuses a key already in the outbox, naming the message, and writes nothing', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    await outbox.write({ messages: [{ type: 'T', groupId: 'g', key: 'once-only', payload: 1 }] });
    const error = await outbox
      .write({
        writes: [orderWrite('o-3')],
        messages: [
          { type: 'T', groupId: 'g', key: 'fresh', payload: 1 },
          { type: 'T', groupId: 'g', key: 'once-only', payload: 1 },
        ],
      })
      .catch((caught: unknown) => caught);
    expect((error as OutboxWriteCanceledError).failures).toEqual([
      expect.objectContaining({
        kind: 'message',
        index: 1,
        key: 'once-only',
        code: 'ConditionalCheckFailed',
      }),
    ]);
    expect((error as Error).message).toContain('key "once-only" is already in the outbox');
    const items = await itemsOf(layout.tableName);
    expect(items.some((item) => item.pk === 'order#o-3' || item.outboxKey === 'fresh')).toBe(false);
  });

  it('validates messages as the publisher does, before writing anything', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout, maxMessageBytes: 1_024 });
    const error = await outbox
      .write({
        writes: [orderWrite('o-4')],
        messages: [
          { type: '', groupId: 'g', payload: 1 },
          { type: 'T', groupId: 'has space', payload: 1 },
          { type: 'T', groupId: 'g', payload: 'x'.repeat(2_000) },
        ],
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboxValidationError);
    expect((error as OutboxValidationError).problems.map((problem) => problem.index)).toEqual([0, 1, 2]);
    expect((await itemsOf(layout.tableName)).some((item) => item.pk === 'order#o-4')).toBe(false);
  });

  it('refuses more items than a transaction takes', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    const messages = Array.from({ length: 50 }, (_, i) => ({ type: 'T', groupId: 'g', payload: i }));
    await expect(outbox.write({ writes: [orderWrite('o-5')], messages })).rejects.toThrow(
      OutboxTooManyItemsError,
    );
  });

  it('commits once when the answer to the transaction is lost and the SDK sends it again', async () => {
    const client = localDynamoClient();
    const lost = loseAnswers(client, (operation) => operation === 'TransactWriteItems');
    const outbox = new Outbox({ client, ...layout });
    const { keys } = await outbox.write({
      writes: [orderWrite('o-6')],
      messages: [{ type: 'T', groupId: 'lost-answer', payload: 'o-6' }],
    });
    expect(lost.lost).toBe(1);
    const items = await itemsOf(layout.tableName);
    expect(
      items.filter((item) => item.outboxKey === keys[0] && item.pk === `oncely-outbox#${keys[0]}`),
    ).toHaveLength(1);
    client.destroy();
  });

  it('needs a table: from its options or OUTBOX_TABLE_NAME', () => {
    const saved = process.env[OUTBOX_ENVIRONMENT.tableName];
    delete process.env[OUTBOX_ENVIRONMENT.tableName];
    try {
      expect(() => new Outbox({ client: dynamodb })).toThrow(OncelyConfigurationError);
      expect(() => new Outbox({ client: dynamodb })).toThrow(
        /^The outbox's environment is incomplete or invalid: OUTBOX_TABLE_NAME is not set\. OncelyOutbox\.grantWrite sets/,
      );
      process.env[OUTBOX_ENVIRONMENT.tableName] = 'from-environment';
      expect(new Outbox({ client: dynamodb }).layout).toEqual({
        tableName: 'from-environment',
        partitionKey: 'pk',
        sortKey: 'sk',
      });
    } finally {
      if (saved === undefined) delete process.env[OUTBOX_ENVIRONMENT.tableName];
      else process.env[OUTBOX_ENVIRONMENT.tableName] = saved;
    }
  });
});

describe('the order of successive writes', () => {
  it('keeps the order of writes made in the same millisecond', async () => {
    const frozen = new Date('2026-11-22T10:00:00.000Z');
    const outbox = new Outbox({ client: dynamodb, ...layout, now: () => frozen });
    const keys: string[] = [];
    // Keys that sort the other way round than the writes.
    for (const key of ['zz-first', 'mm-second', 'aa-third']) {
      keys.push(
        ...(await outbox.write({ messages: [{ type: 'T', groupId: 'same-ms', key, payload: key }] })).keys,
      );
    }
    const markers = (await itemsOf(layout.tableName))
      .filter((item) => item.pk === 'oncely-outbox-group#same-ms')
      .sort((a, b) => String(a.sk).localeCompare(String(b.sk)));
    expect(markers.map((marker) => marker.outboxKey)).toEqual(keys);
  });
});

describe('the order of causally related writes of two producers', () => {
  // DESIGN §9: B is written after A committed, by a producer whose clock is 20 ms behind A's.
  const base = Date.parse('2026-11-22T11:00:00.000Z');
  const clock = (ms: number) => () => new Date(ms);

  it('sends B after A though B’s clock reads earlier: B orders after its group’s pending messages', async () => {
    const producerA = new Outbox({ client: dynamodb, ...layout, now: clock(base + 20) });
    const producerB = new Outbox({ client: dynamodb, ...layout, now: clock(base) });
    const message = (key: string) => ({ type: 'T', groupId: 'skewed', key, payload: key });
    await producerA.write({ messages: [message('a-first')] });
    await producerB.write({ messages: [message('b-second')] });

    // What the relay drains, in this order: the group's pending markers, read as drainGroup reads them.
    const pending = await new OutboxItems({ client: dynamodb, layout }).pendingOfGroup('skewed', 10);
    expect(pending.map((marker) => marker.key)).toEqual(['a-first', 'b-second']);
  });

  it('keeps the producer’s own clock when its groups have nothing pending', async () => {
    const producer = new Outbox({ client: dynamodb, ...layout, now: clock(base) });
    await producer.write({ messages: [{ type: 'T', groupId: 'idle', key: 'only', payload: 1 }] });
    const [marker] = await new OutboxItems({ client: dynamodb, layout }).pendingOfGroup('idle', 10);
    expect(marker && sequenceOf(marker.order)).toBe(base);
  });
});

describe('retrying a write with its clientRequestToken', () => {
  /** A client whose every TransactWriteItems is applied and loses its answer, so the call fails after committing. */
  function clientLosingEveryAnswer() {
    const client = localDynamoClient();
    loseAnswers(client, (operation) => operation === 'TransactWriteItems', 100);
    return client;
  }
  const input = (orderId: string, token: string) => ({
    writes: [orderWrite(orderId)],
    messages: [
      { type: 'OrderPlaced', groupId: `retry-${orderId}`, key: `placed-${orderId}`, payload: { orderId } },
    ],
    clientRequestToken: token,
  });

  it('succeeds without writing twice when the same instance retries a call that committed', async () => {
    const client = localDynamoClient();
    // Every attempt of the first call is applied and loses its answer, until the network heals.
    let losing = true;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const result = await next(args);
        if (losing && context.commandName === 'TransactWriteItemsCommand') {
          throw Object.assign(new Error('injected: answer lost'), { name: 'TimeoutError', $metadata: {} });
        }
        return result;
      },
      { step: 'deserialize', name: 'loseEveryAnswer' },
    );
    const outbox = new Outbox({ client, ...layout });
    await expect(outbox.write(input('r-1', 'token-r-1'))).rejects.toThrow('answer lost');
    losing = false;

    expect(await outbox.write(input('r-1', 'token-r-1'))).toEqual({ keys: ['placed-r-1'] });
    const items = await itemsOf(layout.tableName);
    expect(items.filter((item) => item.pk === 'order#r-1')).toHaveLength(1);
    expect(items.filter((item) => item.outboxKey === 'placed-r-1')).toHaveLength(2); // the item and its marker
    client.destroy();
  });

  it('succeeds when another instance retries a call that committed (stamped at another time)', async () => {
    const losing = clientLosingEveryAnswer();
    await expect(
      new Outbox({ client: losing, ...layout }).write(input('r-2', 'token-r-2')),
    ).rejects.toThrow();
    losing.destroy();
    const later = new Date(Date.now() + 5_000);
    const { keys } = await new Outbox({ client: dynamodb, ...layout, now: () => later }).write(
      input('r-2', 'token-r-2'),
    );
    expect(keys).toEqual(['placed-r-2']);
    const items = await itemsOf(layout.tableName);
    expect(items.filter((item) => item.pk === 'order#r-2' || item.outboxKey === 'placed-r-2')).toHaveLength(
      3,
    );
  });

  /** A client through a fault proxy whose plan gives every BatchGetItem `fault`, `times` times. */
  async function tokenCheckFaulted(fault: Fault, times?: number) {
    const proxy = await startFaultProxy({
      service: 'dynamodb',
      upstream: emulatorEndpoint('dynamodbEndpoint'),
    });
    proxy.setPlan(
      targetedFaultPlan({ match: (request) => request.operation === 'BatchGetItem', fault, times }),
    );
    return { proxy, client: dynamoDbClientVia(proxy) };
  }

  /** The first call commits and loses every answer; the caller's retry is stamped anew. */
  async function committedWithLostAnswer(orderId: string, token: string) {
    const losing = clientLosingEveryAnswer();
    await expect(new Outbox({ client: losing, ...layout }).write(input(orderId, token))).rejects.toThrow();
    losing.destroy();
  }

  it('succeeds when the token check of a committed write comes back unprocessed once (throttled)', async () => {
    await committedWithLostAnswer('r-5', 'token-r-5');
    const { proxy, client } = await tokenCheckFaulted({ kind: 'unprocessed-keys' }, 1);

    const written = await new Outbox({ client, ...layout }).write(input('r-5', 'token-r-5'));

    expect(written).toEqual({ keys: ['placed-r-5'] });
    expect(proxy.stats().faults['unprocessed-keys']).toBe(1);
    client.destroy();
    await proxy.close();
  });

  it.each([
    { fault: { kind: 'unprocessed-keys' } as const, how: 'unprocessed on every try' },
    { fault: { kind: 'throttle' } as const, how: 'throttled on every try' },
  ])('never says "nothing was written" of a committed write whose token check is $how', async ({ fault }) => {
    const orderId = `r-6-${fault.kind}`;
    await committedWithLostAnswer(orderId, `token-${orderId}`);
    const { proxy, client } = await tokenCheckFaulted(fault);

    const error = await new Outbox({ client, ...layout })
      .write(input(orderId, `token-${orderId}`))
      .catch((caught: unknown) => caught);

    expect((error as Error).message).not.toContain('nothing was written');
    expect(error).toMatchObject({ name: 'OutboxWriteOutcomeUnknownError', retryable: true });
    expect(error).toBeInstanceOf(OutboxWriteOutcomeUnknownError);
    expect((await itemsOf(layout.tableName)).filter((item) => item.pk === `order#${orderId}`)).toHaveLength(
      1,
    );
    client.destroy();
    await proxy.close();
  });

  it('succeeds when a committed write is retried with its token after DynamoDB forgot it (10 minutes on)', async () => {
    await committedWithLostAnswer('r-7', 'token-r-7');
    const later = localDynamoClient();
    forgetTokens(later);

    const written = await new Outbox({ client: later, ...layout }).write(input('r-7', 'token-r-7'));

    expect(written).toEqual({ keys: ['placed-r-7'] });
    const items = await itemsOf(layout.tableName);
    expect(items.filter((item) => item.pk === 'order#r-7' || item.outboxKey === 'placed-r-7')).toHaveLength(
      3,
    );
    later.destroy();
  });

  it('refuses the same messages written again under another token: another write, not a retry', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    await outbox.write({ ...input('r-8', 'token-r-8'), writes: [] });
    const error = await outbox
      .write({ ...input('r-8', 'token-r-8-again'), writes: [orderWrite('r-8-again')] })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboxWriteCanceledError);
    expect((await itemsOf(layout.tableName)).some((item) => item.pk === 'order#r-8-again')).toBe(false);
  });

  it('refuses a token used for a different write, writing nothing', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout });
    await outbox.write(input('r-3', 'token-r-3'));
    const error = await new Outbox({ client: dynamodb, ...layout })
      .write(input('r-4', 'token-r-3'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(OutboxTokenReusedError);
    expect((await itemsOf(layout.tableName)).some((item) => item.pk === 'order#r-4')).toBe(false);
  });
});

describe('a write DynamoDB canceled for throttling (issue 40)', () => {
  /**
   * Cancels `client`'s first TransactWriteItems for throttling before it leaves, as DynamoDB cancels
   * a transaction over a partition's capacity, and every later one under a token it canceled: AWS
   * does not document what it remembers of a canceled call's token, and this is the worst case.
   * `meanwhile` runs before the first cancellation is answered.
   */
  function throttleFirstTry(client: DynamoDBClient, meanwhile: () => Promise<unknown>) {
    const canceledTokens = new Set<string>();
    const sentTokens: string[] = [];
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'TransactWriteItemsCommand') return next(args);
        const input = args.input as { ClientRequestToken: string; TransactItems: unknown[] };
        sentTokens.push(input.ClientRequestToken);
        if (sentTokens.length === 1 || canceledTokens.has(input.ClientRequestToken)) {
          if (sentTokens.length === 1) await meanwhile();
          canceledTokens.add(input.ClientRequestToken);
          throw new TransactionCanceledException({
            message: 'Transaction cancelled',
            $metadata: {},
            CancellationReasons: input.TransactItems.map((_, at) =>
              at === input.TransactItems.length - 1 ? { Code: 'ThrottlingError' } : { Code: 'None' },
            ),
          });
        }
        return next(args);
      },
      { step: 'initialize', name: 'throttleFirstTry' },
    );
    return { sentTokens };
  }
  const message = (key: string) => ({ type: 'T', groupId: 'throttled', key, payload: key });
  const base = Date.parse('2026-11-22T13:00:00.000Z');

  it('is rebuilt under a new token, after the writes committed meanwhile, and keeps the caller’s token for read-back', async () => {
    const client = localDynamoClient();
    // B commits while A's first try is throttled; B's clock is later than A's.
    const producerB = new Outbox({ client: dynamodb, ...layout, now: () => new Date(base + 5) });
    const { sentTokens } = throttleFirstTry(client, () =>
      producerB.write({ messages: [message('b-committed-first')] }),
    );
    const producerA = new Outbox({ client, ...layout, now: () => new Date(base) });

    await producerA.write({ messages: [message('a-committed-second')], clientRequestToken: 'token-a' });

    expect(sentTokens[0]).toBe('token-a');
    expect(new Set(sentTokens).size).toBe(sentTokens.length); // every try its own token
    const pending = await new OutboxItems({ client: dynamodb, layout }).pendingOfGroup('throttled', 10);
    expect(pending.map((marker) => marker.key)).toEqual(['b-committed-first', 'a-committed-second']);
    // The caller's retry with its token (its answer lost) still finds the write done.
    expect(
      await producerA.write({ messages: [message('a-committed-second')], clientRequestToken: 'token-a' }),
    ).toEqual({ keys: ['a-committed-second'] });
    client.destroy();
  });
});
