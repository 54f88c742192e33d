import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedriveInProgressError } from '../../cli/operations-errors.js';
import { acquireRedriveLease, REDRIVE_LEASE_ID } from '../../cli/redrive-lease.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { type DlqWorld, deadLetter, drain, envelopeBody, startDlqWorld } from './dlq-fifo.js';

// Item 6a of issue 31: two `dlq redrive` runs at once. Without a lease each held messages the other
// then saw as hidden, and redrove the other's returned failures: now the second one refuses, saying
// who runs and until when, and a run that ends (or fails) gives the lease back.

let world: DlqWorld;
beforeAll(async () => {
  world = await startDlqWorld();
});
afterAll(() => world?.stop());

describe('two dlq redrives at once', () => {
  it('refuses the second while the first runs, moving nothing; runs once the first gave its lease back', async () => {
    const pipeline = await world.pipeline();
    await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('k1', 'g1'), 'g1');
    const dynamodb = localDynamoClient();
    // Another operator's redrive, mid-run.
    const first = await acquireRedriveLease(dynamodb, pipeline.idempotencyTableName, 60_000);
    const second = world.oncely(pipeline, ['dlq', 'redrive']);
    await expect(second).rejects.toThrow(RedriveInProgressError);
    await expect(second).rejects.toThrow(
      /^Another `oncely dlq redrive` is running \(\S+, since \d{4}-\S+\): two at once would hide messages from each other\. Wait for it to end; if it was killed, its lease runs out at \d{4}-/,
    );
    expect(await drain(world.sqs, pipeline.queueUrl)).toEqual([]);

    await first.release();
    expect((await world.oncely(pipeline, ['dlq', 'redrive'])).code).toBe(0);
    expect((await drain(world.sqs, pipeline.queueUrl)).map((message) => message.key)).toEqual(['k1']);
    // Given back at the end, so the next one runs.
    expect(await readItem(pipeline.idempotencyTableName, REDRIVE_LEASE_ID)).toBeUndefined();
    dynamodb.destroy();
  });

  it('a lease write applied but whose answer was lost is taken again by its owner; a lease run out is taken over', async () => {
    const pipeline = await world.pipeline();
    const dynamodb = localDynamoClient();
    let lost = false;
    dynamodb.middlewareStack.add(
      (next) => async (args) => {
        const output = await next(args);
        if (lost) return output;
        lost = true;
        throw new Error('injected: the answer was lost');
      },
      { step: 'initialize', name: 'loseFirstAnswer' },
    );
    const lease = await acquireRedriveLease(dynamodb, pipeline.idempotencyTableName, 60_000);
    expect(lost).toBe(true);
    expect(await readItem(pipeline.idempotencyTableName, REDRIVE_LEASE_ID)).toMatchObject({
      owner: lease.owner,
    });
    await lease.release();

    // A killed run's lease: past its end, the next run takes it over.
    const killed = await acquireRedriveLease(dynamodb, pipeline.idempotencyTableName, -10 * 60_000);
    const next = await acquireRedriveLease(dynamodb, pipeline.idempotencyTableName, 60_000);
    expect(next.owner).not.toBe(killed.owner);
    await next.release();
    dynamodb.destroy();
  });
});
