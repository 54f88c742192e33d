import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { marshall } from '@aws-sdk/util-dynamodb';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../cli/command-line.js';
import { runConsole } from '../../cli/console-command.js';
import { type PipelineFigures, pipelineFigures } from '../../cli/console-metrics.js';
import { type ConsolePublisher, sandboxPublisher } from '../../cli/console-publish.js';
import { type ConsoleServer, startConsole, TOKEN_HEADER } from '../../cli/console-server.js';
import type { PipelineConnection } from '../../cli/target.js';
import { connectToSandboxPipeline } from '../../cli/target.js';
import { publish } from '../../lambdas/client/index.js';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { Outbox } from '../../lambdas/outbox/index.js';
import { LEDGER_NAMESPACE } from '../../lambdas/shop/consumer/ledger.js';
import { OUTBOX_OUTPUTS } from '../../lib/constructs/outbox-outputs.js';
import { functionLog } from '../../sandbox/function-log.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
import { createOutboxTable } from '../support/outbox.js';
import { BUSY_MACHINE_RETRY } from '../support/publisher.js';
import { sharedAssembly } from '../support/shared-assembly.js';

// docs/console.md, in a real browser: Debian's Chromium, driven by playwright-core, against the
// shop in the sandbox. The console shows the poison message in the DLQ, tells its story, lists the
// DLQ; passes an accessibility check; reads at a phone's width; refuses a foreign Host and writes.
// With ONCELY_SCREENSHOTS=1 it writes the screenshots under docs/console/.

