import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalFunctionRuntime, type LocalFunctionSpec } from '../../src/sandbox/function-runtime.js';

const runtimes: LocalFunctionRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop()));
});

/** A handler that fails, on demand, each way a Lambda function can, and counts its container's invocations. */
const CRASHING_HANDLER = `
let invocations = 0;
const forever = () => new Promise(() => undefined);
export const crashes = async (event: { how: string }) => {
  invocations++;
  switch (event.how) {
    case 'overflow': {
      const deeper = (n: number): number => deeper(n + 1) + 1;
      return deeper(0);
    }
    case 'bigint':
      return { total: 10n };
    case 'function':
      return { ok: true, callback: () => 1 };
    case 'exit':
      process.exit(3);
    case 'timer':
      setTimeout(() => { throw new TypeError('thrown from a timer'); }, 1);
      return forever();
    case 'rejection':
      void Promise.reject(new RangeError('nobody awaited this'));
      return forever();
    default:
      return { invocationsInThisContainer: invocations };
  }
};
`;

/** Written out at run time: the worker threads load handler modules from files. */
let crashingRoot: string;
beforeAll(() => {
  crashingRoot = mkdtempSync(join(tmpdir(), 'oncely-functions-'));
  writeFileSync(join(crashingRoot, 'crashing.ts'), CRASHING_HANDLER);
  writeFileSync(
    join(crashingRoot, 'broken.ts'),
    "throw new Error('the configuration is missing');\nexport const handler = async () => 'never';\n",
  );
});
afterAll(() => rmSync(crashingRoot, { recursive: true, force: true }));

function crashing(entry: string, exportName: string) {
  const created = new LocalFunctionRuntime(
    {
      name: `fn-${exportName}`,
      arn: `arn:aws:lambda:us-east-1:123456789012:function:fn-${exportName}`,
      entry,
      exportName,
      timeoutSeconds: 5,
      environment: {},
    },
    crashingRoot,
  );
  runtimes.push(created);
  return created;
}

function runtime(exportName: string, overrides: Partial<LocalFunctionSpec> = {}) {
  const created = new LocalFunctionRuntime(
    {
      name: `fn-${exportName}`,
      arn: `arn:aws:lambda:us-east-1:123456789012:function:fn-${exportName}`,
      entry: 'test/fixtures/functions.ts',
      exportName,
      timeoutSeconds: 5,
      environment: {},
      ...overrides,
    },
    process.cwd(),
  );
  runtimes.push(created);
  return created;
}

