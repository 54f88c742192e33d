import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  GetQueueAttributesCommand,
  SendMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { CliUsageError, type OperationsCommand, parseCommandLine } from '../../cli/command-line';
import type { DeadLetterListing } from '../../cli/dead-letter-list';
import type { InDoubtRecord } from '../../cli/in-doubt-records';
import { runOperation } from '../../cli/operations-command';
import {
  PipelineUnreachableError,
  ReadyFileError,
  RecordNotInDoubtError,
  UnknownRecordError,
} from '../../cli/operations-errors';
import { ledgerItemId } from '../../lambdas/consumer/ledger';
import { NOTIFICATIONS_NAMESPACE } from '../../lambdas/consumer/notifications';
import type { PublishMessage, PublishResponse } from '../../lambdas/publisher/contract';
import type { IdempotencyRecord } from '../../lambdas/runtime/idempotency';
import { freePort } from '../../sandbox/free-port';
import { localAwsConfig } from '../../sandbox/local-aws-config';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox';
import { type GatewayBehaviour, startGateway } from '../support/http-gateway';

// The operations commands against one real sandbox (DynamoDB Local, the SQS emulator, the functions
// and their pollers), found through its ready file as `oncely … --ready-file` finds it.

let sandbox: Sandbox;
let gateway: Awaited<ReturnType<typeof startGateway>>;
let gatewayAnswer: GatewayBehaviour = 'hang';
let directory: string;
let readyFile: string;
let sqs: SQSClient;
let documents: DynamoDBDocumentClient;

beforeAll(async () => {
  gateway = await startGateway(() => gatewayAnswer);
  sandbox = await startSandbox({
    // The consumer's notifications go to the stand-in gateway; a short timeout makes a hang IN_DOUBT fast.
    environment: {
      NOTIFICATION_URL: gateway.url,
      NOTIFICATION_TIMEOUT_MS: '300',
      POWERTOOLS_LOG_LEVEL: 'ERROR',
    },
  });
  directory = mkdtempSync(join(tmpdir(), 'oncely-ops-'));
  readyFile = join(directory, 'ready.json');
  writeFileSync(readyFile, JSON.stringify(sandbox.description));
  sqs = new SQSClient(localAwsConfig(sandbox.description.endpoints.sqs));
  documents = DynamoDBDocumentClient.from(
    new DynamoDBClient(localAwsConfig(sandbox.description.endpoints.dynamodb)),
  );
});

