import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listUnresolved, resolveAsCompleted } from '../../cli/in-doubt-records.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { describeUnresolved } from '../../cli/operations-report.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/store.js';
import { createMonitorHandler } from '../../lambdas/monitor/monitor.js';
import { envelope, inDoubtPipeline, park, TTL_SECONDS } from './in-doubt-support.js';

// Item 1 of issue 31: a record an operator must resolve keeps its message, which was acknowledged
// long ago; if the record expired, the message would be gone. So it must not expire while unresolved.

let target: Awaited<ReturnType<typeof inDoubtPipeline>>;
let documents: DynamoDBDocumentClient;
let store: DynamoDBIdempotencyStore;
let clockMs = Date.now();

beforeAll(async () => {
  target = await inDoubtPipeline();
  documents = DynamoDBDocumentClient.from(target.dynamodb);
  store = new DynamoDBIdempotencyStore({
    client: target.dynamodb,
    tableName: target.resources.idempotencyTableName,
    ttlSeconds: TTL_SECONDS,
    now: () => clockMs,
  });
});
afterAll(() => target?.close());

async function record(id: string): Promise<IdempotencyRecord | undefined> {
  const { Item } = await documents.send(
    new GetCommand({ TableName: target.resources.idempotencyTableName, Key: { id }, ConsistentRead: true }),
  );
  return Item as IdempotencyRecord | undefined;
}

const nowSec = () => Math.floor(Date.now() / 1000);
const error = { name: 'OutcomeUnknownError', message: 'the request was sent' };
const kept = (key: string) => ({ body: envelope(key, `group-${key}`), groupId: `group-${key}` });

async function lease(id: string, leaseMs = 60_000) {
  const taken = await store.acquire({ id, payloadHash: 'hash', leaseMs, takeOverExpiredLease: false });
  if (!taken.acquired) throw new Error(`${id} was not acquired`);
  return taken.lease;
}

describe('a record left IN_DOUBT does not expire while unresolved', () => {
  it('parking (markInDoubt, parkExpiredLease) removes expiresAt: DynamoDB TTL ignores an item without it', async () => {
    clockMs = Date.now();
    const marked = await lease('notifications#marked');
    expect(await store.markInDoubt(marked, error, kept('marked'))).toBe(true);
    const expired = await lease('notifications#expired', 1_000);
    const held = await record(expired.id);
    clockMs += 2_000;
    expect(await store.parkExpiredLease(held as IdempotencyRecord, error, { message: kept('expired') })).toBe(
      true,
    );

    for (const id of [marked.id, expired.id]) {
      const parked = await record(id);
      expect(parked).toMatchObject({
        status: 'IN_DOUBT',
        unresolved: 'IN_DOUBT',
        message: expect.any(Object),
      });
      expect(parked).not.toHaveProperty('expiresAt');
    }
    // Listed and counted, with no expiry to show.
    const listed = (await listUnresolved(target)).records;
    expect(listed.filter((each) => [marked.id, expired.id].includes(each.id))).toEqual([
      expect.not.objectContaining({ expiresAt: expect.anything() }),
      expect.not.objectContaining({ expiresAt: expect.anything() }),
    ]);
    expect(listed.map((each) => each.id)).toEqual(expect.arrayContaining([marked.id, expired.id]));
    // The record is not absent for the consumer either: a redelivery finds it IN_DOUBT, not acquirable.
    const again = await store.acquire({
      id: marked.id,
      payloadHash: 'hash',
      leaseMs: 1000,
      takeOverExpiredLease: true,
    });
    expect(again).toMatchObject({ acquired: false, existing: { status: 'IN_DOUBT' } });
  });

  it('resolving restores a full TTL from now: --as completed, and --as retry once the message is sent', async () => {
    const done = await park(target, 'done');
    const retried = await park(target, 'retried');
    const before = nowSec();

    await resolveAsCompleted(target, done);
    await resolveAsRetry(target, retried);

    for (const id of [done, retried]) {
      const expiresAt = (await record(id))?.expiresAt ?? 0;
      expect(expiresAt).toBeGreaterThanOrEqual(before + TTL_SECONDS);
      expect(expiresAt).toBeLessThanOrEqual(nowSec() + TTL_SECONDS);
    }
    expect(await record(done)).toMatchObject({ status: 'COMPLETED' });
    expect(await record(retried)).toMatchObject({ status: 'FAILED' });
  });

  it('a record parked by an older version (with an expiry): the list shows it, the monitor removes it', async () => {
    const soon = nowSec() + 3600;
    const old = await park(target, 'old', { expiresAt: soon });
    const oldPending = await park(target, 'old-pending', {
      status: 'FAILED',
      unresolved: 'RETRY_PENDING',
      expiresAt: soon,
    });
    // Already past its expiry: gone for everyone, so the monitor must not bring it back.
    const dead = await park(target, 'dead', { expiresAt: nowSec() - 1 });

    const listed = (await listUnresolved(target)).records;
    expect(listed.find((each) => each.id === old)?.expiresAt).toBe(new Date(soon * 1000).toISOString());
    expect(listed.find((each) => each.id === dead)).toBeUndefined();
    const shown = describeUnresolved({ records: listed }, 'table');
    expect(shown).toMatch(new RegExp(`${old} +IN_DOUBT .* ${new Date(soon * 1000).toISOString()}\\n`));
    expect(shown).toContain(
      "2 records parked by an older version still expire, with the message they keep, at EXPIRES: the monitor's next run removes that expiry.",
    );

    const counts = await createMonitorHandler({
      dynamodb: target.dynamodb,
      idempotencyTableName: target.resources.idempotencyTableName,
    })();

    expect(await record(old)).not.toHaveProperty('expiresAt');
    expect(await record(oldPending)).not.toHaveProperty('expiresAt');
    expect((await record(dead))?.expiresAt).toBeLessThan(nowSec());
    expect(counts.inDoubt).toBeGreaterThanOrEqual(1);
    const after = (await listUnresolved(target)).records;
    expect(after.find((each) => each.id === old)).not.toHaveProperty('expiresAt');
    expect(describeUnresolved({ records: after }, 'table')).toMatch(new RegExp(`${old} +IN_DOUBT .* never`));
    expect(describeUnresolved({ records: after }, 'table')).not.toContain('older version');
  });
});
