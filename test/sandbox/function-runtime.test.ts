import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalFunctionRuntime, type LocalFunctionSpec } from '../../sandbox/function-runtime.js';
import { provideRuntimeModules } from '../../sandbox/runtime-modules.js';

/** Plain-JS handlers, as a function's bundled asset is. */
const FUNCTIONS = resolve('test/sandbox/fixtures/functions');

const runtimes: LocalFunctionRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop()));
});

function runtime(
  handler: string,
  overrides: Partial<LocalFunctionSpec> = {},
  output?: (line: string, name: string) => void,
) {
  const name = `fn-${handler.replaceAll(/[^\w]/g, '-')}`;
  const created = new LocalFunctionRuntime(
    {
      name,
      arn: `arn:aws:lambda:us-east-1:123456789012:function:${name}`,
      codeDirectory: FUNCTIONS,
      handler,
      timeoutSeconds: 5,
      environment: {},
      ...overrides,
    },
    output,
  );
  runtimes.push(created);
  return created;
}

describe('local function runtime', () => {
  it('runs the handler with its own environment, Lambda’s variables and a Lambda-like context', async () => {
    const english = runtime('functions.echo', { environment: { GREETING: 'hello' }, memoryMiB: 512 });
    const french = runtime('functions.echo', { name: 'fn-french', environment: { GREETING: 'bonjour' } });
    const [a, b] = await Promise.all([english.invoke({ n: 1 }), french.invoke({ n: 2 })]);
    expect(a).toMatchObject({
      ok: true,
      result: {
        event: { n: 1 },
        greeting: 'hello',
        taskRoot: FUNCTIONS,
        handler: 'functions.echo',
        functionName: 'fn-functions-echo',
        invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:fn-functions-echo',
        memoryLimitInMB: '512',
      },
    });
    expect(b).toMatchObject({ ok: true, result: { greeting: 'bonjour', functionName: 'fn-french' } });
    const remaining = (a as { result: { remainingMs: number } }).result.remainingMs;
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(5_000);
    expect(process.env.GREETING).toBeUndefined();
  });

  it('finds the handler as Lambda does: a module in a subdirectory, CommonJS, a dotted export', async () => {
    expect(await runtime('nested/handlers.api.get').invoke({ id: 7 })).toEqual({
      ok: true,
      result: { got: { id: 7 }, module: 'commonjs' },
    });
  });

  it('hands each line the function writes to the output callback, when there is one', async () => {
    const lines: string[] = [];
    await runtime('functions.logs', {}, (line, functionName) =>
      lines.push(`${functionName}: ${line}`),
    ).invoke({
      message: 'hello',
    });
    // stdout and stderr are two streams: their lines may arrive in either order.
    await expect
      .poll(() => [...lines].sort())
      .toEqual(['fn-functions-logs: to stderr', 'fn-functions-logs: {"level":"INFO","message":"hello"}']);
  });

  it('reports a thrown error the way Lambda does', async () => {
    const result = await runtime('functions.fail').invoke({});
    expect(result).toMatchObject({
      ok: false,
      error: { errorType: 'PaymentDeclinedError', errorMessage: 'card declined' },
    });
    if (!result.ok) expect(result.error.trace?.[0]).toContain('card declined');
  });

  it('reuses a warm container, and gives concurrent invocations containers of their own', async () => {
    const fn = runtime('functions.hold');
    const [first, second] = await Promise.all([fn.invoke({ ms: 200 }), fn.invoke({ ms: 200 })]);
    expect(first).toMatchObject({ ok: true, result: { invocationsInThisContainer: 1 } });
    expect(second).toMatchObject({ ok: true, result: { invocationsInThisContainer: 1 } });
    expect(await fn.invoke({ ms: 0 })).toMatchObject({ ok: true, result: { invocationsInThisContainer: 2 } });
  });

  it('kills an invocation past its timeout and carries on with a fresh container', async () => {
    const fn = runtime('functions.hold', { timeoutSeconds: 0.3 });
    expect(await fn.invoke({ ms: 5_000 }, 'request-1')).toEqual({
      ok: false,
      error: {
        errorType: 'Sandbox.Timedout',
        errorMessage: 'RequestId: request-1 Error: Task timed out after 0.30 seconds',
      },
    });
    expect(await fn.invoke({ ms: 0 })).toMatchObject({ ok: true, result: { invocationsInThisContainer: 1 } });
  });

  it.each([
    ['functions.missing', 'Runtime.HandlerNotFound', 'functions.missing is undefined or not exported'],
    ['functions.notAFunction', 'Runtime.HandlerNotFound', 'functions.notAFunction is not a function'],
    ['no-such-module.handler', 'Runtime.ImportModuleError', "Error: Cannot find module 'no-such-module'"],
    ['index', 'Runtime.MalformedHandlerName', 'Bad handler index'],
    [
      'missing-dependency.handler',
      'Runtime.ImportModuleError',
      expect.stringMatching(/^Error \[ERR_MODULE_NOT_FOUND\]: Cannot find package 'left-out-of-the-bundle'/),
    ],
  ])(
    'answers handler %s, which cannot be loaded, with Lambda’s init error %s',
    async (handler, errorType, errorMessage) => {
      expect(await runtime(handler).invoke({})).toMatchObject({
        ok: false,
        error: { errorType, errorMessage },
      });
    },
  );

  it('fails an invocation whose handler module fails to load with its error, and tries again next time', async () => {
    const broken = runtime('broken.handler');
    for (const _ of [1, 2]) {
      expect(await broken.invoke({})).toMatchObject({
        ok: false,
        error: { errorType: 'Error', errorMessage: 'the configuration is missing' },
      });
    }
  });
});

