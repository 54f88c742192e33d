import { afterEach, describe, expect, it } from 'vitest';
import { LocalFunctionRuntime, type LocalFunctionSpec } from '../../sandbox/function-runtime';

const runtimes: LocalFunctionRuntime[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((runtime) => runtime.stop()));
});

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

  it('explains a handler that cannot be loaded', async () => {
    await expect(runtime('missing').invoke({})).rejects.toThrow(
      /failed to initialise.*does not export a function named "missing"/,
    );
  });
});