describe('local function runtime', () => {
  it('runs the TypeScript handler with its own environment and a Lambda-like context', async () => {
    const english = runtime('echo', { environment: { GREETING: 'hello' } });
    const french = runtime('echo', { name: 'fn-french', environment: { GREETING: 'bonjour' } });
    const [a, b] = await Promise.all([english.invoke({ n: 1 }), french.invoke({ n: 2 })]);
    expect(a).toMatchObject({
      ok: true,
      result: { event: { n: 1 }, greeting: 'hello', functionName: 'fn-echo' },
    });
    expect(b).toMatchObject({ ok: true, result: { greeting: 'bonjour', functionName: 'fn-french' } });
    const remaining = (a as { result: { remainingMs: number } }).result.remainingMs;
    expect(remaining).toBeGreaterThan(0);
    expect(remaining).toBeLessThanOrEqual(5_000);
    expect(process.env.GREETING).toBeUndefined();
  });

  it('hands each line the function writes to the output callback, when there is one', async () => {
    const lines: string[] = [];
    const fn = new LocalFunctionRuntime(
      {
        name: 'fn-logs',
        arn: 'arn:aws:lambda:us-east-1:123456789012:function:fn-logs',
        entry: 'test/fixtures/functions.ts',
        exportName: 'logs',
        timeoutSeconds: 5,
        environment: {},
      },
      process.cwd(),
      (line, functionName) => lines.push(`${functionName}: ${line}`),
    );
    runtimes.push(fn);
    await fn.invoke({ message: 'hello' });
    // stdout and stderr are two streams: their lines may arrive in either order.
    await expect
      .poll(() => [...lines].sort())
      .toEqual(['fn-logs: to stderr', 'fn-logs: {"level":"INFO","message":"hello"}']);
  });

  it('reports a thrown error the way Lambda does', async () => {
    const result = await runtime('fail').invoke({});
    expect(result).toMatchObject({
      ok: false,
      error: { errorType: 'PaymentDeclinedError', errorMessage: 'card declined' },
    });
    if (!result.ok) expect(result.error.trace?.[0]).toContain('card declined');
  });

  it('reuses a warm container, and gives concurrent invocations containers of their own', async () => {
    const fn = runtime('hold');
    const [first, second] = await Promise.all([fn.invoke({ ms: 200 }), fn.invoke({ ms: 200 })]);
    expect(first).toMatchObject({ ok: true, result: { invocationsInThisContainer: 1 } });
    expect(second).toMatchObject({ ok: true, result: { invocationsInThisContainer: 1 } });
    expect(await fn.invoke({ ms: 0 })).toMatchObject({ ok: true, result: { invocationsInThisContainer: 2 } });
  });

  it('kills an invocation past its timeout and carries on with a fresh container', async () => {
    const fn = runtime('hold', { timeoutSeconds: 0.3 });
    expect(await fn.invoke({ ms: 5_000 }, 'request-1')).toEqual({
      ok: false,
      error: {
        errorType: 'Sandbox.Timedout',
        errorMessage: 'RequestId: request-1 Error: Task timed out after 0.30 seconds',
      },
    });
    expect(await fn.invoke({ ms: 0 })).toMatchObject({ ok: true, result: { invocationsInThisContainer: 1 } });
  });

  it('answers a handler that cannot be loaded with the init error Lambda reports, and tries again next time', async () => {
    expect(await runtime('missing').invoke({})).toEqual({
      ok: false,
      error: {
        errorType: 'Runtime.HandlerNotFound',
        errorMessage: expect.stringMatching(/functions\.ts does not export a function named "missing"$/),
        trace: [],
      },
    });
    expect(await runtime('echo', { entry: 'test/fixtures/no-such-module.ts' }).invoke({})).toMatchObject({
      ok: false,
      error: {
        errorType: 'Runtime.ImportModuleError',
        errorMessage: expect.stringContaining('Cannot find module'),
      },
    });
    const broken = crashing('broken.ts', 'handler');
    for (const _ of [1, 2]) {
      expect(await broken.invoke({})).toMatchObject({
        ok: false,
        error: { errorType: 'Error', errorMessage: 'the configuration is missing' },
      });
    }
  });
});

describe('local function runtime: a crashing function', () => {
  it.each([
    [
      'overflows the stack',
      'overflow',
      { errorType: 'RangeError', errorMessage: 'Maximum call stack size exceeded' },
    ],
    [
      'returns what JSON cannot hold',
      'bigint',
      {
        errorType: 'Error',
        errorMessage: 'Unable to stringify response body: Do not know how to serialize a BigInt',
      },
    ],
  ])('that %s gets a function error, as in Lambda, and keeps its container', async (_, how, error) => {
    const fn = crashing('crashing.ts', 'crashes');
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
    const fn = crashing('crashing.ts', 'crashes');
    expect(await fn.invoke({ how }, 'request-1')).toMatchObject({ ok: false, error });
    expect(await fn.invoke({ how: 'count' })).toEqual({
      ok: true,
      result: { invocationsInThisContainer: 1 },
    });
  });

  it('hands over an event nested thousands of levels deep as its JSON text, as Lambda does', async () => {
    const fn = crashing('crashing.ts', 'crashes');
    const text = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    // A structured clone of it would overflow: the JSON text goes to the worker, which parses it.
    expect(await fn.invoke(JSON.parse(text), 'deep-request', text)).toEqual({
      ok: true,
      result: { invocationsInThisContainer: 1 },
    });
  });

  it('returns a result as Lambda does, through JSON: a function in it is left out', async () => {
    expect(await crashing('crashing.ts', 'crashes').invoke({ how: 'function' })).toEqual({
      ok: true,
      result: { ok: true },
    });
  });
});
