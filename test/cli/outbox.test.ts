import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CliUsageError, type OperationsCommand, parseCommandLine } from '../../cli/command-line.js';
import { runOperation } from '../../cli/operations-command.js';
import {
  NoOutboxError,
  PipelineUnreachableError,
  SeveralOutboxesError,
} from '../../cli/operations-errors.js';
import { describeOutbox, formatAge } from '../../cli/operations-report.js';
import { listPendingOutbox, type OutboxListing } from '../../cli/outbox-list.js';
import type { OutboxLayout } from '../../lambdas/outbox/layout.js';
import { Outbox, type OutboxMessage } from '../../lambdas/outbox/outbox.js';
import { OutboxItems } from '../../lambdas/outbox/outbox-items.js';
import { OUTBOX_OUTPUTS } from '../../lib/constructs/outbox-outputs.js';
import { MissingStackOutputsError } from '../../lib/constructs/pipeline-outputs.js';
import { freePort } from '../../sandbox/free-port.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { createOutboxTable } from '../support/outbox.js';

// `oncely outbox list` against DynamoDB Local, finding the outbox by the outputs in a ready file
// as it finds it in a running sandbox's.

const MINUTE = 60_000;

let client: DynamoDBClient;
let directory: string;
let layout: OutboxLayout;

beforeAll(async () => {
  client = localDynamoClient();
  directory = mkdtempSync(join(tmpdir(), 'oncely-outbox-cli-'));
  layout = await createOutboxTable(client, 'cli-outbox');
  const sent = Date.now();
  await write(layout, 10 * MINUTE, {
    type: 'OrderPlaced',
    groupId: 'order-1',
    key: 'order-1-placed',
    payload: {},
  });
  await write(layout, 8 * MINUTE, {
    type: 'OrderPlaced',
    groupId: 'order-3',
    key: 'order-3-placed',
    payload: {},
  });
  await write(layout, 6 * MINUTE, {
    type: 'OrderPaid',
    groupId: 'order-2',
    key: 'order-2-paid',
    payload: {},
  });
  await write(layout, 0, { type: 'OrderShipped', groupId: 'order-1', key: 'order-1-shipped', payload: {} });
  const items = new OutboxItems({ client, layout });
  // A send that failed: one attempt and its error, no claim left.
  await items.claim('order-1-placed', 'sweeper:a', 30_000);
  await items.release('order-1-placed', 'sweeper:a', 'failed: KMS.AccessDeniedException: not allowed');
  // Being sent right now.
  await items.claim('order-2-paid', 'relay:b', 60_000);
  // Sent: no longer pending.
  const claimed = await items.claim('order-3-placed', 'relay:c', 30_000);
  if (!claimed.claimed) throw new Error('order-3-placed could not be claimed');
  await items.markSent([{ item: claimed.item, messageId: 'm-3' }], 'relay:c', 'relay');
  expect(Date.now() - sent).toBeLessThan(MINUTE);
});

