import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';

// DESIGN §6: `@opentelemetry/api` is an optional peer. A producer's bundle built where it is not
// installed carries none of it and still publishes (no trace context); built where it is, the
// API goes in. esbuild, as the construct and most producers bundle.

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Outside the project: no node_modules above it, so a bare import there finds nothing. */
const dir = mkdtempSync(join(tmpdir(), 'oncely-trace-bundle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENTRY = `
import { producerTraceContext } from ${JSON.stringify(join(PROJECT_ROOT, 'lambdas/common/trace-capture.ts'))};
console.log(JSON.stringify((await producerTraceContext(undefined)) ?? null));
`;
/** What the API registers its globals under: in a bundle only if the API's code is. */
const API_CODE = 'opentelemetry.js.api';

async function bundle(name: string, withoutApi: boolean): Promise<string> {
  const entry = join(dir, `${name}-entry.mjs`);
  writeFileSync(entry, ENTRY);
  const outfile = join(dir, `${name}.mjs`);
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
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
