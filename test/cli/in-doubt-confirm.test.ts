import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OperationsCommand, parseCommandLine } from '../../cli/command-line.js';
import { EXIT_CODES } from '../../cli/exit-codes.js';
import { runOperation } from '../../cli/operations-command.js';
import { processTerminal } from '../../cli/terminal.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import { PIPELINE_OUTPUTS, type PipelineResources } from '../../lib/constructs/pipeline-outputs.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { envelope, inDoubtPipeline, park } from './in-doubt-support.js';

// Item 7 of issue 31 (in-doubt): `resolve` shows the record and asks before acting, unless --yes;
// without a terminal to ask on and without --yes it refuses, with its own exit code.

let target: Awaited<ReturnType<typeof inDoubtPipeline>>;
let directory: string;
let readyFile: string;

beforeAll(async () => {
  target = await inDoubtPipeline();
  directory = mkdtempSync(join(tmpdir(), 'oncely-confirm-'));
  readyFile = join(directory, 'ready.json');
  const resources = Object.fromEntries(Object.keys(PIPELINE_OUTPUTS).map((key) => [key, `unused-${key}`]));
  writeFileSync(
    readyFile,
    JSON.stringify({
      region: LOCAL_REGION,
      endpoints: { sqs: emulatorEndpoint('sqsEndpoint'), dynamodb: emulatorEndpoint('dynamodbEndpoint') },
      resources: { ...resources, ...target.resources } as PipelineResources,
      outputs: {},
    }),
  );
});
afterAll(() => {
  target?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

async function record(id: string): Promise<IdempotencyRecord | undefined> {
  const { Item } = await DynamoDBDocumentClient.from(target.dynamodb).send(
    new GetCommand({ TableName: target.resources.idempotencyTableName, Key: { id }, ConsistentRead: true }),
  );
  return Item as IdempotencyRecord | undefined;
}

/** Runs `oncely in-doubt resolve ID ARGS` in-process with a stand-in terminal answering `answer`. */
async function resolve(id: string, answer: boolean | undefined, ...args: string[]) {
  const command = parseCommandLine(['in-doubt', 'resolve', id, ...args, '--ready-file', readyFile], {});
  const printed: string[] = [];
  const shown: string[] = [];
  const asked: string[] = [];
  const code = await runOperation(command as OperationsCommand, {
    print: (text) => printed.push(text),
    terminal: {
      show: (text) => shown.push(text),
      ask: async (question) => {
        asked.push(question);
        return answer;
      },
    },
  });
  return { code, printed: printed.join('\n'), shown: shown.join('\n'), asked };
}

describe('oncely in-doubt resolve asks first', () => {
  it('shows the record, asks, and acts on yes', async () => {
    const id = await park(target, 'asked', {
      attempts: 2,
      message: { body: envelope('asked', 'group-asked', '2026-11-20T10:00:00.000Z'), groupId: 'group-asked' },
    });

    const { code, printed, shown, asked } = await resolve(id, true, '--as', 'completed');

    const body = envelope('asked', 'group-asked', '2026-11-20T10:00:00.000Z');
    expect(shown.split('\n')).toEqual([
      `Record ${id}:`,
      '  status     IN_DOUBT',
      '  attempts   2',
      '  error      OutcomeUnknownError: POST /send failed after the request was sent',
      expect.stringMatching(/^ {2}since {6}\S+Z$/),
      '  expires    never (unresolved records do not expire)',
      `  message    SendNotification asked, group group-asked, published 2026-11-20T10:00:00.000Z, ${body.length} bytes`,
    ]);
    expect(asked).toEqual([`Resolve ${id} --as completed (it happened: never run it)? [y/N] `]);
    expect(code).toBe(0);
    expect(printed).toBe(`${id} is now COMPLETED: it is never run again.`);
    expect(await record(id)).toMatchObject({ status: 'COMPLETED' });
  });

  it('changes nothing when the answer is no, or when there is no terminal to ask on', async () => {
    const id = await park(target, 'declined');
    const before = await record(id);

    const declined = await resolve(id, false, '--as', 'retry');
    expect(declined.code).toBe(EXIT_CODES.notConfirmed);
    expect(declined.shown).toContain('Not resolved: nothing changed.');
    const unasked = await resolve(id, undefined, '--as', 'retry');
    expect(unasked.code).toBe(EXIT_CODES.notConfirmed);
    expect(unasked.shown).toContain(
      'Not resolved: this command asks before it acts and there is no terminal to ask on. Check the record ' +
        'above, then run it again with --yes.',
    );
    expect(await record(id)).toEqual(before);
  });

  // Issue 42, item 11: a script reading --json got nothing on standard output, where `dlq redrive
  // --json` prints a refusal document.
  it('prints a refusal document with --json when it is not confirmed, as dlq redrive does', async () => {
    const id = await park(target, 'refused-json');
    const before = await record(id);
    const unasked = await resolve(id, undefined, '--as', 'retry', '--json');
    expect(unasked.code).toBe(EXIT_CODES.notConfirmed);
    expect(JSON.parse(unasked.printed)).toEqual({
      refused:
        'Not resolved: this command asks before it acts and there is no terminal to ask on. Check the record ' +
        'above, then run it again with --yes.',
    });
    const declined = await resolve(id, false, '--as', 'retry', '--json');
    expect(declined.code).toBe(EXIT_CODES.notConfirmed);
    expect(JSON.parse(declined.printed)).toEqual({ refused: 'Not resolved: nothing changed.' });
    expect(await record(id)).toEqual(before);
  });

  it('acts without asking with --yes, and prints only the result as JSON with --json', async () => {
    const id = await park(target, 'scripted');
    const { code, printed, shown, asked } = await resolve(id, undefined, '--as', 'retry', '--yes', '--json');
    expect(asked).toEqual([]);
    expect(shown).toBe('');
    expect(code).toBe(0);
    expect(JSON.parse(printed)).toMatchObject({
      id,
      as: 'retry',
      status: 'FAILED',
      groupId: 'group-scripted',
    });
  });

  it('the process terminal asks only on a TTY: without one, there is no one to ask', async () => {
    const isTTY = process.stdin.isTTY;
    Object.defineProperty(process.stdin, 'isTTY', { value: false, configurable: true });
    try {
      expect(await processTerminal.ask('Resolve? [y/N] ')).toBeUndefined();
    } finally {
      Object.defineProperty(process.stdin, 'isTTY', { value: isTTY, configurable: true });
    }
  });

  it('refuses to ask about a record there is nothing to resolve on (an unknown id fails as before)', async () => {
    await expect(resolve('notifications#nobody', true, '--as', 'completed')).rejects.toThrow(
      /No idempotency record/,
    );
  });
});
