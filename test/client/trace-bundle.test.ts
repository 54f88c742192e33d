import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { lambdaBuildOptions } from '../../lib/constructs/bundling.js';

// DESIGN §6: `@opentelemetry/api` is an optional peer. A producer's or a consumer's bundle built
// where it is not installed carries none of it and still runs (no trace context, no spans); built
// where it is, the API goes in. esbuild, as the construct and most producers bundle.

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Outside the project: no node_modules above it, so a bare import there finds nothing. */
const dir = mkdtempSync(join(tmpdir(), 'oncely-trace-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const source = (path: string) => JSON.stringify(join(PROJECT_ROOT, path));
const PRODUCER_ENTRY = `
import { producerTraceContext } from ${source('lambdas/common/trace-capture.ts')};
console.log(JSON.stringify((await producerTraceContext(undefined)) ?? null));
`;
/** What the functions Oncely deploys start spans with: the consumer, the publisher, the relay. */
const FUNCTIONS_ENTRY = `
import { fifoBatch, standardBatch } from ${source('lambdas/consumer/index.ts')};
import { createPublisherHandler } from ${source('lambdas/publisher/handler.ts')};
import { handler as relay } from ${source('lambdas/outbox/relay-handler.ts')};
import { loadTracing } from ${source('lambdas/common/tracing.ts')};
const parts = [fifoBatch, standardBatch, createPublisherHandler, relay].map((part) => typeof part);
console.log(JSON.stringify({ parts, tracing: (await loadTracing()) ?? null }));
`;
/** What the API registers its globals under: in a bundle only if the API's code is. */
const API_CODE = 'opentelemetry.js.api';

/**
 * Bundles `entryCode` as a producer might (plain esbuild), or for Oncely's functions as the
 * construct does (`lambdaBuildOptions`), with or without the API installed.
 */
async function bundle(
  name: string,
  withoutApi: boolean,
  entryCode = PRODUCER_ENTRY,
  asDeployed = false,
): Promise<string> {
  const entry = join(dir, `${name}-entry.mjs`);
  writeFileSync(entry, entryCode);
  const outdir = join(dir, name);
  const deployed = lambdaBuildOptions({ projectRoot: PROJECT_ROOT, entry, outdir });
  const outfile = asDeployed ? String(deployed.outfile) : join(dir, `${name}.mjs`);
  await build({
    ...(asDeployed ? deployed : { entryPoints: [entry], bundle: true, platform: 'node', format: 'esm' }),
    outfile,
    logLevel: 'silent',
    nodePaths: [join(PROJECT_ROOT, 'node_modules')],
    plugins: withoutApi
      ? [
          {
            // As if the package were not installed: esbuild then keeps the import() unresolved.
            name: 'no-opentelemetry',
            setup: (plugin) =>
              plugin.onResolve({ filter: /^@opentelemetry\/api$/ }, () => ({ external: true })),
          },
        ]
      : [],
  });
  return outfile;
}

describe('a bundle of the producer side', () => {
  it('built without @opentelemetry/api carries none of it, and runs without it: no context', async () => {
    const outfile = await bundle('without', true);
    const code = readFileSync(outfile, 'utf8');
    expect(code).toContain('import("@opentelemetry/api")');
    expect(code).not.toContain(API_CODE);
    const env = { ...process.env, _X_AMZN_TRACE_ID: '' };
    expect(execFileSync(process.execPath, [outfile], { cwd: dir, env, encoding: 'utf8' }).trim()).toBe(
      'null',
    );
  });

  it('built with it installed carries the API', async () => {
    const code = readFileSync(await bundle('with', false), 'utf8');
    expect(code).toContain(API_CODE);
  });
});

describe("a bundle of Oncely's functions, as the construct builds it", () => {
  it('built without @opentelemetry/api carries none of it, and runs without it: no tracing', async () => {
    const outfile = await bundle('functions-without', true, FUNCTIONS_ENTRY, true);
    const code = readFileSync(outfile, 'utf8');
    // One place loads it, for the spans and the producer's context alike.
    expect(code.split('import("@opentelemetry/api")')).toHaveLength(2);
    expect(code).not.toContain(API_CODE);
    const printed = execFileSync(process.execPath, [outfile], { cwd: dir, encoding: 'utf8' }).trim();
    expect(JSON.parse(printed)).toEqual({
      parts: ['function', 'function', 'function', 'function'],
      tracing: null,
    });
  });

  it('built with it installed carries the API', async () => {
    const code = readFileSync(await bundle('functions-with', false, FUNCTIONS_ENTRY, true), 'utf8');
    expect(code).toContain(API_CODE);
  });
});
