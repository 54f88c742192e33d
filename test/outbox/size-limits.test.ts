import { type DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Outbox, OutboxValidationError, OutboxWriteTooLargeError } from '../../lambdas/outbox/index.js';
import { itemBytes } from '../../lambdas/outbox/item-size.js';
import { MAX_LAST_ERROR_LENGTH, type OutboxLayout } from '../../lambdas/outbox/layout.js';
import { OutboxItems } from '../../lambdas/outbox/outbox-items.js';
import { LATER_ATTRIBUTES_BYTES, MAX_OUTBOX_ITEM_BYTES } from '../../lambdas/outbox/write-size.js';
import { countRequests } from '../../sandbox/request-counter.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { createOutboxTable } from '../support/outbox.js';

// Issue 30, item 9: the queue takes messages up to 1 MiB, but DynamoDB holds at most 400 KB in an
// item and 4 MB in a transaction. The outbox refuses what DynamoDB cannot store before any request.

let dynamodb: DynamoDBClient;
let layout: OutboxLayout;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  layout = await createOutboxTable(dynamodb, 'outbox-size');
});
afterAll(() => dynamodb.destroy());

const ONE_MIB = 1_048_576;

async function itemAt(pk: string, sk: string): Promise<Record<string, unknown> | undefined> {
  const { Item } = await dynamodb.send(
    new GetItemCommand({
      TableName: layout.tableName,
      Key: { pk: { S: pk }, sk: { S: sk } },
      ConsistentRead: true,
    }),
  );
  return Item && unmarshall(Item);
}

async function exists(pk: string, sk: string): Promise<boolean> {
  return (await itemAt(pk, sk)) !== undefined;
}

/** An Outbox on a client of its own, whose requests are counted. */
function countedOutbox() {
  const client = localDynamoClient();
  const requests = countRequests(client);
  return { outbox: new Outbox({ client, ...layout, maxMessageBytes: ONE_MIB }), requests, client };
}

const bigPut = (id: string, bytes: number) => ({
  Put: { TableName: layout.tableName, Item: { pk: `big#${id}`, sk: 'big', blob: 'x'.repeat(bytes) } },
});

describe('Outbox.write: what DynamoDB cannot store', () => {
  it('refuses a 500 KB message the queue would take, naming the 400 KB item limit, before any request', async () => {
    const { outbox, requests, client } = countedOutbox();
    const error = await outbox
      .write({ messages: [{ type: 'T', groupId: 'g', key: 'big-500k', payload: 'x'.repeat(500_000) }] })
      .catch((caught: unknown) => caught)
      .finally(() => client.destroy());
    expect(error).toBeInstanceOf(OutboxValidationError);
    const [problem] = (error as OutboxValidationError).problems;
    expect(problem).toMatchObject({ index: 0, path: 'messages[0]' });
    expect(problem?.message).toMatch(/409,600-byte \(400 KB\) item limit/);
    expect(requests.total()).toBe(0);
    expect(await exists('oncely-outbox#big-500k', 'oncely-outbox')).toBe(false);
  });

  it('refuses one of your own Puts over 400 KB, naming it', async () => {
    const { outbox, requests, client } = countedOutbox();
    const error = await outbox
      .write({ writes: [bigPut('p1', 420_000)], messages: [{ type: 'T', groupId: 'g', payload: 1 }] })
      .catch((caught: unknown) => caught)
      .finally(() => client.destroy());
    expect(error).toBeInstanceOf(OutboxValidationError);
    expect((error as OutboxValidationError).problems).toMatchObject([{ path: 'writes[0]' }]);
    expect(requests.total()).toBe(0);
  });

  it('refuses a write whose items together pass 4 MB, your Puts included, before any request', async () => {
    const { outbox, requests, client } = countedOutbox();
    const writes = Array.from({ length: 9 }, (_, i) => bigPut(`t${i}`, 380_000)); // 3.42 MB
    const messages = Array.from({ length: 3 }, (_, i) => ({
      type: 'T',
      groupId: 'g',
      key: `tx-${i}`,
      payload: 'y'.repeat(380_000),
    })); // 1.14 MB more
    const error = await outbox
      .write({ writes, messages })
      .catch((caught: unknown) => caught)
      .finally(() => client.destroy());
    expect(error).toBeInstanceOf(OutboxWriteTooLargeError);
    expect((error as Error).message).toMatch(/4,194,304 bytes \(4 MB\)/);
    expect(requests.total()).toBe(0);
    expect(await exists('big#t0', 'big')).toBe(false);
  });

  it('takes the largest message whose item fits with room for the relay, which can still claim it, note an error and mark it SENT', async () => {
    const outbox = new Outbox({ client: dynamodb, ...layout, maxMessageBytes: ONE_MIB });
    const message = (key: string, length: number) => ({
      type: 'T',
      groupId: 'edge',
      key,
      payload: 'x'.repeat(length),
    });
    // The item grows byte for byte with an ASCII payload: measure a small one as stored, then fill it up.
    await outbox.write({ messages: [message('edge-0', 1_000)] });
    const stored = await itemAt('oncely-outbox#edge-0', 'oncely-outbox');
    if (!stored) throw new Error('the small message was not written');
    const largest = 1_000 + MAX_OUTBOX_ITEM_BYTES - itemBytes(stored);

    await expect(outbox.write({ messages: [message('edge-2', largest + 1)] })).rejects.toThrow(
      OutboxValidationError,
    );
    await outbox.write({ messages: [message('edge-1', largest)] });
    expect(itemBytes((await itemAt('oncely-outbox#edge-1', 'oncely-outbox')) ?? {})).toBe(
      MAX_OUTBOX_ITEM_BYTES,
    );

    // Everything the relay and the sweeper add, at its largest, still fits DynamoDB's 400 KB.
    const items = new OutboxItems({ client: dynamodb, layout });
    const owner = `sweeper:${crypto.randomUUID()}`;
    expect((await items.claim('edge-1', owner, 60_000)).claimed).toBe(true);
    await items.release('edge-1', owner, '€'.repeat(MAX_LAST_ERROR_LENGTH));
    const claim = await items.claim('edge-1', owner, 60_000);
    if (!claim.claimed) throw new Error('the second claim failed');
    expect(
      await items.markSent([{ item: claim.item, messageId: crypto.randomUUID() }], owner, 'sweeper'),
    ).toBe(1);
    expect(await itemAt('oncely-outbox#edge-1', 'oncely-outbox')).toMatchObject({ outboxStatus: 'SENT' });
  });
});

describe('itemBytes: an item as DynamoDB counts it', () => {
  it('counts names and values: UTF-8 strings, numbers by digits, maps and lists with their overhead', () => {
    expect(itemBytes({ a: 'xyz', e: '€' })).toBe(1 + 3 + 1 + 3);
    expect(itemBytes({ n: 12_345, z: 0, f: -1.5 })).toBe(1 + 4 + 1 + 2 + 1 + 2);
    expect(itemBytes({ m: { k: true }, l: [1, 'ab'], u: undefined, x: null })).toBe(
      1 + (3 + 1 + 1 + 1) + 1 + (3 + (1 + 2) + (1 + 2)) + 1 + 1,
    );
  });

  it('keeps for the relay the figures docs/outbox.md states', () => {
    expect(LATER_ATTRIBUTES_BYTES).toBe(1_819);
    expect(MAX_OUTBOX_ITEM_BYTES).toBe(407_781);
  });
});
