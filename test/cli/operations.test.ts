import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DeleteMessageCommand,
  type MessageAttributeValue,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { CliUsageError, type OperationsCommand, parseCommandLine } from '../../cli/command-line.js';
import type { DeadLetterListing } from '../../cli/dead-letter-list.js';
import { type RedriveResult, redriveDeadLetters } from '../../cli/dead-letter-redrive.js';
import type { MessageHistory } from '../../cli/history-story.js';
import { type InDoubtTarget, resolveAsCompleted, type UnresolvedPage } from '../../cli/in-doubt-records.js';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { runOperation } from '../../cli/operations-command.js';
import {
  DedupHorizonUnknownError,
  MessageNotKeptError,
  PipelineUnreachableError,
  ReadyFileError,
  RecordNotInDoubtError,
  RedriveInterruptedError,
  ResendFailedError,
  ResolutionConflictError,
  UnknownRecordError,
} from '../../cli/operations-errors.js';
import { describeRedrive, describeResolution } from '../../cli/operations-report.js';
import { PAST_DEDUP_HORIZON } from '../../lambdas/common/dedup-horizon.js';
import { messagesInQueue } from '../../lambdas/common/queue-depth.js';
import { payloadHash } from '../../lambdas/idempotency/keys.js';
import type { IdempotencyRecord } from '../../lambdas/idempotency/record.js';
import type { PublishMessage, PublishResponse } from '../../lambdas/publisher/contract.js';
import { ledgerItemId } from '../../lambdas/shop/consumer/ledger.js';
import { NOTIFICATIONS_NAMESPACE } from '../../lambdas/shop/consumer/notifications.js';
import type { PipelineResources } from '../../lib/constructs/pipeline-outputs.js';
import { LEDGER_TABLE_OUTPUT } from '../../lib/shop/shop-stack.js';
import { freePort } from '../../sandbox/free-port.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import { startGateway } from '../support/http-gateway.js';
import { sharedAssembly } from '../support/shared-assembly.js';
import { beforeRequests, fail, once, type RequestInput } from './sdk-faults.js';

// The operations commands against one real sandbox (DynamoDB Local, the SQS emulator, the functions
// and their pollers), found through its ready file as `oncely … --ready-file` finds it.

/** The package's `oncely` command as `npm run build` leaves it. */
const ONCELY_COMMAND = fileURLToPath(new URL('../../dist/bin/oncely.js', import.meta.url));
/** The example shop's CDK app, which the sandbox runs. */
const SHOP_APP = fileURLToPath(new URL('../..', import.meta.url));

let sandbox: Sandbox;
let resources: PipelineResources;
/** The shop's own table, an output of its stack beside the pipeline's. */
let ledgerTableName: string;
let gateway: Awaited<ReturnType<typeof startGateway>>;
let directory: string;
let readyFile: string;
let sqs: SQSClient;
let documents: DynamoDBDocumentClient;

beforeAll(async () => {
  gateway = await startGateway(() => 200);
  sandbox = await startSandbox({
    appDirectory: SHOP_APP,
    cloudAssembly: await sharedAssembly(SHOP_APP),
    // The consumer's notifications go to the stand-in gateway, which records them in order.
    environment: { NOTIFICATION_URL: gateway.url, POWERTOOLS_LOG_LEVEL: 'ERROR' },
  });
  resources = sandbox.pipelineResources();
  const ledger = sandbox.description.outputs[LEDGER_TABLE_OUTPUT];
  if (!ledger) throw new Error(`The shop's stack has no ${LEDGER_TABLE_OUTPUT} output.`);
  ledgerTableName = ledger;
  directory = mkdtempSync(join(tmpdir(), 'oncely-ops-'));
  readyFile = join(directory, 'ready.json');
  writeFileSync(readyFile, JSON.stringify(sandbox.description));
  sqs = new SQSClient(localAwsConfig(sandbox.description.endpoints.sqs));
  documents = DynamoDBDocumentClient.from(
    new DynamoDBClient(localAwsConfig(sandbox.description.endpoints.dynamodb)),
    { marshallOptions: { removeUndefinedValues: true } },
  );
});