describe('local function runtime: what its containers use', () => {
  // Linux's /proc gives each thread's CPU time; elsewhere there is none to count.
  const withProc = existsSync('/proc/thread-self/stat');

  it.runIf(withProc)(
    'counts each function’s own CPU: a busy one shows its work, a waiting one none',
    async () => {
      const busy = runtime('functions.burn');
      const waiting = runtime('functions.hold');
      // Started and warm first: their init's CPU is theirs too, but not what this compares.
      await Promise.all([busy.invoke({ ms: 0 }), waiting.invoke({ ms: 0 })]);
      const [busyBefore, waitingBefore] = [busy.usage(), waiting.usage()];
      expect(busyBefore.cpuMs).toBeGreaterThan(0);
      await Promise.all([busy.invoke({ ms: 400 }), waiting.invoke({ ms: 400 })]);
      const busyCpu = (busy.usage().cpuMs ?? Number.NaN) - (busyBefore.cpuMs ?? Number.NaN);
      const waitingCpu = (waiting.usage().cpuMs ?? Number.NaN) - (waitingBefore.cpuMs ?? Number.NaN);
      // 400 ms of the process's CPU spent spinning, nearly all on its main thread, however busy the
      // machine (which stretches it); 400 ms waiting costs next to nothing.
      expect(busyCpu).toBeGreaterThan(150);
      expect(waitingCpu).toBeLessThan(50);
      expect(busy.usage()).toMatchObject({ invocations: 2, heapUsedBytes: [expect.any(Number)] });
    },
  );

  it('counts each container’s whole process too: its main thread and its other threads', async () => {
    const fn = runtime('functions.burn');
    await fn.invoke({ ms: 0 });
    // Its init at least: a Node.js process does not start in no time.
    const before = fn.processCpuMs();
    expect(before).toBeGreaterThan(0);
    const mainBefore = fn.usage().cpuMs;
    await fn.invoke({ ms: 400 });
    const whole = fn.processCpuMs() - before;
    // 400 ms of its CPU spent spinning, however busy the machine.
    expect(whole).toBeGreaterThan(150);
    // The main thread's share is part of it (read a moment earlier in the container: a little slack).
    const main = fn.usage().cpuMs;
    if (main !== undefined && mainBefore !== undefined) expect(whole).toBeGreaterThan(main - mainBefore - 5);
    await fn.stop();
    expect(fn.processCpuMs()).toBe(before + whole);
  });

  it('reports each running container’s heap, and keeps the CPU of containers that ended', async () => {
    const fn = runtime('functions.hold');
    await Promise.all([fn.invoke({ ms: 100 }), fn.invoke({ ms: 100 })]);
    const { cpuMs, invocations, heapUsedBytes, oldHeapUsedBytes } = fn.usage();
    expect(invocations).toBe(2);
    expect(heapUsedBytes).toHaveLength(2);
    for (const bytes of heapUsedBytes) expect(bytes).toBeGreaterThan(100_000);
    // The old generation is part of the heap, and holds at least the loaded code's objects.
    expect(oldHeapUsedBytes).toHaveLength(2);
    oldHeapUsedBytes.forEach((bytes, i) => {
      expect(bytes).toBeGreaterThan(100_000);
      expect(bytes).toBeLessThanOrEqual(heapUsedBytes[i] as number);
    });
    if (withProc) expect(cpuMs).toBeGreaterThan(0);
    else expect(cpuMs).toBeUndefined();
    await fn.stop();
    expect(fn.usage()).toEqual({ cpuMs, invocations: 2, heapUsedBytes: [], oldHeapUsedBytes: [] });
  });
});

describe('local function runtime: what Lambda’s runtime provides beside the code', () => {
  let assembly: string;
  beforeAll(() => {
    // Outside this repository, so that nothing but the provided modules resolves from it.
    assembly = mkdtempSync(join(tmpdir(), 'oncely-assembly-test-'));
    mkdirSync(join(assembly, 'asset.1'));
    writeFileSync(
      join(assembly, 'asset.1', 'index.mjs'),
      `export const sdk = async () => typeof (await import('@aws-sdk/client-sqs')).SQSClient;
       export const other = async () => (await import('zod')).z !== undefined;\n`,
    );
    copyFileSync(join(FUNCTIONS, 'functions.mjs'), join(assembly, 'asset.1', 'functions.mjs'));
    provideRuntimeModules(assembly, [process.cwd()]);
  });
  afterAll(() => rmSync(assembly, { recursive: true, force: true }));

  it('gives a bundle the AWS SDK its bundler left out, as Lambda’s Node.js runtime does', async () => {
    const fn = runtime('index.sdk', { codeDirectory: join(assembly, 'asset.1') });
    expect(await fn.invoke({})).toEqual({ ok: true, result: 'function' });
  });

  it('gives it no other package: one the bundle left out fails as it would on Lambda', async () => {
    const fn = runtime('index.other', { codeDirectory: join(assembly, 'asset.1') });
    expect(await fn.invoke({})).toMatchObject({
      ok: false,
      error: { errorType: 'Error', errorMessage: expect.stringContaining("Cannot find package 'zod'") },
    });
  });
});

