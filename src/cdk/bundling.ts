import { join } from 'node:path';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/** The options of {@link LAMBDA_BUNDLING}: every one set, so nothing falls back to a NodejsFunction default. */
export type LambdaBundling = Required<
  Pick<
    BundlingOptions,
    'minify' | 'keepNames' | 'sourceMap' | 'format' | 'target' | 'mainFields' | 'externalModules' | 'banner'
  >
>;

/**
 * How Oncely bundles a Lambda: the one definition that `OncelyPipeline` gives NodejsFunction and
 * that everything reproducing the deployed bytes (the bundle-size benchmark, the bundled-consumer
 * test) turns into esbuild options with {@link lambdaBuildOptions}. Change it here, never there.
 *
 * The target and the externals are those of the functions' runtime, `Runtime.NODEJS_24_X`.
 */
export const LAMBDA_BUNDLING: LambdaBundling = {
  minify: true,
  // Minifying renames classes, and an error's name is what idempotency records, DLQ attributes and
  // logs show: Oncely's own errors fix theirs in a static `errorName`, but a user's subclass of
  // NonRetryableError without one is named after its class (`new.target.name`), which only
  // survives minification if esbuild keeps names. Without this, a REJECTED record would say `e`.
  keepNames: true,
  sourceMap: true,
  format: OutputFormat.ESM,
  target: 'node24',
  mainFields: ['module', 'main'],
  // What NodejsFunction leaves out by default on a Node ≥ 18 runtime, which provides the AWS SDK v3
  // (`@smithy/*` too only with the `@aws-cdk/aws-lambda-nodejs:sdkV3ExcludeSmithyPackages` feature
  // flag, which this app does not set). Stated here so that the bundle cannot change with the flag
  // and the reproductions need not guess.
  externalModules: ['@aws-sdk/*'],
  // Some dependencies still `require()` Node built-ins; ESM bundles need a require of their own.
  banner: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);",
};

/** The file NodejsFunction writes in the asset (`index.mjs` for ESM), which Lambda loads as `index.handler`. */
export function lambdaBundleFile(bundling: LambdaBundling = LAMBDA_BUNDLING): string {
  return bundling.format === OutputFormat.ESM ? 'index.mjs' : 'index.js';
}

export interface LambdaBuildTarget {
  /** The directory NodejsFunction bundles from: the project root, where its lock file is. */
  projectRoot: string;
  /** The handler's module, relative to `projectRoot` (e.g. `examples/shop/consumer/handler.ts`). */
  entry: string;
  /** Where the bundle goes (relative to `projectRoot`, or absolute); its file is {@link lambdaBundleFile}. */
  outdir: string;
}

/**
 * esbuild's options for bundling `entry` exactly as NodejsFunction does with `bundling`: its
 * `esbuild --bundle <entry> --platform=node …` command with the same flags, run from the project
 * root (byte for byte: the assets of `npm run synth` are these builds' `index.mjs`). Add what does
 * not change the code (`write`, `metafile`, `logLevel`); a plugin does, like the benchmark's.
 */
export function lambdaBuildOptions(
  { projectRoot, entry, outdir }: LambdaBuildTarget,
  bundling: LambdaBundling = LAMBDA_BUNDLING,
): BuildOptions {
  return {
    absWorkingDir: projectRoot,
    entryPoints: [entry],
    outfile: join(outdir, lambdaBundleFile(bundling)),
    bundle: true,
    platform: 'node',
    target: bundling.target,
    format: bundling.format === OutputFormat.ESM ? 'esm' : 'cjs',
    minify: bundling.minify,
    keepNames: bundling.keepNames,
    sourcemap: bundling.sourceMap,
    external: bundling.externalModules,
    mainFields: bundling.mainFields,
    ...(bundling.banner ? { banner: { js: bundling.banner } } : {}),
  };
}