afterAll(async () => {
  sqs?.destroy();
  documents?.destroy();
  await sandbox?.stop();
  await gateway?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** Runs `oncely ARGS --ready-file …` in-process, as bin/oncely.ts does; returns what it printed. */
async function oncely(...args: string[]): Promise<string> {
  const command = parseCommandLine([...args, '--ready-file', readyFile], {}) as OperationsCommand;
  const printed: string[] = [];
  const code = await runOperation(command, {
    print: (text) => printed.push(text),
    redrive: { pollIntervalMs: 100, timeoutMs: 20_000 },
  });
  expect(code).toBe(0);
  return printed.join('\n');
}

const json = async <T>(...args: string[]): Promise<T> => JSON.parse(await oncely(...args, '--json')) as T;

async function publish(...messages: PublishMessage[]): Promise<PublishResponse> {
  const outcome = await sandbox.invoke(sandbox.description.resources.publisherFunctionName, { messages });
  if (!outcome.ok) throw new Error(`the publisher failed: ${JSON.stringify(outcome.error)}`);
  const response = outcome.result as PublishResponse;
  expect(response.results.map((result) => result.status)).toEqual(messages.map(() => 'sent'));
  return response;
}

const sentId = (response: PublishResponse, index = 0) => {
  const result = response.results[index];
  return result?.status === 'sent' ? result.messageId : undefined;
};

async function readItem<T = IdempotencyRecord>(tableName: string, id: string): Promise<T | undefined> {
  const { Item } = await documents.send(
    new GetCommand({ TableName: tableName, Key: { id }, ConsistentRead: true }),
  );
  return Item as T | undefined;
}

/** Messages in a queue, in flight included (the emulator counts those in ApproximateNumberOfMessages). */
async function queued(queueUrl: string): Promise<number> {
  const { Attributes } = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages'] }),
  );
  return Number(Attributes?.ApproximateNumberOfMessages);
}

const WAIT = { timeout: 15_000, interval: 100 };

describe('oncely dlq', () => {
  it('lists a poison message without consuming it, and redrives it; a completed one is recognised', async () => {
    const { resources } = sandbox.description;
    const poison = { type: 'NoSuchType', groupId: 'ops-poison', key: 'poison-1', payload: { n: 1 } };
    const stock = {
      type: 'StockReceived',
      groupId: 'ops-stock',
      key: 'stock-1',
      payload: { sku: 'ops', quantity: 5 },
    };
    const published = await publish(poison, stock);
    const stockItem = () =>
      readItem<{ available: number }>(resources.ledgerTableName, ledgerItemId.stock('ops'));
    await expect.poll(stockItem, WAIT).toMatchObject({ available: 5 });
    // The effect happened, yet SQS dead-lettered the message anyway (say its deletes kept failing):
    // the same body lands in the DLQ, as SQS would move it there.
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: resources.dlqUrl,
        MessageBody: JSON.stringify({ ...stock, publishedAt: new Date().toISOString() }),
        MessageGroupId: stock.groupId,
        MessageDeduplicationId: 'moved-by-sqs',
      }),
    );
    await expect.poll(() => queued(resources.dlqUrl), WAIT).toBe(2);

    const listing = await json<DeadLetterListing>('dlq', 'list');
    expect(listing.messages).toEqual([
      expect.objectContaining({
        groupId: 'ops-poison',
        type: 'NoSuchType',
        key: 'poison-1',
        error: { name: 'UnknownMessageTypeError', message: expect.stringContaining('NoSuchType') },
        originalMessageId: sentId(published),
        receiveCount: 1,
        sentAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      }),
      expect.objectContaining({
        groupId: 'ops-stock',
        type: 'StockReceived',
        key: 'stock-1',
      }),
    ]);
    expect(listing.messages[1]?.error).toBeUndefined(); // moved by SQS, not by the consumer
    const table = await oncely('dlq', 'list');
    expect(table).toContain('2 messages in the DLQ');
    expect(table).toMatch(/ops-poison +NoSuchType +poison-1 +1 .*UnknownMessageTypeError: /);
    expect(table).toMatch(/ops-stock +StockReceived +stock-1 .*moved by SQS after maxReceiveCount/);
    expect(await queued(resources.dlqUrl)).toBe(2); // listed, not consumed

    expect(await oncely('dlq', 'redrive')).toMatch(/^Moved 2 messages from the DLQ back to /);
    // The poison is rejected again and comes back as a new copy; the stock message is a duplicate.
    await expect
      .poll(async () => (await json<DeadLetterListing>('dlq', 'list')).messages, WAIT)
      .toEqual([expect.objectContaining({ key: 'poison-1', originalMessageId: expect.any(String) })]);
    const [again] = (await json<DeadLetterListing>('dlq', 'list')).messages;
    expect(again?.originalMessageId).not.toBe(sentId(published));
    await expect.poll(() => queued(resources.queueUrl), WAIT).toBe(0);
    expect(await stockItem()).toMatchObject({ available: 5 });

    // SQS runs one move task per queue at a time.
    await sqs.send(
      new StartMessageMoveTaskCommand({ SourceArn: resources.dlqArn, DestinationArn: resources.queueArn }),
    );
    await expect(oncely('dlq', 'redrive')).rejects.toThrow(
      /^A message move task is already running on \S+ \(started .*, 0 of 1 moved\); SQS runs one at a time\./,
    );
  });
});

describe('oncely in-doubt', () => {
  it('lists IN_DOUBT notifications and resolves them: retry sends once more, completed sends nothing', async () => {
    const { resources } = sandbox.description;
    const notification = (key: string, groupId: string) => ({
      type: 'SendNotification',
      groupId,
      key,
      payload: { to: `${key}@example.com`, subject: 'Hello', body: `This is ${key}` },
    });
    const sendsOf = (key: string) => gateway.requests.filter((request) => request.idempotencyKey === key);
    const retried = `${NOTIFICATIONS_NAMESPACE}#mail-retry`;
    const completed = `${NOTIFICATIONS_NAMESPACE}#mail-completed`;

    gatewayAnswer = 'hang'; // the requests go out, the answers never come: outcome unknown
    await publish(notification('mail-retry', 'ops-mail-a'), notification('mail-completed', 'ops-mail-b'));
    await expect
      .poll(
        async () => (await json<InDoubtRecord[]>('in-doubt', 'list')).map((record) => record.id).sort(),
        WAIT,
      )
      .toEqual([completed, retried]);
    const table = await oncely('in-doubt', 'list');
    expect(table).toContain('2 records IN_DOUBT');
    expect(table).toMatch(
      new RegExp(
        `${retried} +\\S+Z +1 +ops-mail-a +OutcomeUnknownError: POST .* failed after the request was sent`,
      ),
    );

    gatewayAnswer = 200;
    expect(await oncely('in-doubt', 'resolve', retried, '--as', 'retry')).toMatch(
      new RegExp(
        `^${retried}: the record is deleted and its message sent again to .* \\(group ops-mail-a, message id `,
      ),
    );
    await expect
      .poll(() => readItem(resources.idempotencyTableName, retried), WAIT)
      .toMatchObject({
        status: 'COMPLETED',
      });
    expect(sendsOf(retried)).toHaveLength(2); // the one in doubt, and the retry

    expect(await oncely('in-doubt', 'resolve', completed, '--as', 'completed')).toBe(
      `${completed} is now COMPLETED: it is never run again.`,
    );
    const record = await readItem(resources.idempotencyTableName, completed);
    expect(record).toMatchObject({ status: 'COMPLETED' });
    expect(record?.message).toBeUndefined();
    expect(sendsOf(completed)).toHaveLength(1);
    expect(await oncely('in-doubt', 'list')).toMatch(/^No records are IN_DOUBT/);

    await expect(oncely('in-doubt', 'resolve', retried, '--as', 'retry')).rejects.toThrow(
      new RecordNotInDoubtError(`${retried} is COMPLETED, not IN_DOUBT: there is nothing to resolve.`),
    );
    await expect(oncely('in-doubt', 'resolve', 'mail-retry', '--as', 'completed')).rejects.toThrow(
      UnknownRecordError,
    );
    await expect(oncely('in-doubt', 'resolve', 'notifications#nope', '--as', 'completed')).rejects.toThrow(
      /^No idempotency record notifications#nope\. `oncely in-doubt list` shows the records in doubt\.$/,
    );
    expect(sendsOf(retried)).toHaveLength(2);
  });
});