afterAll(() => {
  client?.destroy();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** Writes one message as if `agoMs` ago, through `oncely/outbox` as a producer does. */
async function write(table: OutboxLayout, agoMs: number, ...messages: OutboxMessage[]): Promise<void> {
  const outbox = new Outbox({ ...table, client, now: () => new Date(Date.now() - agoMs) });
  await outbox.write({ messages });
}

/** The outputs an OncelyOutbox adds, with `prefix`, for `table`. */
function outputsOf(table: OutboxLayout, prefix = '', stuckAfterSeconds = 300): Record<string, string> {
  return {
    [`${prefix}${OUTBOX_OUTPUTS.tableName}`]: table.tableName,
    [`${prefix}${OUTBOX_OUTPUTS.partitionKey}`]: table.partitionKey,
    [`${prefix}${OUTBOX_OUTPUTS.sortKey}`]: table.sortKey,
    [`${prefix}${OUTBOX_OUTPUTS.stuckAfterSeconds}`]: String(stuckAfterSeconds),
  };
}

/** A ready file of a sandbox with these stack outputs (and no pipeline: an outbox needs none). */
function readyFile(outputs: Record<string, string>): string {
  const path = join(directory, `ready-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(
    path,
    JSON.stringify({
      region: 'us-east-1',
      stackName: 'Orders',
      endpoints: { sqs: emulatorEndpoint('sqsEndpoint'), dynamodb: emulatorEndpoint('dynamodbEndpoint') },
      outputs: { Unrelated: 'x', ...outputs },
    }),
  );
  return path;
}

/** Runs `oncely ARGS` in-process, as the command does; returns what it printed. */
async function oncely(...args: string[]): Promise<string> {
  const printed: string[] = [];
  const code = await runOperation(parseCommandLine(args, {}) as OperationsCommand, {
    print: (text) => printed.push(text),
  });
  expect(code).toBe(0);
  return printed.join('\n');
}

const listing = async (file: string, ...args: string[]) =>
  JSON.parse(await oncely('outbox', 'list', '--ready-file', file, '--json', ...args)) as OutboxListing;

describe('oncely outbox list', () => {
  it('lists the pending messages oldest first, each with its attempts, last error and claim', async () => {
    const result = await listing(readyFile(outputsOf(layout)));
    expect(result).toMatchObject({ tableName: layout.tableName, truncated: false });
    expect(result).not.toHaveProperty('olderThanSeconds');
    expect(result.messages.map((message) => message.key)).toEqual([
      'order-1-placed',
      'order-2-paid',
      'order-1-shipped',
    ]);
    const [failed, held, fresh] = result.messages;
    expect(failed).toMatchObject({
      groupId: 'order-1',
      type: 'OrderPlaced',
      attempts: 1,
      lastError: 'failed: KMS.AccessDeniedException: not allowed',
    });
    expect(failed).not.toHaveProperty('claim');
    expect(failed?.ageSeconds).toBeGreaterThanOrEqual(600);
    expect(Date.parse(failed?.createdAt ?? '')).toBeLessThan(Date.now() - 10 * MINUTE + 5_000);
    expect(held).toMatchObject({
      groupId: 'order-2',
      type: 'OrderPaid',
      attempts: 0,
      claim: { owner: 'relay:b', expired: false },
    });
    expect(Date.parse(held?.claim?.expiresAt ?? '')).toBeGreaterThan(Date.now());
    expect(fresh).toMatchObject({ groupId: 'order-1', type: 'OrderShipped', attempts: 0 });
    expect(fresh?.ageSeconds).toBeLessThan(60);
  });

  it('--stuck lists those pending longer than the outbox’s stuck bound; --older-than, than its own', async () => {
    const file = readyFile(outputsOf(layout, '', 420));
    const stuck = await listing(file, '--stuck');
    expect(stuck.olderThanSeconds).toBe(420);
    expect(stuck.messages.map((message) => message.key)).toEqual(['order-1-placed']);
    const older = await listing(file, '--older-than', '300');
    expect(older.olderThanSeconds).toBe(300);
    expect(older.messages.map((message) => message.key)).toEqual(['order-1-placed', 'order-2-paid']);
  });

  it('prints a table for people, and says so when nothing is pending', async () => {
    const file = readyFile(outputsOf(layout));
    const text = await oncely('outbox', 'list', '--ready-file', file);
    const lines = text.split('\n');
    expect(lines[0]).toBe(`3 messages pending in the outbox, oldest first (${layout.tableName}):`);
    expect(lines[1]).toMatch(/^CREATED\s+AGE\s+GROUP\s+TYPE\s+KEY\s+ATTEMPTS\s+CLAIMED BY\s+LAST ERROR$/);
    expect(lines[2]).toMatch(
      /\s10m0\ds\s+order-1\s+OrderPlaced\s+order-1-placed\s+1\s+-\s+failed: KMS.AccessDeniedException: not allowed$/,
    );
    expect(lines[3]).toMatch(/\sorder-2-paid\s+0\s+relay:b until \d{4}-\d\d-\d\dT\S+Z\s+-$/);
    expect(text).toMatch(/waits behind an earlier message of its group\.$/);

    const empty = await createOutboxTable(client, 'cli-outbox-empty');
    expect(await oncely('outbox', 'list', '--ready-file', readyFile(outputsOf(empty)), '--stuck')).toBe(
      `No outbox message is pending longer than 5m00s (${empty.tableName}).`,
    );
  });

  it('lists the oldest up to its limit, and says there are more', async () => {
    const crowded = await createOutboxTable(client, 'cli-outbox-crowded');
    const messages = Array.from({ length: 12 }, (_, index) => ({
      type: 'Tick',
      groupId: `g-${index % 3}`,
      key: `tick-${String(index).padStart(2, '0')}`,
      payload: null,
    }));
    // Across writes and within one (where the position in the write orders them), oldest first.
    await write(crowded, 2 * MINUTE, ...messages.slice(0, 5));
    await write(crowded, MINUTE, ...messages.slice(5));
    const outbox = { ...crowded, stuckAfterSeconds: 300 };
    const limited = await listPendingOutbox(client, outbox, { limit: 10 });
    expect(limited.truncated).toBe(true);
    expect(limited.messages.map((message) => message.key)).toEqual(
      messages.slice(0, 10).map(({ key }) => key),
    );
    expect(describeOutbox(limited)).toContain('More are pending: these are the oldest 10.');
    const whole = await listPendingOutbox(client, outbox, { limit: 12 });
    expect(whole.truncated).toBe(false);
    expect(whole.messages).toHaveLength(12);
  });
});

describe('finding the outbox', () => {
  const run = (...args: string[]) =>
    runOperation(parseCommandLine(args, {}) as OperationsCommand, { print: () => {} });

  it('takes the only one by its outputs, or the one --output-prefix names', async () => {
    const two = readyFile({ ...outputsOf(layout, 'Orders'), ...outputsOf(layout, '') });
    await expect(run('outbox', 'list', '--ready-file', two)).rejects.toThrow(
      new SeveralOutboxesError(
        `The sandbox of ${two} has 2 outboxes, with the output prefixes Orders, '' (no prefix): say which with ` +
          '--output-prefix PREFIX.',
      ),
    );
    const prefixed = await listing(two, '--output-prefix', 'Orders');
    expect(prefixed.messages).toHaveLength(3);
    const unprefixed = await listing(two, '--output-prefix', '');
    expect(unprefixed.messages).toHaveLength(3);
  });

  it('names what is missing: an outbox, or one of its outputs', async () => {
    const none = readyFile({});
    await expect(run('outbox', 'list', '--ready-file', none)).rejects.toThrow(
      new NoOutboxError(
        `The sandbox of ${none} has no OncelyOutbox: none of its outputs is named OutboxTableName. Deploy the ` +
          'stack with its outbox, or give the target that has it.',
      ),
    );
    const { OutboxSortKey: _, ...partial } = outputsOf(layout);
    const incomplete = readyFile(partial);
    await expect(run('outbox', 'list', '--ready-file', incomplete)).rejects.toThrow(MissingStackOutputsError);
    await expect(run('outbox', 'list', '--ready-file', incomplete)).rejects.toThrow(
      `No output OutboxSortKey in the sandbox of ${incomplete}.`,
    );
  });

  it('names the endpoint of a stack it cannot reach', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    vi.stubEnv('AWS_ENDPOINT_URL', closed);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    try {
      await expect(run('outbox', 'list', '--stack', 'Orders-gone')).rejects.toThrow(PipelineUnreachableError);
      await expect(run('outbox', 'list', '--stack', 'Orders-gone')).rejects.toThrow(
        /^Cannot reach CloudFormation for stack Orders-gone \(ECONNREFUSED/,
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('the command line', () => {
  it('parses outbox list, its filters and its outbox', () => {
    expect(parseCommandLine(['outbox', 'list', '--stack', 'Orders'], {})).toEqual({
      name: 'outbox-list',
      target: { kind: 'stack', stackName: 'Orders' },
      json: false,
      stuck: false,
    });
    expect(
      parseCommandLine(['outbox', 'list', '--older-than', '90', '--output-prefix', 'Orders', '--json'], {
        ONCELY_READY_FILE: '/tmp/ready.json',
      }),
    ).toEqual({
      name: 'outbox-list',
      // The prefix picks the pipeline of any command's target too (test/cli/in-doubt-prefix.test.ts).
      target: { kind: 'sandbox', readyFile: '/tmp/ready.json', outputPrefix: 'Orders' },
      json: true,
      stuck: false,
      olderThanSeconds: 90,
    });
    expect(parseCommandLine(['outbox', 'list', '--stuck', '--stack', 's'], {})).toMatchObject({
      stuck: true,
    });
    expect(() =>
      parseCommandLine(['outbox', 'list', '--stuck', '--older-than', '60', '--stack', 's'], {}),
    ).toThrow(new CliUsageError('Give --stuck or --older-than, not both.'));
    expect(() => parseCommandLine(['outbox', 'list', '--older-than', 'soon', '--stack', 's'], {})).toThrow(
      new CliUsageError('--older-than takes a whole number of seconds above 0, got "soon".'),
    );
  });

  it('parses oncely local --schedule-interval', () => {
    expect(parseCommandLine(['local', '--schedule-interval', '5'], {})).toMatchObject({
      name: 'local',
      options: { scheduleIntervalSeconds: 5 },
    });
    expect(() => parseCommandLine(['local', '--schedule-interval', '0.5'], {})).toThrow(CliUsageError);
  });

  it('parses oncely local --async-retry-delay', () => {
    expect(parseCommandLine(['local', '--async-retry-delay', '2'], {})).toMatchObject({
      name: 'local',
      options: { asyncRetryDelaySeconds: 2 },
    });
    expect(() => parseCommandLine(['local', '--async-retry-delay', '0'], {})).toThrow(CliUsageError);
  });

  it('parses oncely local --install-node, off unless given', () => {
    expect(parseCommandLine(['local', '--install-node'], {})).toMatchObject({
      name: 'local',
      options: { installNode: true },
    });
    expect(parseCommandLine(['local'], {})).toMatchObject({ options: { installNode: false } });
  });

  it('parses oncely local --traces-file and --no-traces; traces in the default file unless told', () => {
    expect(parseCommandLine(['local', '--traces-file', 'spans.jsonl'], {})).toMatchObject({
      name: 'local',
      options: { tracesFile: 'spans.jsonl', noTraces: false },
    });
    expect(parseCommandLine(['local', '--no-traces'], {})).toMatchObject({ options: { noTraces: true } });
    expect(parseCommandLine(['local'], {})).toMatchObject({
      options: { tracesFile: undefined, noTraces: false },
    });
  });

  it('shows ages briefly', () => {
    expect([0, 42, 60, 312, 3_600, 3_840, 86_400, 183_600].map(formatAge)).toEqual([
      '0s',
      '42s',
      '1m00s',
      '5m12s',
      '1h00m',
      '1h04m',
      '1d00h',
      '2d03h',
    ]);
  });
});
