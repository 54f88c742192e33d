import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { deathSignalWorks, privateTmpWorks } from '../../sandbox/function-process.js';
import { LocalFunctionRuntime, type LocalFunctionSpec } from '../../sandbox/function-runtime.js';
import { installLambdaNode } from '../../sandbox/node-binary.js';

/** Plain-JS handlers, as a function's bundled asset is. */
const FUNCTIONS = resolve('test/sandbox/fixtures/functions');
// Outside /tmp, which each container has its own of: the markers its timers write must show here.
mkdirSync('.oncely', { recursive: true });
const scratch = mkdtempSync(join(resolve('.oncely'), 'container-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

const runtimes: LocalFunctionRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop()));
});

function runtime(handler: string, overrides: Partial<LocalFunctionSpec> = {}, freeze?: boolean) {
  const name = `fn-${handler.replaceAll(/[^\w]/g, '-')}`;
  const created = new LocalFunctionRuntime(
    {
      name,
      arn: `arn:aws:lambda:eu-west-1:123456789012:function:${name}`,
      codeDirectory: FUNCTIONS,
      handler,
      runtime: 'nodejs24.x',
      timeoutSeconds: 5,
      memoryMiB: 256,
      environment: {},
      ...overrides,
    },
    undefined,
    { freeze },
  );
  runtimes.push(created);
  return created;
}