describe('bin/oncely.ts', () => {
  /** Runs the real entry point in a child process, without the ONCELY_* variables of this one. */
  function runBin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const { ONCELY_READY_FILE: _file, ONCELY_STACK_NAME: _stack, ...env } = process.env;
    const child = spawn(process.execPath, ['--import', 'tsx', 'bin/oncely.ts', ...args], { env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    return new Promise((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('exits 0 with the result, 2 on a usage error, 1 when the sandbox is not running', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const stopped = join(directory, 'stopped.json');
    const { endpoints } = sandbox.description;
    writeFileSync(
      stopped,
      JSON.stringify({ ...sandbox.description, endpoints: { ...endpoints, sqs: closed } }),
    );

    const [listed, usage, notRunning] = await Promise.all([
      runBin('in-doubt', 'list', '--ready-file', readyFile),
      runBin('in-doubt', 'resolve', '--ready-file', readyFile),
      runBin('dlq', 'list', '--ready-file', stopped),
    ]);
    expect(listed).toMatchObject({ code: 0, stdout: expect.stringMatching(/IN_DOUBT/), stderr: '' });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^in-doubt resolve needs the record id, .*\n\nUsage:\n/);
    expect(notRunning).toMatchObject({ code: 1, stdout: '' });
    expect(notRunning.stderr).toBe(
      `PipelineUnreachableError: The sandbox of ${stopped} is not running: nothing answers at ${closed} ` +
        `(SQS, ECONNREFUSED). Start it with \`oncely local --ready-file ${stopped}\`, or give the ready file ` +
        'of the sandbox that runs.\n',
    );
  });
});

describe('targets that are not there', () => {
  const run = (...args: string[]) => runOperation(parseCommandLine(args, {}) as OperationsCommand);

  it('names a missing or foreign ready file', async () => {
    const missing = join(directory, 'missing.json');
    await expect(run('dlq', 'redrive', '--ready-file', missing)).rejects.toThrow(
      new ReadyFileError(
        `Cannot read the ready file ${missing} (ENOENT): is \`oncely local --ready-file ${missing}\` running?`,
      ),
    );
    const foreign = join(directory, 'foreign.json');
    writeFileSync(foreign, JSON.stringify({ region: 'us-east-1', endpoints: {} }));
    await expect(run('dlq', 'list', '--ready-file', foreign)).rejects.toThrow(
      /^\S+foreign\.json is not a ready file of `oncely local` from this version \(endpoints\.sqs: .*resources: /,
    );
  });

  it('names the endpoint of a stack it cannot reach', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    vi.stubEnv('AWS_ENDPOINT_URL', closed);
    vi.stubEnv('AWS_REGION', 'us-east-1');
    vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
    try {
      await expect(run('in-doubt', 'list', '--stack', 'Oncely-gone')).rejects.toThrow(
        new PipelineUnreachableError(
          `Cannot reach CloudFormation for stack Oncely-gone (ECONNREFUSED: connect ECONNREFUSED ${closed.slice(7)}). ` +
            'Check your network and AWS_REGION, and AWS_ENDPOINT_URL when the stack is on LocalStack (is LocalStack running?).',
        ),
      );
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe('the operations command line', () => {
  it('parses the commands, their target and --json', () => {
    expect(parseCommandLine(['dlq', 'list', '--stack', 'Oncely-dev'], {})).toEqual({
      name: 'dlq-list',
      target: { kind: 'stack', stackName: 'Oncely-dev' },
      json: false,
    });
    expect(
      parseCommandLine(['in-doubt', 'resolve', 'notifications#k', '--as', 'retry', '--json'], {
        ONCELY_READY_FILE: '/tmp/ready.json',
      }),
    ).toEqual({
      name: 'in-doubt-resolve',
      target: { kind: 'sandbox', readyFile: '/tmp/ready.json' },
      json: true,
      id: 'notifications#k',
      as: 'retry',
    });
    expect(() => parseCommandLine(['in-doubt', 'resolve', 'k', '--as', 'maybe', '--stack', 's'], {})).toThrow(
      CliUsageError,
    );
  });
});