const SHOP_APP = fileURLToPath(new URL('../..', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const WAIT = { timeout: 120_000 };
const run = randomUUID().slice(0, 8);

let sandbox: Sandbox;
let scratch: string;
let logs: ReturnType<typeof functionLog>;
let pipeline: PipelineConnection;
let server: ConsoleServer;
let publisher: ConsolePublisher;
let figures: PipelineFigures | undefined;
let browser: Browser;
let page: Page;
/** What the page's script threw: nothing, every test says at its end. */
const pageErrors: string[] = [];
let lambda: LambdaClient;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH). .ci/run installs it.`,
    );
  }
  scratch = mkdtempSync(join(tmpdir(), 'oncely-console-test-'));
  logs = functionLog(join(scratch, 'functions.log.jsonl'), () => undefined);
  sandbox = await startSandbox({
    appDirectory: SHOP_APP,
    cloudAssembly: await sharedAssembly(SHOP_APP),
    // What `oncely local` keeps of the functions' output, which a story shows the lines of.
    functionOutput: logs.output,
    // The functions' spans, which a story shows as a waterfall.
    traces: { file: join(scratch, 'traces.otlp.jsonl') },
  });
  pipeline = connectToSandboxPipeline('the console test', {
    ...sandbox.description,
    resources: sandbox.pipelineResources(),
  });
  publisher = await sandboxPublisher(sandbox.description, sandbox.pipelineResources().publisherFunctionName);
  // As `oncely local` reads them: from its edge's CloudWatch.
  figures = await pipelineFigures(pipeline, localAwsConfig(sandbox.description.endpoints.edge), (text) => {
    throw new Error(text);
  });
  server = await startConsole(pipeline, {
    logsFile: logs.file,
    actions: true,
    publisher,
    tracesFile: sandbox.description.traces?.file,
    metrics: figures?.read,
  });
  lambda = new LambdaClient(localAwsConfig(sandbox.description.endpoints.lambda));
  // As root (CI), Chromium needs --no-sandbox.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  // axe-core is injected as a script of its own: the console's policy allows its own scripts only.
  page = await (await browser.newContext({ bypassCSP: true })).newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 240_000);

afterEach(() => {
  expect(pageErrors).toEqual([]);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  publisher?.close();
  figures?.close();
  pipeline?.close();
  lambda?.destroy();
  await sandbox?.stop();
  await logs?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

/** An order for stock that does not exist: the ledger refuses it, and the consumer dead-letters it. */
const poison = {
  type: 'OrderPlaced',
  groupId: `c-${run}`,
  key: `placed-${run}`,
  payload: { orderId: `o-${run}`, customerId: `c-${run}`, sku: `sku-${run}`, quantity: 1, amountCents: 100 },
};

async function screenshot(name: string): Promise<void> {
  if (!process.env.ONCELY_SCREENSHOTS) return;
  const directory = fileURLToPath(new URL('../../docs/console/', import.meta.url));
  mkdirSync(directory, { recursive: true });
  await page.screenshot({ path: `${directory}${name}.png`, fullPage: true });
}

/** A raw request to a console, as another page or process could send it: its status. */
function rawRequest(
  method: string,
  options: { host?: string; path?: string; headers?: Record<string, string>; to?: ConsoleServer } = {},
): Promise<number> {
  const to = options.to ?? server;
  const { port, host } = new URL(to.url);
  const headers = { host: options.host ?? host, 'content-type': 'application/json', ...options.headers };
  return new Promise((resolve, reject) => {
    const sent = request(
      { host: '127.0.0.1', port, method, path: options.path ?? '/api/overview', headers },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    sent.on('error', reject);
    sent.end(method === 'POST' ? JSON.stringify({ key: poison.key, dryRun: true }) : undefined);
  });
}

/** Asks the page to tell `key`'s story until it contains `text`. */
async function storyUntil(key: string, namespace: string, text: string): Promise<void> {
  await page.getByLabel('Message key').fill(key);
  await page.getByLabel('Namespace').fill(namespace);
  const story = page.locator('#history');
  await expect
    .poll(async () => {
      await page.getByRole('button', { name: 'Tell its story' }).click();
      await story.getByRole('heading', { name: `The story of ${key}` }).waitFor(WAIT);
      return story.textContent();
    }, WAIT)
    .toContain(text);
}

describe('the console, in Chromium', { timeout: 300_000 }, () => {
  it('shows the DLQ filling, tells a dead-lettered message’s story, and lists the DLQ', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(server.url);
    await page.getByRole('heading', { name: 'Oncely console' }).waitFor(WAIT);
    await publish([poison], {
      functionName: sandbox.pipelineResources().publisherFunctionName,
      lambda,
      retry: BUSY_MACHINE_RETRY,
    });
    // The overview reads itself every 2 s: the DLQ's row shows the message.
    const dlqRow = page.locator('#queues tbody tr', { hasText: 'DLQ' });
    await dlqRow.locator('td').nth(1).filter({ hasText: /^1$/ }).waitFor(WAIT);
    // Its oldest message's age, from the sandbox's CloudWatch: a number of seconds.
    expect(await dlqRow.locator('td').nth(4).textContent()).toMatch(/^\d+$/);
    await screenshot('overview');

    // The DLQ may show the message a moment before its send is in the record's log: ask again until it is.
    await storyUntil(poison.key, LEDGER_NAMESPACE, 'sent to the DLQ');
    expect(await page.locator('#history').textContent()).toContain(`oncely dlq redrive --key ${poison.key}`);
    // The consumer's log line about it, beside its steps.
    expect(await page.locator('#history').textContent()).toContain('warn: sent to the DLQ at once');
    // The error it was refused with, its stack folded beneath the line that logged it.
    const error = page.locator('#history details', { hasText: 'BusinessRuleViolationError' }).first();
    await error.locator('summary').click();
    expect(await error.locator('pre').textContent()).toMatch(/\n\s+at /);
    // Its spans on one time axis: the publisher's send, the consumer's record span that dead-lettered it.
    const waterfall = page.getByRole('list', { name: /^Spans on one time axis/ });
    await waterfall.getByText(/dead-lettered/).waitFor(WAIT);
    expect(await waterfall.getByRole('listitem').count()).toBeGreaterThanOrEqual(2);
    await screenshot('story');

    await page.getByRole('button', { name: 'List the DLQ' }).click();
    await page.locator('#dlq').getByRole('cell', { name: poison.key, exact: true }).waitFor(WAIT);
    expect(await page.locator('#dlq').textContent()).toContain('BusinessRuleViolationError');
    await screenshot('dlq');
  });

  it('lists the messages, finds a duplicate-suppressed one and tells its story; counts each function’s invocations', async () => {
    const message = {
      type: 'StockReceived',
      groupId: 'warehouse',
      key: `dup-${run}`,
      payload: { sku: `sku-${run}-dup`, quantity: 2 },
    };
    await publish([message], {
      functionName: sandbox.pipelineResources().publisherFunctionName,
      lambda,
      retry: BUSY_MACHINE_RETRY,
    });
    // The same message again, as SQS would deliver it after its deduplication window.
    await pipeline.sqs.send(
      new SendMessageCommand({
        QueueUrl: sandbox.pipelineResources().queueUrl,
        MessageBody: JSON.stringify(createEnvelope(message)),
        MessageGroupId: message.groupId,
        MessageDeduplicationId: randomUUID(),
      }),
    );
    await page.getByLabel('In state').selectOption('duplicate');
    await page.getByRole('button', { name: 'Filter' }).click();
    const row = page.locator('#messages tbody tr', { hasText: message.key });
    await row.waitFor(WAIT);
    expect(await row.textContent()).toContain('duplicate');
    await screenshot('messages');
    await row.getByRole('button', { name: message.key }).click();
    await page.locator('#history').getByText('effect applied in one transaction').waitFor(WAIT);
    expect(await page.getByRole('list', { name: /^Spans on one time axis/ }).textContent()).toMatch(
      /duplicate/,
    );
    const consumer = page.locator('#functions tr', {
      hasText: sandbox.pipelineResources().consumerFunctionName,
    });
    // The poison order's invocation, then this message's: two at least, whatever the batching.
    await expect
      .poll(async () => Number(await consumer.locator('td').nth(1).textContent()), WAIT)
      .toBeGreaterThanOrEqual(2);
    await page.getByLabel('In state').selectOption('');
  });

  it('has no serious accessibility violations (axe-core), and its form works from the keyboard', async () => {
    await page.addScriptTag({ path: createRequire(import.meta.url).resolve('axe-core/axe.min.js') });
    const violations = await page.evaluate(async () => {
      const axe = (
        globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string }[] }> } }
      ).axe;
      const result = await axe.run();
      return result.violations.map(({ id, impact }) => ({ id, impact }));
    });
    expect(violations.filter((violation) => ['serious', 'critical'].includes(violation.impact))).toEqual([]);

    await page.getByLabel('Message key').focus();
    await page.keyboard.press('Tab');
    // Expressions, evaluated in the page: the tests' TypeScript knows no DOM.
    expect(await page.evaluate('document.activeElement.id')).toBe('namespace');
    await page.keyboard.press('Tab');
    expect(await page.evaluate('document.activeElement.textContent')).toBe('Tell its story');
  });

  it("reads at a phone's width: nothing wider than the screen but the tables, which scroll", async () => {
    await page.setViewportSize({ width: 375, height: 800 });
    await page.goto(server.url);
    await page.locator('#queues tbody tr').first().waitFor(WAIT);
    const overflow = await page.evaluate('document.documentElement.scrollWidth - window.innerWidth');
    expect(overflow).toBeLessThanOrEqual(0);
    await screenshot('phone');
  });

  it('is served by `oncely console --ready-file` too, until it is stopped', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'oncely-console-'));
    const readyFile = join(directory, 'ready.json');
    writeFileSync(readyFile, JSON.stringify(sandbox.description));
    let stop: () => void = () => undefined;
    const until = new Promise<void>((resolve) => (stop = resolve));
    let address = '';
    const command = parseCommandLine(['console', '--ready-file', readyFile], {});
    if (command.name !== 'console') throw new Error(`parsed as ${command.name}`);
    const served = runConsole(command, { print: (text) => (address = text), until });
    await expect
      .poll(() => address, WAIT)
      .toMatch(
        /: http:\/\/127\.0\.0\.1:\d+\/#token=[\w-]+ {2}\(it acts with the token in this address; Ctrl-C to stop\)$/,
      );
    const url = String(/http:\S+/.exec(address)?.[0]);
    await page.goto(url);
    await page.locator('#queues tbody tr').first().waitFor(WAIT);
    stop();
    expect(await served).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
    rmSync(directory, { recursive: true, force: true });
  });

  it('publishes from its form, then redrives from the page after a preview and a yes; the story shown updates itself', async () => {
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(server.url);
    await page.locator('#queues tbody tr').first().waitFor(WAIT);
    // The stock the poison order lacked, published from the form.
    const stockKey = `stock-${run}`;
    // The consumer ran (the tests before): it said which types it handles, which the form offers.
    await page.getByLabel('Type', { exact: true }).focus();
    await page
      .locator('#publish-types-note')
      .getByText(/Your consumer handles: .*StockReceived/)
      .waitFor(WAIT);
    expect(await page.locator('#publish-types option[value="OrderPlaced"]').count()).toBe(1);
    await page.getByLabel('Type', { exact: true }).fill('StockReceived');
    await page.getByLabel('Group', { exact: true }).fill('warehouse');
    await page.getByLabel('Key (optional').fill(stockKey);
    await page.getByLabel('Payload (JSON)').fill('{"sku": "oops"');
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('status').getByText('Not published: the payload is not JSON').waitFor(WAIT);
    await page.getByLabel('Payload (JSON)').fill(JSON.stringify({ sku: poison.payload.sku, quantity: 3 }));
    await page.getByRole('button', { name: 'Publish' }).click();
    await page.getByRole('status').getByText(`Published StockReceived: sent, key ${stockKey}.`).waitFor(WAIT);
    await storyUntil(stockKey, LEDGER_NAMESPACE, 'effect applied in one transaction');
    await storyUntil(poison.key, LEDGER_NAMESPACE, 'sent to the DLQ');
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'List the DLQ' }).click();
    await page.locator('#dlq').getByRole('button', { name: 'Redrive' }).click();
    await page.getByRole('status').getByText(`Redriven: 1 message(s) of key ${poison.key}`).waitFor(WAIT);
    expect(asked).toEqual([`Move 1 message(s) of key ${poison.key} back to the queue?`]);
    // The story shown reads itself again while the pipeline runs: no click.
    await page
      .locator('#history')
      .getByText('delivered (a redriven copy): effect applied in one transaction')
      .waitFor(WAIT);
    await screenshot('redriven');
  });

  it('resolves a record in doubt from the page, showing the record first', async () => {
    const table = sandbox.pipelineResources().idempotencyTableName;
    const id = `notifications#parked-${run}`;
    await pipeline.dynamodb.send(
      new PutItemCommand({
        TableName: table,
        Item: marshall({
          id,
          status: 'IN_DOUBT',
          unresolved: 'IN_DOUBT',
          payloadHash: 'h',
          attempts: 1,
          updatedAt: Date.now(),
          error: { name: 'OutcomeUnknownError', message: 'the mail gateway timed out' },
        }),
      }),
    );
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.accept();
    });
    await page.getByRole('button', { name: 'List them' }).click();
    await page.locator('#in-doubt tr', { hasText: id }).getByRole('button', { name: 'Completed' }).click();
    await page.getByRole('status').getByText(`${id} resolved as completed.`).waitFor(WAIT);
    expect(asked).toEqual([
      `${id}: IN_DOUBT, 1 attempts, OutcomeUnknownError: the mail gateway timed out\n\n` +
        'Resolve it as completed (it happened: never run it)?',
    ]);
    const { Item } = await pipeline.dynamodb.send(
      new GetItemCommand({ TableName: table, Key: { id: { S: id } }, ConsistentRead: true }),
    );
    expect(Item?.status?.S).toBe('COMPLETED');
  });

  it('lists the outbox’s pending messages by group, the stuck ones marked, as its overview counts them', async () => {
    // An outbox table of its own, which no relay reads: what is written stays pending.
    const layout = await createOutboxTable(pipeline.dynamodb, 'console-outbox');
    const write = (agoMs: number, key: string) =>
      new Outbox({ ...layout, client: pipeline.dynamodb, now: () => new Date(Date.now() - agoMs) }).write({
        messages: [{ type: 'OrderPlaced', groupId: `g-${key}`, key, payload: {} }],
      });
    await write(10 * 60_000, `late-${run}`);
    await write(0, `fresh-${run}`);
    const outputs = {
      [OUTBOX_OUTPUTS.tableName]: layout.tableName,
      [OUTBOX_OUTPUTS.partitionKey]: layout.partitionKey,
      [OUTBOX_OUTPUTS.sortKey]: layout.sortKey,
      [OUTBOX_OUTPUTS.stuckAfterSeconds]: '300',
    };
    const withOutbox = await startConsole({ ...pipeline, outputs });
    try {
      await page.goto(withOutbox.url);
      await page
        .locator('dd[data-count="Outbox stuck (over 300 s)"]')
        .filter({ hasText: /^1$/ })
        .waitFor(WAIT);
      expect(await page.locator('dd[data-count="Outbox pending"]').textContent()).toBe('2');
      await page.getByRole('button', { name: 'List the pending messages' }).click();
      const rows = page.locator('#outbox tbody tr');
      await rows.nth(1).waitFor(WAIT);
      expect(await page.locator('#outbox caption').textContent()).toBe(
        '2 pending, in 2 group(s), oldest first',
      );
      expect(await rows.nth(0).textContent()).toContain(`stuckg-late-${run}OrderPlacedlate-${run}`);
      expect(await rows.nth(1).textContent()).not.toContain('stuck');
      await screenshot('outbox');
    } finally {
      await withOutbox.close();
    }
  });

  it('answers only its own address; acts only with its token, and only when it may', async () => {
    expect(await rawRequest('GET')).toBe(200);
    expect(await rawRequest('GET', { host: 'attacker.example' })).toBe(421);
    expect(await rawRequest('PUT')).toBe(405);
    const redrive = { path: '/api/dlq/redrive' };
    const withToken = (token: string, more: Record<string, string> = {}) => ({
      ...redrive,
      headers: { [TOKEN_HEADER]: token, ...more },
    });
    expect(await rawRequest('POST', redrive)).toBe(403);
    expect(await rawRequest('POST', withToken('x'.repeat(32)))).toBe(403);
    expect(await rawRequest('POST', withToken(String(server.token)))).toBe(200);
    expect(await rawRequest('POST', withToken(String(server.token), { 'content-type': 'text/plain' }))).toBe(
      415,
    );
    const readOnly = await startConsole(pipeline);
    try {
      expect(readOnly.token).toBeUndefined();
      const overview = await (await fetch(new URL('api/overview', readOnly.url))).json();
      expect(overview).toMatchObject({ actions: false, publish: false });
      expect(readOnly.url).not.toContain('#token');
      expect(await rawRequest('POST', { ...redrive, to: readOnly })).toBe(403);
    } finally {
      await readOnly.close();
    }
  });
});
