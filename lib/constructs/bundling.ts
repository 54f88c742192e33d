import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type BundlingOptions, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import type { BuildOptions } from 'esbuild';

/** The options of {@link LAMBDA_BUNDLING}: every one set, so nothing falls back to a NodejsFunction default. */
export type LambdaBundling = Required<
  Pick<
    BundlingOptions,
    | 'minify'
    | 'keepNames'
    | 'sourceMap'
    | 'format'
    | 'target'
    | 'mainFields'
    | 'externalModules'
    | 'commandHooks'
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
  // CommonJS, so that the bundle loads the AWS SDK the runtime provides with `require()`. The SDK's
  // packages are CommonJS whichever way they are loaded (they have no `exports` map: `import` and
  // `require` give the same module objects), but an ES module's `import` of them costs Node a
  // static analysis of each package's entry file: about 50 ms more CPU at every cold start for the
  // DynamoDB client alone (`bench/RESULTS.md`, module start-up). A handler that needs top-level
  // `await` can still choose `OutputFormat.ESM` through the construct's `bundling` option.
  format: OutputFormat.CJS,
  target: 'node24',
  mainFields: ['module', 'main'],
  // What NodejsFunction leaves out by default on a Node ≥ 18 runtime, which provides the AWS SDK v3
  // (`@smithy/*` too only with the `@aws-cdk/aws-lambda-nodejs:sdkV3ExcludeSmithyPackages` feature
  // flag, which this app does not set). Stated here so that the bundle cannot change with the flag
  // and the reproductions need not guess.
  externalModules: ['@aws-sdk/*'],
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => [writeAssetPackageJsonCommand(join(outputDir, 'package.json'))],
  },
};

/**
 * What the asset's `package.json` says, beside the bundle: that `index.js` is CommonJS wherever the
 * asset sits. Lambda would read it so anyway (nothing above `/var/task` says otherwise), but the
 * sandbox runs the asset inside the cloud assembly, inside your project, and a `"type": "module"`
 * there would make Node read the bundle as an ES module.
 */
export const LAMBDA_ASSET_PACKAGE_JSON = { type: 'commonjs' } as const;

/**
 * The shell command (bash or cmd: no quoting beyond one pair of double quotes) that sets
 * {@link LAMBDA_ASSET_PACKAGE_JSON}'s `type` in the asset's `package.json`, keeping what
 * NodejsFunction may have written there before (its `nodeModules` option writes dependencies).
 */
function writeAssetPackageJsonCommand(file: string): string {
  const script = [
    "const fs = require('node:fs'), file = process.argv[1]; let json = {};",
    "try { json = JSON.parse(fs.readFileSync(file, 'utf8')) } catch {}",
    `json.type = '${LAMBDA_ASSET_PACKAGE_JSON.type}'; fs.writeFileSync(file, JSON.stringify(json));`,
  ].join(' ');
  return `node -e "${script}" "${file}"`;
}

/**
 * Writes the asset's `package.json` into `outdir`, as {@link LAMBDA_BUNDLING}'s `afterBundling`
 * hook writes it: for whatever reproduces an asset with {@link lambdaBuildOptions} on disk.
 */
export async function writeLambdaAssetPackageJson(outdir: string): Promise<void> {
  await writeFile(join(outdir, 'package.json'), JSON.stringify(LAMBDA_ASSET_PACKAGE_JSON));
}

/** The file NodejsFunction writes in the asset (`index.js` for CommonJS, `index.mjs` for ESM), which Lambda loads as `index.handler`. */
export function lambdaBundleFile(bundling: LambdaBundling = LAMBDA_BUNDLING): string {
  return bundling.format === OutputFormat.ESM ? 'index.mjs' : 'index.js';
}

export interface LambdaBuildTarget {
  /** The directory NodejsFunction bundles from: the project root, where its lock file is. */
  projectRoot: string;
  /** The handler's module, relative to `projectRoot` (e.g. `lambdas/shop/consumer/handler.ts`). */
  entry: string;
  /** Where the bundle goes (relative to `projectRoot`, or absolute); its file is {@link lambdaBundleFile}. */
  outdir: string;
}

/**
 * esbuild's options for bundling `entry` exactly as NodejsFunction does with `bundling`: its
 * `esbuild --bundle <entry> --platform=node …` command with the same flags, run from the project
 * root (byte for byte: the assets of `npm run synth` are these builds' `index.js`, and the asset's `package.json` is
 * {@link writeLambdaAssetPackageJson}'s). Add what does
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
  };
}