describe('local function runtime: the module format, read as Lambda reads it', () => {
  let project: string;
  /** An asset of the cloud assembly inside a project whose package.json says "type": "module". */
  const asset = (name: string, files: Record<string, string>) => {
    const directory = join(project, 'cdk.out', name);
    mkdirSync(directory, { recursive: true });
    for (const [file, text] of Object.entries(files)) writeFileSync(join(directory, file), text);
    return directory;
  };
  const COMMONJS_HANDLER =
    'exports.handler = async () => ({ require: typeof require, module: typeof module });\n';
  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'oncely-module-format-'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module' }));
  });
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  it('requires an index.js whose asset says "type": "commonjs", in a project of ES modules', async () => {
    const codeDirectory = asset('asset.commonjs', {
      'index.js': COMMONJS_HANDLER,
      'package.json': JSON.stringify({ type: 'commonjs' }),
    });
    expect(await runtime('index.handler', { codeDirectory }).invoke({})).toEqual({
      ok: true,
      result: { require: 'function', module: 'object' },
    });
  });

  it('imports an index.js whose asset says "type": "module", as Lambda does', async () => {
    const codeDirectory = asset('asset.module', {
      'index.js': 'export const handler = async () => ({ module: typeof module });\n',
      'package.json': JSON.stringify({ type: 'module' }),
    });
    expect(await runtime('index.handler', { codeDirectory }).invoke({})).toEqual({
      ok: true,
      result: { module: 'undefined' },
    });
  });

  it('says why an index.js Lambda would require cannot be required here, and what to do', async () => {
    const codeDirectory = asset('asset.unmarked', { 'index.js': COMMONJS_HANDLER });
    const outcome = await runtime('index.handler', { codeDirectory }).invoke({});
    expect(outcome).toMatchObject({
      ok: false,
      error: {
        errorType: 'Runtime.ImportModuleError',
        errorMessage: expect.stringContaining(
          'a package.json above the function\'s code says "type": "module"',
        ),
      },
    });
  });
});

describe('local function runtime: a crashing function', () => {
  const crashing = () => runtime('crashing.crashes');

  it.each([
    [
      'overflows the stack',
      'overflow',
      { errorType: 'RangeError', errorMessage: 'Maximum call stack size exceeded' },
    ],
    [
      'returns what JSON cannot hold',
      'bigint',
      // As nodejs24.x's runtime interface client reports it (nodejs22.x's: function-container.test.ts).
      { errorType: 'Runtime.JSONStringifyError', errorMessage: 'Unable to stringify response body' },
    ],
  ])('that %s gets a function error, as in Lambda, and keeps its container', async (_, how, error) => {
    const fn = crashing();
    expect(await fn.invoke({ how })).toMatchObject({ ok: false, error });
    expect(await fn.invoke({ how: 'count' })).toEqual({
      ok: true,
      result: { invocationsInThisContainer: 2 },
    });
  });

  it.each([
    [
      'exits',
      'exit',
      {
        errorType: 'Runtime.ExitError',
        errorMessage: 'RequestId: request-1 Error: Runtime exited with error: exit status 3',
      },
    ],
    ['throws from a timer', 'timer', { errorType: 'TypeError', errorMessage: 'thrown from a timer' }],
    [
      'leaves a rejection unhandled',
      'rejection',
      { errorType: 'Runtime.UnhandledPromiseRejection', errorMessage: 'RangeError: nobody awaited this' },
    ],
  ])('that %s gets a function error, as in Lambda, and a fresh container after', async (_, how, error) => {
    const fn = crashing();
    expect(await fn.invoke({ how }, 'request-1')).toMatchObject({ ok: false, error });
    expect(await fn.invoke({ how: 'count' })).toEqual({
      ok: true,
      result: { invocationsInThisContainer: 1 },
    });
  });

  it('hands over an event nested thousands of levels deep as its JSON text, as Lambda does', async () => {
    const text = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    // A structured clone of it would overflow: the JSON text goes to the worker, which parses it.
    expect(await crashing().invoke(JSON.parse(text), 'deep-request', text)).toEqual({
      ok: true,
      result: { invocationsInThisContainer: 1 },
    });
  });

  it('returns a result as Lambda does, through JSON: a function in it is left out', async () => {
    expect(await crashing().invoke({ how: 'function' })).toEqual({ ok: true, result: { ok: true } });
  });
});
