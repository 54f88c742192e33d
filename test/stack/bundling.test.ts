import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, type CfnElement, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, OutputFormat, SourceMapMode } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { CloudAssembly } from 'aws-cdk-lib/cx-api';
import { build, transform } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LAMBDA_BUNDLING,
  lambdaBuildOptions,
  lambdaBundleFile,
  lambdaBundling,
  oncelyBundling,
} from '../../lib/constructs/bundling.js';
import { OncelyPipeline } from '../../lib/constructs/oncely-pipeline.js';
import { CdkSynthError, synthesizeApp } from '../../sandbox/synthesize.js';

// Issue 20: the construct's bundling with real CDK and real esbuild (NodejsFunction's local
// bundling), unlike the other stack tests, which synthesise without bundling. Each bundling synth
// takes a second or more: the synths are shared where they can be.

const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Consumers relative to the project root: one reads `import.meta.url`, the other awaits at its top. */
const IMPORT_META_CONSUMER = 'test/fixtures/import-meta-consumer.ts';
const TOP_LEVEL_AWAIT_CONSUMER = 'test/fixtures/top-level-await-consumer.ts';
/** A CDK app of one NodejsFunction bundled with `oncelyBundling`, synthesised in a process of its own. */
const FORMAT_APP = join(PROJECT_ROOT, 'test/fixtures/apps/bundling-format');

/** One output directory for every app of the file, so that CDK bundles the same asset once. */
let outdir: string;
let assembly: CloudAssembly;
/** The pipelines synthesised in beforeAll, by stack: with the defaults, and with `sourceMap: true`. */
const pipelines: Record<string, { stack: Stack; pipeline: OncelyPipeline }> = {};

/** An app that bundles (the default), with its template's asset metadata as `cdk synth` gives it. */
const bundlingApp = () => new App({ outdir, context: { 'aws:cdk:enable-asset-metadata': true } });

beforeAll(() => {
  outdir = mkdtempSync(join(tmpdir(), 'oncely-bundling-'));
  const app = bundlingApp();
  const variants: [string, BundlingOptions | undefined][] = [
    ['Default', undefined],
    ['SourceMaps', { sourceMap: true }],
  ];
  for (const [name, bundling] of variants) {
    const stack = new Stack(app, name);
    const pipeline = new OncelyPipeline(stack, 'Pipeline', {
      consumer: { entry: join(PROJECT_ROOT, IMPORT_META_CONSUMER), bundling },
    });
    pipelines[name] = { stack, pipeline };
  }
  assembly = app.synth();
}, 240_000);

afterAll(() => {
  if (outdir) rmSync(outdir, { recursive: true, force: true });
});

/** A function of a synthesised stack: its asset's directory in the assembly and its environment. */
function synthesised(stackName: string, fn: IFunction) {
  const { stack } = pipelines[stackName];
  const resource =
    assembly.getStackByName(stackName).template.Resources[
      stack.getLogicalId(fn.node.defaultChild as CfnElement)
    ];
  return {
    directory: join(assembly.directory, resource.Metadata['aws:asset:path']),
    environment: (resource.Properties.Environment?.Variables ?? {}) as Record<string, unknown>,
  };
}

const consumerOf = (stackName: string) => synthesised(stackName, pipelines[stackName].pipeline.consumer);

/** Equal bytes, compared by size and digest: a failure's diff stays readable. */
const fingerprint = (bytes: Buffer) => ({
  bytes: bytes.length,
  sha256: createHash('sha256').update(bytes).digest('hex'),
});

/** The 1-based line of `file` (relative to the project root) that first contains `text`. */
function lineOf(file: string, text: string): number {
  const line = readFileSync(join(PROJECT_ROOT, file), 'utf8')
    .split('\n')
    .findIndex((l) => l.includes(text));
  if (line < 0) throw new Error(`${file} has no line with ${text}`);
  return line + 1;
}