afterAll(async () => {
  sqs?.destroy();
  documents?.destroy();
  await sandbox?.stop();
  await gateway?.close();
  if (directory) rmSync(directory, { recursive: true, force: true });
});

/** Runs `oncely ARGS --ready-file …` in-process, as the command does; returns what it printed. */
async function oncely(...args: string[]): Promise<string> {
  // `resolve` shows the record and asks first, unless --yes (test/cli/in-doubt-confirm.test.ts).
  const yes = args[1] === 'resolve' ? ['--yes'] : [];
  const command = parseCommandLine([...args, ...yes, '--ready-file', readyFile], {}) as OperationsCommand;
  const printed: string[] = [];
  const code = await runOperation(command, { print: (text) => printed.push(text) });
  expect(code).toBe(0);
  return printed.join('\n');
}

const json = async <T>(...args: string[]): Promise<T> => JSON.parse(await oncely(...args, '--json')) as T;

async function publish(...messages: PublishMessage[]): Promise<PublishResponse> {
  const outcome = await sandbox.invoke(resources.publisherFunctionName, { messages });
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

const WAIT = { timeout: 60_000, interval: 100 };

/** A notification the example consumer POSTs to the gateway with `notifications#KEY` as Idempotency-Key. */
const notification = (key: string, groupId: string) => ({
  type: 'SendNotification',
  groupId,
  key,
  payload: { to: `${key}@example.com`, subject: 'Hello', body: `This is ${key}` },
});

const body = (message: object, publishedAt = new Date().toISOString()) =>
  JSON.stringify({ ...message, publishedAt });

/** The record ids the gateway was sent, in order, of those given. */
const sentToGateway = (...ids: string[]) =>
  gateway.requests.map((request) => String(request.idempotencyKey)).filter((id) => ids.includes(id));

/** Puts a message in the DLQ as the consumer or SQS would have moved it there. */
async function deadLetter(
  messageBody: string,
  groupId: string,
  attributes: Record<string, MessageAttributeValue> = {},
): Promise<void> {
  await sqs.send(
    new SendMessageCommand({
      QueueUrl: resources.dlqUrl,
      MessageBody: messageBody,
      MessageGroupId: groupId,
      MessageDeduplicationId: randomUUID(),
      MessageAttributes: attributes,
    }),
  );
}

/** The DLQ's messages of these groups, as `oncely dlq list --json` shows them. */
async function deadLettersOf(...groups: string[]) {
  const listing = await json<DeadLetterListing>('dlq', 'list');
  return listing.messages.filter((message) => groups.includes(message.groupId ?? ''));
}

/** Empties the DLQ, so that the next test counts only its own messages. */
async function drainDeadLetters(): Promise<void> {
  const QueueUrl = resources.dlqUrl;
  for (;;) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 10 }),
    );
    if (Messages.length === 0) return;
    for (const { ReceiptHandle } of Messages)
      await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle }));
  }
}

/**
 * Writes a notification's record as the idempotency core parks it IN_DOUBT (DESIGN §3): its error,
 * its message kept, in the unresolved index, no expiry while unresolved. `fields` override any of that.
 */
async function park(key: string, groupId: string, fields: Partial<IdempotencyRecord> = {}): Promise<string> {
  const message = notification(key, groupId);
  const nowMs = Date.now();
  const id = `${NOTIFICATIONS_NAMESPACE}#${key}`;
  await documents.send(
    new PutCommand({
      TableName: resources.idempotencyTableName,
      Item: {
        id,
        status: 'IN_DOUBT',
        unresolved: 'IN_DOUBT',
        // What the consumer's operations hash: so that its acquire takes the record over.
        payloadHash: payloadHash({ type: message.type, payload: message.payload }),
        updatedAt: nowMs,
        attempts: 1,
        error: { name: 'OutcomeUnknownError', message: 'POST /send failed after the request was sent' },
        message: { body: body(message), groupId },
        ...fields,
      },
    }),
  );
  return id;
}

