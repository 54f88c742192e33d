import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT_CODES } from '../../cli/exit-codes.js';
import { RedriveInProgressError } from '../../cli/operations-errors.js';
import { acquireRedriveLease, REDRIVE_LEASE_ID } from '../../cli/redrive-lease.js';
import { startFaultProxy } from '../../harness/fault-proxy.js';
import { localDynamoClient, readItem } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { type DlqWorld, deadLetter, drain, envelopeBody, startDlqWorld } from './dlq-fifo.js';

// Item 6a of issue 31: two `dlq redrive` runs at once. Without a lease each held messages the other
// then saw as hidden, and redrove the other's returned failures: now the second one refuses, saying
// who runs and until when, and a run that ends (or fails) gives the lease back.

/** The package's `oncely` command as `npm run build` leaves it. */
const ONCELY_COMMAND = fileURLToPath(new URL('../../dist/bin/oncely.js', import.meta.url));

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
    // Issue 42, item 11: and how to go on now when it is known to be dead.
    await expect(second).rejects.toThrow(
      `Sure that it no longer runs? Delete the item "${REDRIVE_LEASE_ID}" from the table ${pipeline.idempotencyTableName} to go on now.`,
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

  // Issue 42, item 11: Ctrl-C had no handler, so a redrive stopped so blocked the next for its
  // --timeout plus 2 minutes (7 minutes by default).
  it('gives its lease back on Ctrl-C and exits 130, so the next redrive need not wait', async () => {
    const pipeline = await world.pipeline();
    await deadLetter(world.sqs, pipeline.dlqUrl, envelopeBody('held', 'g-held'), 'g-held');
    // Another operator's listing holds the message: the redrive keeps receiving until its --timeout.
    const { Messages = [] } = await world.sqs.send(
      new ReceiveMessageCommand({ QueueUrl: pipeline.dlqUrl, VisibilityTimeout: 120 }),
    );
    expect(Messages).toHaveLength(1);
    const { ONCELY_READY_FILE: _file, ONCELY_STACK_NAME: _stack, ...env } = process.env;
    const child = spawn(
      process.execPath,
      [ONCELY_COMMAND, 'dlq', 'redrive', '--timeout', '120', '--ready-file', pipeline.readyFile],
      { env, stdio: 'ignore' },
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect
        .poll(() => readItem(pipeline.idempotencyTableName, REDRIVE_LEASE_ID), { timeout: 60_000 })
        .toBeDefined();
      child.kill('SIGINT');
      expect(await exited).toBe(EXIT_CODES.interrupted);
    } finally {
      child.kill('SIGKILL');
    }
    expect(await readItem(pipeline.idempotencyTableName, REDRIVE_LEASE_ID)).toBeUndefined();
  });

  // Found by CI under load: the handler was installed once the lease's PutItem had answered, so a
  // Ctrl-C while it was being written killed the run (no exit code) and left its lease behind.
  it('gives its lease back on a Ctrl-C that comes while the lease is being written', async () => {
    const pipeline = await world.pipeline();
    const proxy = await startFaultProxy({
      service: 'dynamodb',
      upstream: emulatorEndpoint('dynamodbEndpoint'),
      // The lease's write is held before DynamoDB, until the Ctrl-C has been sent.
      plan: (request) =>
        request.operation === 'PutItem' &&
        (request.body.Item as { id?: { S?: string } } | undefined)?.id?.S === REDRIVE_LEASE_ID
          ? { kind: 'hang' }
          : undefined,
    });
    const readyFile = `${pipeline.readyFile}.proxied.json`;
    const ready = JSON.parse(readFileSync(pipeline.readyFile, 'utf8')) as {
      endpoints: Record<string, string>;
    };
    writeFileSync(
      readyFile,
      JSON.stringify({ ...ready, endpoints: { ...ready.endpoints, dynamodb: proxy.endpoint } }),
    );
    const { ONCELY_READY_FILE: _file, ONCELY_STACK_NAME: _stack, ...env } = process.env;
    const child = spawn(process.execPath, [ONCELY_COMMAND, 'dlq', 'redrive', '--ready-file', readyFile], {
      env,
      stdio: 'ignore',
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await proxy.waitForHung(1, 60_000);
      child.kill('SIGINT');
      proxy.releaseHung();
      expect(await exited).toBe(EXIT_CODES.interrupted);
    } finally {
      child.kill('SIGKILL');
      await proxy.close();
    }
    expect(await readItem(pipeline.idempotencyTableName, REDRIVE_LEASE_ID)).toBeUndefined();
  });
});