/** Whether process `pid` is alive (a zombie counts as gone: its parent is this process). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !/^\d+ \(.*\) Z/.test(readStat(pid));
}
function readStat(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return '';
  }
}

/** Whether `check` holds at some point within `ms` (polled): for what must not happen. */
async function becomesTrue(check: () => boolean, ms: number): Promise<boolean> {
  for (const until = Date.now() + ms; Date.now() < until; ) {
    if (check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return check();
}

describe('a function’s container: its environment, as Lambda’s', () => {
  it('runs in its task root, in UTC, with Lambda’s reserved variables, on its runtime’s Node.js major', async () => {
    const fn = runtime('container.environment', { environment: { TZ: 'America/New_York' } });
    const outcome = await fn.invoke({});
    expect(outcome).toMatchObject({
      ok: true,
      result: {
        cwd: FUNCTIONS,
        tz: ':UTC',
        hour: 12,
        variables: {
          AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
          AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '256',
          AWS_LAMBDA_FUNCTION_NAME: 'fn-container-environment',
          AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
          AWS_LAMBDA_LOG_GROUP_NAME: '/aws/lambda/fn-container-environment',
          AWS_LAMBDA_LOG_STREAM_NAME: expect.stringMatching(
            /^\d{4}\/\d{2}\/\d{2}\/\[\$LATEST\][0-9a-f]{32}$/,
          ),
          AWS_REGION: 'eu-west-1',
          LAMBDA_TASK_ROOT: FUNCTIONS,
          _HANDLER: 'container.environment',
        },
      },
    });
    // On Lambda's major where one is installed (the test setup installs Node 24), else the host's, said so.
    const { nodeMajor } = (outcome as { result: { nodeMajor: number } }).result;
    expect(nodeMajor).toBe(fn.node.matches ? 24 : Number(process.versions.node.split('.')[0]));
    expect(fn.node.matches).toBe(true);
  });

  it('runs a runtime whose Node.js major is nowhere here on this machine’s, and says so', async () => {
    const fn = runtime('container.environment', { runtime: 'nodejs18.x' });
    const hostMajor = Number(process.versions.node.split('.')[0]);
    expect(fn.node).toEqual({
      path: process.execPath,
      version: process.versions.node,
      wantedMajor: 18,
      matches: hostMajor === 18,
    });
    expect(await fn.invoke({})).toMatchObject({
      ok: true,
      result: { nodeMajor: hostMajor, variables: { AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs18.x' } },
    });
  });

  it('disables what Lambda disables of Node’s experimental features: require() of an ES module on nodejs22.x', async () => {
    // Node.js 22 itself allows it (22.12+); Lambda's nodejs22.x (and 20.x) runtime does not.
    installLambdaNode(22);
    const fn = runtime('container.requiresEsm', { runtime: 'nodejs22.x' });
    expect(fn.node).toMatchObject({
      wantedMajor: 22,
      matches: true,
      version: expect.stringMatching(/^22\./),
    });
    expect(await fn.invoke({})).toMatchObject({
      ok: false,
      error: { errorType: 'Error', errorMessage: expect.stringContaining('require() of ES Module') },
    });
    // NODE_OPTIONS re-enables it, as on Lambda.
    const enabled = runtime('container.requiresEsm', {
      name: 'fn-requires-esm-enabled',
      runtime: 'nodejs22.x',
      environment: { NODE_OPTIONS: '--experimental-require-module' },
    });
    expect(await enabled.invoke({})).toEqual({ ok: true, result: 42 });
  });

  it('gives each container a temporary directory of its own, and a /tmp of its own where Linux allows', async () => {
    const fn = runtime('container.scratch');
    const run = randomUUID();
    const [firstText, secondText] = [`first ${run}`, `second ${run}`];
    // Two at once: two containers.
    const [first, second] = await Promise.all([
      fn.invoke({ text: firstText, holdMs: 300 }),
      fn.invoke({ text: secondText, holdMs: 300 }),
    ]);
    // Where /tmp is shared, the literal path may show the other's write; TMPDIR never does.
    const isolated = privateTmpWorks();
    for (const outcome of [first, second]) {
      expect(outcome.ok).toBe(true);
      const [literal, own] = (outcome as { result: { before: (string | null)[] } }).result.before;
      expect(own).toBeNull();
      if (isolated) expect(literal).toBeNull();
    }
    // A warm container keeps its own.
    const again = await fn.invoke({ text: 'third' });
    const before = (again as { result: { before: (string | null)[] } }).result.before;
    expect([firstText, secondText]).toContain(before[1]);
    if (isolated) {
      expect(before[0]).toBe(before[1]);
      // Not this machine's /tmp: what another process left there is no concern of this test.
      const host = '/tmp/oncely-container-probe';
      expect(existsSync(host) && readFileSync(host, 'utf8').includes(run)).toBe(false);
    }
  });
});

describe('a function’s container: frozen between invocations, as on Lambda', () => {
  it('does not complete an un-awaited write after the answer, but with its next invocation', async () => {
    const marker = join(scratch, 'frozen-marker');
    const fn = runtime('container.unawaited');
    expect(await fn.invoke({ marker, afterMs: 20 })).toEqual({ ok: true, result: 'answered' });
    // 25 times the timer's delay: unfrozen, it would have written long before.
    expect(await becomesTrue(() => existsSync(marker), 500)).toBe(false);
    await fn.invoke({ marker: join(scratch, 'second-marker'), afterMs: 60_000 });
    await expect.poll(() => existsSync(marker), { timeout: 60_000 }).toBe(true);
  });

  it('fails the next invocation, not the sandbox, with the error a frozen timer throws once thawed', async () => {
    const fn = runtime('container.throwsLater');
    expect(await fn.invoke({ arm: true })).toEqual({ ok: true, result: 'answered' });
    // Thawed, the timer fires while this one runs (on Lambda too: it came due while frozen).
    expect(await fn.invoke({ arm: false, holdMs: 2_000 })).toMatchObject({
      ok: false,
      error: { errorType: 'TypeError', errorMessage: 'thrown by a timer of an earlier invocation' },
    });
    // And a fresh container after it.
    expect(await fn.invoke({ arm: false })).toEqual({ ok: true, result: 'answered' });
  });

  it('lets it complete when freezing is off (harsher for nothing: what Lambda never does)', async () => {
    const marker = join(scratch, 'unfrozen-marker');
    const fn = runtime('container.unawaited', {}, false);
    await fn.invoke({ marker, afterMs: 20 });
    await expect.poll(() => existsSync(marker), { timeout: 60_000 }).toBe(true);
  });
});

describe('a function’s handler, answered as its runtime’s interface client does', () => {
  it.each([
    ['callback', 'nodejs22.x', { ok: true, result: 'from the callback' }],
    ['returnsPlainValue', 'nodejs22.x', { ok: true, result: null }],
    ['succeeds', 'nodejs22.x', { ok: true, result: 'from context.succeed' }],
    ['asyncWithCallback', 'nodejs22.x', { ok: true, result: 'returned' }],
    [
      'neverSettles',
      'nodejs22.x',
      { ok: false, error: expect.objectContaining({ errorType: 'Runtime.NodeJsExit' }) },
    ],
    [
      'callback',
      'nodejs24.x',
      {
        ok: false,
        error: expect.objectContaining({
          errorType: 'Runtime.CallbackHandlerDeprecated',
          errorMessage: expect.stringContaining('removed support for callback-based function handlers'),
        }),
      },
    ],
    [
      'asyncWithCallback',
      'nodejs24.x',
      { ok: false, error: expect.objectContaining({ errorType: 'Runtime.CallbackHandlerDeprecated' }) },
    ],
    ['returnsPlainValue', 'nodejs24.x', { ok: true, result: 'returned' }],
    [
      'unserializable',
      'nodejs22.x',
      {
        ok: false,
        error: expect.objectContaining({
          errorType: 'Error',
          errorMessage: 'Unable to stringify response body',
        }),
      },
    ],
    [
      'unserializable',
      'nodejs24.x',
      {
        ok: false,
        error: expect.objectContaining({
          errorType: 'Runtime.JSONStringifyError',
          errorMessage: 'Unable to stringify response body',
        }),
      },
    ],
  ])('answers handler %s on %s as Lambda does', async (handler, runtimeName, expected) => {
    expect(await runtime(`container.${handler}`, { runtime: runtimeName }).invoke({})).toEqual(expected);
  });

  it.each([
    [true, true],
    [false, false],
  ])(
    'on nodejs22.x, with callbackWaitsForEmptyEventLoop %s, answers after a pending timer: %s',
    async (wait, ran) => {
      const marker = join(scratch, `callback-marker-${wait}`);
      const fn = runtime('container.callbackBeforeTimer', { runtime: 'nodejs22.x' });
      expect(await fn.invoke({ wait, marker })).toEqual({ ok: true, result: 'from the callback' });
      expect(existsSync(marker)).toBe(ran);
    },
  );
});

describe('a function’s answer, within Lambda’s limits', () => {
  it('fails a response over 6 MB as Lambda does, and keeps the container', async () => {
    const fn = runtime('container.large');
    expect(await fn.invoke({ bytes: 6_291_556 })).toEqual({
      ok: false,
      error: {
        errorType: 'Function.ResponseSizeTooLarge',
        errorMessage: 'Response payload size exceeded maximum allowed payload size (6291556 bytes).',
      },
    });
    // Its JSON is the string's quotes and all: 2 bytes under the limit answers.
    expect(await fn.invoke({ bytes: 6_291_554 })).toMatchObject({ ok: true });
  });
});

describe.runIf(process.platform === 'linux')('a function’s container: it never outlives the sandbox', () => {
  it('is killed by stop(), frozen or not', async () => {
    const fn = runtime('container.environment');
    const { pid } = ((await fn.invoke({})) as { result: { pid: number } }).result;
    expect(alive(pid)).toBe(true);
    await fn.stop();
    expect(alive(pid)).toBe(false);
  });

  it.runIf(deathSignalWorks())('dies with the process that started it, even frozen', async () => {
    // A process of its own that runs a function, prints its container's pid, and waits to be killed.
    const orphan = `orphan-${randomUUID().slice(0, 8)}`;
    const script = `
      import { LocalFunctionRuntime } from './sandbox/function-runtime.ts';
      const fn = new LocalFunctionRuntime({ name: ${JSON.stringify(orphan)}, arn: 'arn:aws:lambda:us-east-1:123456789012:function:orphan',
        codeDirectory: ${JSON.stringify(FUNCTIONS)}, handler: 'container.environment', runtime: 'nodejs24.x',
        timeoutSeconds: 5, environment: {} });
      const outcome = await fn.invoke({});
      console.log(outcome.result.pid);
      setInterval(() => undefined, 1000);
    `;
    const parent = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let output = '';
    parent.stdout.on('data', (chunk) => {
      output += chunk;
    });
    await expect.poll(() => /^\d+\n/.test(output), { timeout: 60_000 }).toBe(true);
    const pid = Number(output.trim());
    expect(alive(pid)).toBe(true);
    parent.kill('SIGKILL');
    await expect.poll(() => alive(pid), { timeout: 60_000 }).toBe(false);
    // Killed, its parent could not remove the container's private /tmp.
    for (const entry of readdirSync(tmpdir())) {
      if (entry.startsWith(`oncely-fn-${orphan}-`))
        rmSync(join(tmpdir(), entry), { recursive: true, force: true });
    }
  });
});