/** The in-doubt operations on clients of the test's own, to inject faults into. */
function inDoubtTarget(): InDoubtTarget & { close: () => void } {
  const { endpoints } = sandbox.description;
  const target = {
    dynamodb: new DynamoDBClient(localAwsConfig(endpoints.dynamodb)),
    sqs: new SQSClient(localAwsConfig(endpoints.sqs)),
    resources,
  };
  return {
    ...target,
    close: () => {
      target.dynamodb.destroy();
      target.sqs.destroy();
    },
  };
}

const recordOf = (id: string) => readItem(resources.idempotencyTableName, id);

const updating = (prefix: string) => (input: RequestInput) =>
  String(input.UpdateExpression).startsWith(prefix);

describe('oncely dlq', () => {
  // Each test counts only its own messages, whatever the one before left, failing or not.
  afterEach(drainDeadLetters);

  it('lists a poison message without consuming it, and redrives it; a completed one is recognised', async () => {
    const poison = { type: 'NoSuchType', groupId: 'ops-poison', key: 'poison-1', payload: { n: 1 } };
    const stock = {
      type: 'StockReceived',
      groupId: 'ops-stock',
      key: 'stock-1',
      payload: { sku: 'ops', quantity: 5 },
    };
    const published = await publish(poison, stock);
    const stockItem = () => readItem<{ available: number }>(ledgerTableName, ledgerItemId.stock('ops'));
    await expect.poll(stockItem, WAIT).toMatchObject({ available: 5 });
    // The effect happened, yet SQS dead-lettered the message anyway (say its deletes kept failing):
    // the same body lands in the DLQ, as SQS would move it there.
    await deadLetter(body(stock), stock.groupId);
    await expect.poll(() => messagesInQueue(sqs, resources.dlqUrl), WAIT).toBe(2);

    const listing = await json<DeadLetterListing>('dlq', 'list');
    // Each group in order; between groups, in whatever order SQS hands them out.
    const byGroup = [...listing.messages].sort((a, b) => String(a.groupId).localeCompare(String(b.groupId)));
    expect(byGroup).toEqual([
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
    expect(byGroup[1]?.error).toBeUndefined(); // moved by SQS, not by the consumer
    const table = await oncely('dlq', 'list');
    expect(table).toContain('2 messages in the DLQ');
    expect(table).toMatch(/ops-poison +NoSuchType +poison-1 +1 .*UnknownMessageTypeError: /);
    expect(table).toMatch(/ops-stock +StockReceived +stock-1 .*moved by SQS after maxReceiveCount/);
    expect(await messagesInQueue(sqs, resources.dlqUrl)).toBe(2); // listed, not consumed

    expect(await oncely('dlq', 'redrive')).toMatch(
      /^Moved 2 messages from the DLQ back to \S+, each group in order\./,
    );
    // The poison is rejected again and comes back as a new copy; the stock message is a duplicate.
    await expect
      .poll(async () => (await json<DeadLetterListing>('dlq', 'list')).messages, WAIT)
      .toEqual([expect.objectContaining({ key: 'poison-1', originalMessageId: expect.any(String) })]);
    const [again] = (await json<DeadLetterListing>('dlq', 'list')).messages;
    expect(again?.originalMessageId).not.toBe(sentId(published));
    await expect.poll(() => messagesInQueue(sqs, resources.queueUrl), WAIT).toBe(0);
    expect(await stockItem()).toMatchObject({ available: 5 });
  });

  it('redrives each group in order, leaves messages past the dedup horizon in the DLQ, and may run twice', async () => {
    const [n1, old, n2, n3, marked] = ['n1', 'old', 'n2', 'n3', 'marked'].map((key) => `redrive-${key}`);
    const ids = [n1, old, n2, n3, marked].map((key) => `${NOTIFICATIONS_NAMESPACE}#${key}`);
    await deadLetter(body(notification(n1, 'ops-order')), 'ops-order');
    // Published long before the horizon (the sandbox's TTL is days): a redrive would run it as new.
    await deadLetter(body(notification(old, 'ops-order'), '2020-01-01T00:00:00.000Z'), 'ops-order');
    await deadLetter(body(notification(n2, 'ops-order')), 'ops-order');
    await deadLetter(body(notification(n3, 'ops-order')), 'ops-order');
    // Recent by its envelope, but the consumer already judged it past the horizon.
    await deadLetter(body(notification(marked, 'ops-other')), 'ops-other', {
      ErrorName: { DataType: 'String', StringValue: PAST_DEDUP_HORIZON },
    });
    await deadLetter('not an envelope', 'ops-other');

    const text = await oncely('dlq', 'redrive');
    expect(text).toMatch(/^Moved 4 messages from the DLQ back to /);
    expect(text).toContain(
      'Left 2 messages past the dedup horizon in the DLQ: they can no longer be told apart from new messages; see DESIGN §2.',
    );
    await expect.poll(() => sentToGateway(...ids), WAIT).toEqual(ids.filter((id) => !/old|marked/.test(id)));
    // The skipped ones stay where they were; the non-envelope was redriven and the consumer dead-lettered it again.
    const { dlqUrl } = resources;
    await expect.poll(() => messagesInQueue(sqs, dlqUrl), WAIT).toBe(3);
    const left = await deadLettersOf('ops-order', 'ops-other');
    expect(left.map((message) => [message.key ?? 'not an envelope', message.error?.name]).sort()).toEqual([
      ['not an envelope', 'InvalidEnvelopeError'],
      ['redrive-marked', PAST_DEDUP_HORIZON],
      ['redrive-old', undefined], // left as it was: neither marked nor re-sent
    ]);

    // Again: the skipped messages are seen once more and stay; only the non-envelope moves (and comes back).
    const again = await json<RedriveResult>('dlq', 'redrive');
    expect(again).toMatchObject({
      finished: true,
      moved: 1,
      left: 0,
      hidden: 0,
      timedOut: false,
      stillHidden: 0,
    });
    expect(again.skipped.map((skipped) => skipped.key).sort()).toEqual(['redrive-marked', 'redrive-old']);
    await expect.poll(() => messagesInQueue(sqs, dlqUrl), WAIT).toBe(3);
    expect(sentToGateway(...ids)).toHaveLength(3);
  });

  it('stops when a delete fails, losing and reordering nothing; a second run finishes', async () => {
    const { endpoints } = sandbox.description;
    const ids = ['cut-1', 'cut-2', 'cut-3'].map((key) => `${NOTIFICATIONS_NAMESPACE}#${key}`);
    for (const key of ['cut-1', 'cut-2', 'cut-3'])
      await deadLetter(body(notification(key, 'ops-cut')), 'ops-cut');
    // The batch reaches the queue, but its delete from the DLQ fails: as a crash between the two.
    const client = new SQSClient(localAwsConfig(endpoints.sqs));
    const isDelete = (input: RequestInput) =>
      input.QueueUrl === resources.dlqUrl &&
      Array.isArray(input.Entries) &&
      !('VisibilityTimeout' in (input.Entries[0] ?? {}));
    beforeRequests(client, once(isDelete), fail);
    const error = await redriveDeadLetters(client, resources).catch((thrown: unknown) => thrown);
    client.destroy();
    expect(error).toBeInstanceOf(RedriveInterruptedError);
    expect((error as Error).message).toMatch(
      /^The redrive stopped after moving 0 messages, and sending 3 more that may still be in the DLQ: deleting message \S+ \(group ops-cut\) failed \(Error: injected: the connection dropped\)\. What was not moved is still in the DLQ, each group in order: run `oncely dlq redrive` again/,
    );
    await expect.poll(() => sentToGateway(...ids), WAIT).toEqual(ids);
    // All three are back to be received at once (none left in flight to block the group); SQS drops the
    // second sends by their deduplication ids, and the consumer would drop them by their keys.
    expect(await json<RedriveResult>('dlq', 'redrive')).toMatchObject({
      finished: true,
      moved: 3,
      skipped: [],
    });
    await expect.poll(() => sentToGateway(...ids), WAIT).toEqual(ids); // cut-1's second copy is a duplicate
    expect(await messagesInQueue(sqs, resources.dlqUrl)).toBe(0);
  });

  it('stops at its time bound, and refuses to guess a dedup horizon it cannot compute', async () => {
    await deadLetter(body(notification('bound-1', 'ops-bound')), 'ops-bound');
    const bounded = await redriveDeadLetters(sqs, resources, { timeoutMs: 0 });
    expect(bounded).toMatchObject({
      finished: false,
      moved: 0,
      skipped: [],
      left: 1,
      timedOut: true,
      stillHidden: 0,
    });
    expect(describeRedrive(bounded, 'the-queue')).toContain(
      '1 message in the DLQ not reached before the time bound: it waits behind messages left above',
    );
    await expect(redriveDeadLetters(sqs, { ...resources, idempotencyTtlSeconds: 'soon' })).rejects.toThrow(
      DedupHorizonUnknownError,
    );
    expect(await messagesInQueue(sqs, resources.dlqUrl)).toBe(1);
  });
});

describe('oncely in-doubt', () => {
  it('lists the records to resolve, oldest first, and resolves them; retry sends once, completed never', async () => {
    const t = Date.now();
    const retried = await park('ops-retry', 'ops-mail-a', { updatedAt: t - 3000 });
    const completed = await park('ops-completed', 'ops-mail-b', { updatedAt: t - 2000 });
    // A `--as retry` killed after its first step: FAILED, message kept, still listed.
    const pending = await park('ops-pending', 'ops-mail-c', {
      status: 'FAILED',
      unresolved: 'RETRY_PENDING',
      updatedAt: t - 1000,
    });
    const bare = await park('ops-bare', 'ops-mail-d', { message: undefined, updatedAt: t });
    const expired = await park('ops-expired', 'ops-mail-e', { expiresAt: Math.floor(t / 1000) - 1 });

    const listed = (id: string, status: string, updatedAt: number, groupId?: string) => ({
      id,
      status,
      reason: { name: 'OutcomeUnknownError', message: 'POST /send failed after the request was sent' },
      since: new Date(updatedAt).toISOString(),
      attempts: 1,
      ...(groupId ? { groupId } : {}),
    });
    expect(await json<UnresolvedPage>('in-doubt', 'list')).toEqual({
      records: [
        listed(retried, 'IN_DOUBT', t - 3000, 'ops-mail-a'),
        listed(completed, 'IN_DOUBT', t - 2000, 'ops-mail-b'),
        listed(pending, 'RETRY_PENDING', t - 1000, 'ops-mail-c'),
        listed(bare, 'IN_DOUBT', t),
      ],
    });
    const table = await oncely('in-doubt', 'list');
    expect(table).toMatch(/^3 records IN_DOUBT, 1 pending a retry \(/);
    expect(table).toMatch(
      new RegExp(`${retried} +IN_DOUBT +\\S+Z +1 +ops-mail-a +OutcomeUnknownError: POST /send failed`),
    );
    expect(table).toMatch(
      new RegExp(
        `${pending} +RETRY_PENDING +\\S+Z +1 +ops-mail-c +send unconfirmed: oncely in-doubt resolve ${pending} ` +
          '--as retry',
      ),
    );
    expect(table).toMatch(new RegExp(`${bare} +IN_DOUBT .*\\(no message kept\\)`));

    // What the record says once the message is back depends on how fast the consumer takes it: still
    // FAILED, being run, or already COMPLETED. Each is true when said; what it did is checked below.
    expect(await oncely('in-doubt', 'resolve', retried, '--as', 'retry')).toMatch(
      new RegExp(
        `^${retried}: its message is back on \\S+ \\(group ops-mail-a, message id \\S+\\); ` +
          '(the record is FAILED, so the consumer runs it again|the consumer is running it already|' +
          'the record is now COMPLETED \\(the consumer ran it, .*)\\.$',
      ),
    );
    expect(await oncely('in-doubt', 'resolve', completed, '--as', 'completed')).toBe(
      `${completed} is now COMPLETED: it is never run again.`,
    );
    expect(await oncely('in-doubt', 'resolve', pending, '--as', 'retry')).toContain('(group ops-mail-c,');
    // Two groups: the consumer may run them in either order.
    await expect
      .poll(() => sentToGateway(retried, completed, pending).sort(), WAIT)
      .toEqual([pending, retried]);
    for (const id of [retried, completed, pending]) {
      await expect.poll(() => recordOf(id), WAIT).toMatchObject({ status: 'COMPLETED' });
      expect(await recordOf(id)).not.toHaveProperty('unresolved');
      expect(await recordOf(id)).not.toHaveProperty('message');
    }
    // Each resolution is in the record's history: `oncely history` tells it, then the re-sent copy's run.
    const told = async (id: string) =>
      (await json<MessageHistory>('history', id)).steps.map((step) => step.event);
    expect(await told(completed)).toEqual(['resolved by an operator: completed']);
    // The consumer may take the record before the command clears its mark: then that step is not written.
    const sentBack = 'sent back to the queue by the operator';
    const retriedStory = await told(retried);
    expect(retriedStory.filter((event) => event !== sentBack)).toEqual([
      'resolved by an operator: retry',
      'delivered (the re-sent copy): lease taken',
      'effect applied',
    ]);
    expect([[], [1]]).toContainEqual(
      retriedStory.flatMap((event, index) => (event === sentBack ? [index] : [])),
    );

    await expect(oncely('in-doubt', 'resolve', bare, '--as', 'retry')).rejects.toThrow(MessageNotKeptError);
    await oncely('in-doubt', 'resolve', bare, '--as', 'completed');
    await expect(oncely('in-doubt', 'resolve', retried, '--as', 'retry')).rejects.toThrow(
      new RecordNotInDoubtError(`${retried} is COMPLETED, not IN_DOUBT: there is nothing to resolve.`),
    );
    await expect(oncely('in-doubt', 'resolve', expired, '--as', 'completed')).rejects.toThrow(
      UnknownRecordError,
    );
    await expect(oncely('in-doubt', 'resolve', 'ops-retry', '--as', 'completed')).rejects.toThrow(
      UnknownRecordError,
    );
    await expect(oncely('in-doubt', 'resolve', 'notifications#nope', '--as', 'retry')).rejects.toThrow(
      /^No idempotency record notifications#nope\. `oncely in-doubt list` shows the records in doubt\.$/,
    );
    expect(await oncely('in-doubt', 'list')).toMatch(/^No records are IN_DOUBT or pending a retry/);
    expect(sentToGateway(retried, completed, pending).sort()).toEqual([pending, retried]);
  });

  it('keeps a retry whose send failed RETRY_PENDING and listed, with its message; a second run finishes it', async () => {
    const id = await park('ops-unsent', 'ops-mail-f');
    const target = inDoubtTarget();
    beforeRequests(target.sqs, (input) => 'MessageBody' in input, fail);
    try {
      await expect(resolveAsRetry(target, id)).rejects.toThrow(
        new ResendFailedError(
          `Could not send the message of ${id} back to the queue (Error: injected: the connection dropped). ` +
            'Nothing is lost: the record is RETRY_PENDING and keeps its message. ' +
            `Run \`oncely in-doubt resolve ${id} --as retry\` again.`,
        ),
      );
    } finally {
      target.close();
    }
    expect(await recordOf(id)).toMatchObject({
      status: 'FAILED',
      unresolved: 'RETRY_PENDING',
      message: { groupId: 'ops-mail-f' },
      error: { name: 'OutcomeUnknownError' },
    });
    expect(await json<UnresolvedPage>('in-doubt', 'list')).toEqual({
      records: [expect.objectContaining({ id, status: 'RETRY_PENDING' })],
    });

    await oncely('in-doubt', 'resolve', id, '--as', 'retry');
    await expect.poll(() => recordOf(id), WAIT).toMatchObject({ status: 'COMPLETED' });
    expect(sentToGateway(id)).toEqual([id]);
  });

  it('reports a retry whose record could not be cleared; the consumer takes the record over', async () => {
    const id = await park('ops-uncleared', 'ops-mail-g');
    const target = inDoubtTarget();
    beforeRequests(target.dynamodb, updating('SET expiresAt = :expiresAt, history'), fail);
    try {
      const resolution = await resolveAsRetry(target, id);
      expect(resolution).toMatchObject({ notCleared: 'Error: injected: the connection dropped' });
      expect(describeResolution(resolution, 'the-queue')).toMatch(
        /Only the last step is left: taking the record off the list, which failed \(Error: injected: .*\)\. It shows as RETRY_PENDING until the consumer runs the message, then leaves the list by itself: there is no need to resolve it again/,
      );
    } finally {
      target.close();
    }
    await expect.poll(() => recordOf(id), WAIT).toMatchObject({ status: 'COMPLETED' });
    expect(await recordOf(id)).not.toHaveProperty('unresolved');
    expect(sentToGateway(id)).toEqual([id]);
  });

  it('refuses a resolution whose record changed after it was read, and says what it is now', async () => {
    const id = await park('ops-raced', 'ops-mail-h');
    const target = inDoubtTarget();
    // Another operator resolves it between this command's read and its write.
    beforeRequests(target.dynamodb, once(updating('SET #status = :completed')), async () => {
      await oncely('in-doubt', 'resolve', id, '--as', 'completed');
    });
    try {
      await expect(resolveAsCompleted(target, id)).rejects.toThrow(
        new ResolutionConflictError(
          `${id} changed while this command resolved it: it is now COMPLETED (another \`oncely in-doubt resolve\`, ` +
            'or the consumer running a re-sent message, got there first). This command changed nothing; ' +
            '`oncely in-doubt list` shows whether it still needs resolving.',
        ),
      );
    } finally {
      target.close();
    }
    await expect(oncely('in-doubt', 'resolve', id, '--as', 'retry')).rejects.toThrow(RecordNotInDoubtError);
    expect(sentToGateway(id)).toEqual([]);
  });
});

describe('the oncely command (dist/bin/oncely.js, as built)', () => {
  /** Runs the package's command in a child process, without the ONCELY_* variables of this one. */
  function runBin(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const { ONCELY_READY_FILE: _file, ONCELY_STACK_NAME: _stack, ...env } = process.env;
    const child = spawn(process.execPath, [ONCELY_COMMAND, ...args], { env });
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
      republish: false,
      yes: false,
    });
    expect(() => parseCommandLine(['in-doubt', 'resolve', 'k', '--as', 'maybe', '--stack', 's'], {})).toThrow(
      CliUsageError,
    );
    expect(parseCommandLine(['dlq', 'redrive', '--stack', 's', '--timeout', '60'], {})).toMatchObject({
      name: 'dlq-redrive',
      timeoutSeconds: 60,
    });
    expect(() => parseCommandLine(['dlq', 'redrive', '--stack', 's', '--timeout', '0'], {})).toThrow(
      new CliUsageError('--timeout takes a whole number of seconds above 0, got "0".'),
    );
  });
});
