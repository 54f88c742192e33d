import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../cli/command-line.js';
import { runConsole } from '../../cli/console-command.js';
import { type ConsoleServer, startConsole } from '../../cli/console-server.js';
import type { PipelineConnection } from '../../cli/target.js';
import { connectToSandboxPipeline } from '../../cli/target.js';
import { publish } from '../../lambdas/client/index.js';
import { LEDGER_NAMESPACE } from '../../lambdas/shop/consumer/ledger.js';
import { localAwsConfig } from '../../sandbox/local-aws-config.js';
import { type Sandbox, startSandbox } from '../../sandbox/local-sandbox.js';
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
let pipeline: PipelineConnection;
let server: ConsoleServer;
let browser: Browser;
let page: Page;
let lambda: LambdaClient;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `No Chromium at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH). .ci/run installs it.`,
    );
  }
  sandbox = await startSandbox({
    appDirectory: SHOP_APP,
    cloudAssembly: await sharedAssembly(SHOP_APP),
    functionOutput: () => undefined,
  });
  pipeline = connectToSandboxPipeline('the console test', {
    ...sandbox.description,
    resources: sandbox.pipelineResources(),
  });
  server = await startConsole(pipeline);
  lambda = new LambdaClient(localAwsConfig(sandbox.description.endpoints.lambda));
  // As root (CI), Chromium needs --no-sandbox.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  // axe-core is injected as a script of its own: the console's policy allows its own scripts only.
  page = await (await browser.newContext({ bypassCSP: true })).newPage();
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  pipeline?.close();
  lambda?.destroy();
  await sandbox?.stop();
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

/** A raw GET to the console with the Host header given, as another page or process could send it. */
function rawRequest(method: string, host: string): Promise<number> {
  const { port } = new URL(server.url);
  return new Promise((resolve, reject) => {
    const sent = request(
      { host: '127.0.0.1', port, method, path: '/api/overview', headers: { host } },
      (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    sent.on('error', reject);
    sent.end();
  });
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
    await screenshot('overview');

    await page.getByLabel('Message key').fill(poison.key);
    await page.getByLabel('Namespace').fill(LEDGER_NAMESPACE);
    // The DLQ may show the message a moment before its send is in the record's log: ask again until it is.
    const story = page.locator('#history');
    await expect
      .poll(async () => {
        await page.getByRole('button', { name: 'Tell its story' }).click();
        await story.getByRole('heading', { name: `The story of ${poison.key}` }).waitFor(WAIT);
        return story.textContent();
      }, WAIT)
      .toContain('sent to the DLQ');
    expect(await story.textContent()).toContain(`oncely dlq redrive --key ${poison.key}`);
    await screenshot('story');

    await page.getByRole('button', { name: 'List the DLQ' }).click();
    await page.locator('#dlq').getByRole('cell', { name: poison.key, exact: true }).waitFor(WAIT);
    expect(await page.locator('#dlq').textContent()).toContain('BusinessRuleViolationError');
    await screenshot('dlq');
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
    await expect.poll(() => address, WAIT).toMatch(/: http:\/\/127\.0\.0\.1:\d+\/ {2}\(Ctrl-C to stop\)$/);
    const url = String(/http:\S+/.exec(address)?.[0]);
    await page.goto(url);
    await page.locator('#queues tbody tr').first().waitFor(WAIT);
    stop();
    expect(await served).toBe(0);
    await expect(fetch(url)).rejects.toThrow();
    rmSync(directory, { recursive: true, force: true });
  });

  it('answers only its own address, and only reads', async () => {
    const { host } = new URL(server.url);
    expect(await rawRequest('GET', host)).toBe(200);
    expect(await rawRequest('GET', 'attacker.example')).toBe(421);
    expect(await rawRequest('POST', host)).toBe(405);
  });
});