/** Synthesises FORMAT_APP as `oncely local` does (stderr kept), expecting it to fail; its message. */
async function failedSynthMessage(entry: string, format: 'esm' | 'cjs'): Promise<string> {
  const outcome = await synthesizeApp({
    appDirectory: FORMAT_APP,
    context: { 'oncely-test:entry': entry, 'oncely-test:format': format },
  }).then(
    (synthesisedApp) => {
      synthesisedApp.remove();
      return undefined;
    },
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(CdkSynthError);
  return (outcome as CdkSynthError).message;
}

describe('the asset NodejsFunction writes', () => {
  it.each([
    ['Default', {}],
    ['SourceMaps', { sourceMap: true }],
  ])(
    'is, for the %s consumer, byte for byte esbuild’s build of lambdaBuildOptions',
    async (stackName, yours) => {
      const built = join(outdir, `esbuild-${stackName}`);
      await build({
        ...lambdaBuildOptions(
          { projectRoot: PROJECT_ROOT, entry: IMPORT_META_CONSUMER, outdir: built },
          lambdaBundling(yours),
        ),
        logLevel: 'silent',
      });
      const file = lambdaBundleFile();
      expect(fingerprint(readFileSync(join(built, file)))).toEqual(
        fingerprint(readFileSync(join(consumerOf(stackName).directory, file))),
      );
    },
  );
});

describe('a consumer that reads import.meta', () => {
  it('synthesises by default: an ES module that keeps import.meta.url, after the require banner', () => {
    const { directory } = consumerOf('Default');
    expect(readdirSync(directory)).toContain('index.mjs');
    const code = readFileSync(join(directory, 'index.mjs'), 'utf8');
    expect(code.startsWith(`${lambdaBundling().banner}\n`)).toBe(true);
    expect(code).toContain('import.meta.url');
  });

  it('fails the synth as CommonJS (`bundling: { format: OutputFormat.CJS }`), naming its file', () => {
    const stack = new Stack(bundlingApp(), 'CommonJs');
    const entry = join(PROJECT_ROOT, IMPORT_META_CONSUMER);
    expect(
      () =>
        new OncelyPipeline(stack, 'Pipeline', {
          consumer: { entry, bundling: { format: OutputFormat.CJS } },
        }),
    ).toThrow(entry);
  });

  it('tells the synth’s user, as CommonJS, its file and line and to bundle as "esm"', async () => {
    const message = await failedSynthMessage(IMPORT_META_CONSUMER, 'cjs');
    expect(message).toContain(
      `${IMPORT_META_CONSUMER}:${lineOf(IMPORT_META_CONSUMER, "new URL('.', import.meta.url)")}:`,
    );
    expect(message).toContain('You need to set the output format to "esm"');
  });
});

describe('a consumer that awaits at its top', () => {
  it('fails the synth as CommonJS, naming its file and line and the "cjs" format', async () => {
    const message = await failedSynthMessage(TOP_LEVEL_AWAIT_CONSUMER, 'cjs');
    expect(message).toContain(
      `${TOP_LEVEL_AWAIT_CONSUMER}:${lineOf(TOP_LEVEL_AWAIT_CONSUMER, 'await readFile')}:`,
    );
    expect(message).toContain('Top-level await is currently not supported with the "cjs" output format');
  });
});

describe('lambdaBundling', () => {
  /** How many times `banner` declares `require`. */
  const requireDeclarations = (banner: string) =>
    banner.match(/\b(?:const|let|var)\s+require\b/g)?.length ?? 0;

  it('gives one require banner to options that spread LAMBDA_BUNDLING, and keeps a banner of yours after it', async () => {
    const spread = lambdaBundling({ ...LAMBDA_BUNDLING });
    expect(spread).toEqual(lambdaBundling());
    expect(requireDeclarations(spread.banner)).toBe(1);
    expect(requireDeclarations(String(oncelyBundling({ ...LAMBDA_BUNDLING }).banner))).toBe(1);

    const yours = lambdaBundling({ ...LAMBDA_BUNDLING, banner: '/* yours */' });
    expect(yours.banner).toBe(`${lambdaBundling().banner}\n/* yours */`);
    expect(requireDeclarations(yours.banner)).toBe(1);
    // A second `const require` would be a SyntaxError when the function loads: esbuild refuses it too.
    await expect(transform(yours.banner, { format: 'esm', logLevel: 'silent' })).resolves.toBeDefined();
  });

  it.each([
    [
      'the usual ESM banner, which makes its own require',
      "import { createRequire } from 'module';const require = createRequire(import.meta.url);",
    ],
    [
      'a banner of yours given back by oncelyBundling()',
      String(oncelyBundling({ banner: '/* mine */' }).banner),
    ],
  ])('declares require once with %s', async (_, banner) => {
    const resolved = lambdaBundling({ banner });
    expect(requireDeclarations(resolved.banner)).toBe(1);
    await expect(transform(resolved.banner, { format: 'esm', logLevel: 'silent' })).resolves.toBeDefined();
  });

  it.each([
    ['your own options', { format: OutputFormat.CJS, minify: false }],
    ['LAMBDA_BUNDLING spread into yours', { ...LAMBDA_BUNDLING, format: OutputFormat.CJS }],
  ])('gives CommonJS (%s) no ES module banner or define, and makes import.meta an error', (_, options) => {
    const resolved = lambdaBundling(options);
    expect(resolved).toMatchObject({ format: OutputFormat.CJS, banner: '', define: {} });
    expect(resolved.logOverride).toEqual({ 'empty-import-meta': 'error' });
    expect(JSON.stringify(resolved)).not.toContain('import.meta');
    expect(lambdaBundleFile(resolved)).toBe('index.js');

    const forNodejsFunction = oncelyBundling(options);
    expect(forNodejsFunction).not.toHaveProperty('banner');
    expect(forNodejsFunction).not.toHaveProperty('define');
    expect(forNodejsFunction.esbuildArgs).toEqual({ '--log-override:empty-import-meta': 'error' });
  });
});

describe('source maps', () => {
  it('are asked for by a source map mode alone, and add their flag to your NODE_OPTIONS', () => {
    expect(lambdaBundling({ sourceMapMode: SourceMapMode.INLINE })).toMatchObject({ sourceMap: true });
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Flags');
    new OncelyPipeline(stack, 'Pipeline', {
      consumer: {
        entry: IMPORT_META_CONSUMER,
        bundling: { sourceMap: true },
        environment: { NODE_OPTIONS: '--max-old-space-size=256' },
      },
    });
    const variables = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function')).map(
      (fn) => fn.Properties.Environment?.Variables?.NODE_OPTIONS,
    );
    expect(variables).toContain('--max-old-space-size=256 --enable-source-maps');
  });

  it('are off by default: no map in any asset, no NODE_OPTIONS on any function', () => {
    const { pipeline } = pipelines.Default;
    for (const fn of [pipeline.publisher, pipeline.consumer, pipeline.unresolvedMonitor]) {
      const { directory, environment } = synthesised('Default', fn);
      expect(readdirSync(directory).sort()).toEqual(['index.mjs', 'package.json']);
      expect(environment).not.toHaveProperty('NODE_OPTIONS');
    }
  });

  it('with sourceMap: true, give the asset index.mjs.map without the sources’ text, and the function --enable-source-maps', () => {
    const { directory, environment } = consumerOf('SourceMaps');
    expect(readdirSync(directory).sort()).toEqual(['index.mjs', 'index.mjs.map', 'package.json']);
    const map = JSON.parse(readFileSync(join(directory, 'index.mjs.map'), 'utf8')) as { sources: string[] };
    expect(map).not.toHaveProperty('sourcesContent');
    expect(map.sources.some((source) => source.endsWith(IMPORT_META_CONSUMER))).toBe(true);
    expect(readFileSync(join(directory, 'index.mjs'), 'utf8').trimEnd()).toMatch(
      /\/\/# sourceMappingURL=index\.mjs\.map$/,
    );
    expect(environment.NODE_OPTIONS).toBe('--enable-source-maps');
    // Only the function that asked for it: the pipeline's own stay without.
    expect(synthesised('SourceMaps', pipelines.SourceMaps.pipeline.publisher).environment).not.toHaveProperty(
      'NODE_OPTIONS',
    );
  });
});
