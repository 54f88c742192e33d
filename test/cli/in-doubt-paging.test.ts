import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../cli/command-line.js';
import { DEFAULT_UNRESOLVED_LIMIT, listUnresolved } from '../../cli/in-doubt-records.js';
import { InvalidPageTokenError } from '../../cli/operations-errors.js';
import { uniqueName } from '../support/dynamodb.js';
import { envelope, inDoubtPipeline, park } from './in-doubt-support.js';

// Issue 40, item 17: `in-doubt list` read every parked record's whole item, kept message and all
// (≈125,000 read units for 10,000 records of 100 KB). It shows --limit records at a time, reads the
// table for those only, and hands back a token for the next page.

const MESSAGE_BYTES = 100 * 1024;
const IN_DOUBT = 9;
const RETRY_PENDING = 4;

let target: Awaited<ReturnType<typeof inDoubtPipeline>>;
/** The records parked, oldest first. */
const parked: string[] = [];

beforeAll(async () => {
  target = await inDoubtPipeline();
  const start = Date.now() - 60_000;
  // The two statuses interleaved in time, so a page holds some of each.
  for (let i = 0; i < IN_DOUBT + RETRY_PENDING; i++) {
    const retrying = i % 3 === 1 && i / 3 < RETRY_PENDING;
    const key = `paging-${i}`;
    parked.push(
      await park(target, key, {
        updatedAt: start + i * 1000,
        message: { body: envelope(key, `group-${i}`).padEnd(MESSAGE_BYTES, ' '), groupId: `group-${i}` },
        ...(retrying ? { status: 'FAILED', unresolved: 'RETRY_PENDING' } : {}),
      }),
    );
  }
});
afterAll(() => target.close());

/** What `run` read: the ids of the items BatchGetItem asked for, and DynamoDB's read units. */
async function reads(client: DynamoDBClient, run: () => Promise<unknown>) {
  const itemsRead: string[] = [];
  let units = 0;
  const name = uniqueName('reads');
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      if (context.commandName === 'BatchGetItemCommand') {
        // The document client's keys, not yet marshalled at this step.
        const requests = input.RequestItems as Record<string, { Keys: { id: string }[] }>;
        for (const { Keys } of Object.values(requests)) itemsRead.push(...Keys.map((key) => key.id));
      }
      const output = await next(args);
      const consumed = (output.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      for (const entry of [consumed ?? []].flat() as { CapacityUnits?: number }[]) {
        units += entry.CapacityUnits ?? 0;
      }
      return output;
    },
    { step: 'initialize', name },
  );
  try {
    await run();
    return { itemsRead, units };
  } finally {
    client.middlewareStack.remove(name);
  }
}

describe('oncely in-doubt list: a page at a time', () => {
  it('shows at most --limit records, oldest first, and its token pages through the rest once each', async () => {
    const pages: string[][] = [];
    let after: string | undefined;
    do {
      const page = await listUnresolved(target, { limit: 5, after });
      pages.push(page.records.map((record) => record.id));
      after = page.next;
    } while (after !== undefined && pages.length < 10);

    expect(pages.map((page) => page.length)).toEqual([5, 5, 3]);
    expect(pages.flat()).toEqual(parked);
  });

  it('reads the table only for the records it shows', async () => {
    let shown: string[] = [];
    const { itemsRead, units } = await reads(target.dynamodb, async () => {
      shown = (await listUnresolved(target, { limit: 3 })).records.map((record) => record.id);
    });
    expect(shown).toEqual(parked.slice(0, 3));
    expect(itemsRead.sort()).toEqual([...shown].sort());
    const all = await reads(target.dynamodb, () => listUnresolved(target, { limit: parked.length }));
    console.log(
      `in-doubt list, records of ${MESSAGE_BYTES / 1024} KB: a page of 3 read ${units} read units, ` +
        `all ${parked.length} ${all.units}`,
    );
    // Each shown record's whole item: 100 KB is 25 eventually consistent units of 4 KB, half a unit each.
    const perRecord = Math.ceil(MESSAGE_BYTES / 4096) / 2;
    expect(units).toBeLessThan((shown.length + 1) * perRecord);
    expect(all.units).toBeGreaterThanOrEqual(parked.length * perRecord);
  });

  it('shows DEFAULT_UNRESOLVED_LIMIT records unless given --limit, and no token on the last page', async () => {
    expect(DEFAULT_UNRESOLVED_LIMIT).toBe(100);
    const page = await listUnresolved(target);
    expect(page).toEqual({ records: expect.any(Array) });
    expect(page.records.map((record) => record.id)).toEqual(parked);
  });

  it('skips records resolved between two pages, and shows no record twice', async () => {
    const own = await inDoubtPipeline();
    try {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++)
        ids.push(await park(own, `moving-${i}`, { updatedAt: Date.now() - 10_000 + i }));
      const first = await listUnresolved(own, { limit: 2 });
      // The last record shown leaves the index (resolved), and a new one arrives.
      await park(own, 'moving-0', { id: ids[1], status: 'COMPLETED', unresolved: undefined });
      const late = await park(own, 'late');
      const second = await listUnresolved(own, { limit: 2, after: first.next });
      const third = await listUnresolved(own, { limit: 2, after: second.next });
      expect(first.records.map((record) => record.id)).toEqual(ids.slice(0, 2));
      expect(second.records.map((record) => record.id)).toEqual(ids.slice(2, 4));
      expect(third).toEqual({ records: [expect.objectContaining({ id: late })] });
    } finally {
      own.close();
    }
  });

  it('refuses a token it did not print, and takes --limit and --after on the command line', async () => {
    await expect(listUnresolved(target, { after: 'not-a-token' })).rejects.toThrow(InvalidPageTokenError);
    const forged = Buffer.from(JSON.stringify({ COMPLETED: { id: 'x', updatedAt: 1 } })).toString(
      'base64url',
    );
    await expect(listUnresolved(target, { after: forged })).rejects.toThrow(InvalidPageTokenError);
    expect(
      parseCommandLine(['in-doubt', 'list', '--limit', '20', '--after', 'abc', '--stack', 'S'], {}),
    ).toMatchObject({ name: 'in-doubt-list', limit: 20, after: 'abc' });
  });
});
