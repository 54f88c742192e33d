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
    | 'sourcesContent'
    | 'format'
    | 'target'
    | 'mainFields'
    | 'externalModules'
    | 'banner'
    | 'define'
    | 'commandHooks'
  >
>;

/**
 * What an ES module bundle needs of CommonJS inside it: bundled CommonJS packages (some of the
 * SDK's dependencies among them) call `require` for Node's built-in modules, which an ES module
 * does not define, and may read `__dirname` and `__filename`. esbuild renames any `require` of your
 * own code, so the banner's cannot clash; the two paths become `import.meta`'s, which Node ≥ 20.11
 * provides, where your code does not declare its own.
 */
const ESM_REQUIRE_BANNER =
  "import { createRequire as __oncelyCreateRequire } from 'node:module'; const require = __oncelyCreateRequire(import.meta.url);";
const ESM_COMMONJS_PATHS = { __dirname: 'import.meta.dirname', __filename: 'import.meta.filename' };

/**
 * How Oncely bundles a Lambda: the one definition that `OncelyPipeline` gives NodejsFunction (with
 * `lambdaBundling`) and that everything reproducing the deployed bytes (the benchmarks, the
 * bundled-consumer tests) turns into esbuild options with `lambdaBuildOptions`. Change it
 * here, never there.
 *
 * The target is that of the functions' runtime, `Runtime.NODEJS_24_X`. The choices of format, SDK
 * and source maps come from the start-up benchmark (`bench/RESULTS.md`, module start-up), which
 * measures each way for Oncely's Lambdas and Powertools' alike.
 */
export const LAMBDA_BUNDLING: LambdaBundling = {
  minify: true,
  // Minifying renames classes, and an error's name is what idempotency records, DLQ attributes and
  // logs show: Oncely's own errors fix theirs in a static `errorName`, but a user's subclass of
  // NonRetryableError without one is named after its class (`new.target.name`), which only
  // survives minification if esbuild keeps names. Without this, a REJECTED record would say `e`.
  keepNames: true,
  // Off: with `--enable-source-maps` Node reads and decodes a bundle's whole map when it loads it,
  // which costs more at every cold start than the rest of Oncely's code (measured in the start-up
  // benchmark). Turn it on with `bundling: { sourceMap: true }`: the function then also gets
  // `NODE_OPTIONS=--enable-source-maps`, and the map leaves the sources' text out (below).
  sourceMap: false,
  sourcesContent: false,
  // An ES module, which is what a TypeScript project writes: `import.meta` and top-level `await`
  // keep their meaning (a CommonJS bundle empties `import.meta` and cannot await at its top).
  format: OutputFormat.ESM,
  target: 'node24',
  mainFields: ['module', 'main'],
  // The AWS SDK is bundled, tree-shaken, at the versions your lock file pins, instead of the
  // runtime's: an ES module's `import` of the runtime's SDK (CommonJS) makes Node analyse each
  // package's entry file first, and a bundled client loads faster than the runtime's even from
  // CommonJS (measured). Nothing is left out, so the bundle is the same whatever the runtime's SDK
  // version or the `@aws-cdk/aws-lambda-nodejs:sdkV3ExcludeSmithyPackages` feature flag.
  externalModules: [],
  banner: ESM_REQUIRE_BANNER,
  define: ESM_COMMONJS_PATHS,
  commandHooks: {
    beforeBundling: () => [],
    beforeInstall: () => [],
    afterBundling: (_inputDir, outputDir) => [writeAssetPackageJsonCommand(join(outputDir, 'package.json'))],
  },
};

/**
 * What a CommonJS bundle (your choice, `format: OutputFormat.CJS`) cannot keep must fail the synth,
 * never the function: esbuild only warns that an `import.meta` there is empty, so it is made an
 * error, which names the file and line and says to bundle as ESM. (Top-level `await` in CommonJS is
 * an esbuild error already.)
 */
const CJS_LOG_OVERRIDES = { 'empty-import-meta': 'error' } as const;

/** A function's bundling: {@link LAMBDA_BUNDLING}, your options over it, and what the format needs. */
export interface ResolvedLambdaBundling extends Omit<BundlingOptions, keyof LambdaBundling>, LambdaBundling {
  /** esbuild's log levels by message id, as `lambdaBuildOptions` passes them (NodejsFunction: `esbuildArgs`). */
  logOverride: Readonly<Record<string, 'error'>>;
}

/**
 * {@link LAMBDA_BUNDLING} with `yours` over it, plus what the resulting format needs: for an ES
 * module the `require` banner (before yours) and the CommonJS paths (yours win); for CommonJS
 * neither (both are ES module syntax) and an `import.meta` made an error. Your `commandHooks`
 * replace Oncely's here: `oncelyFunction` runs both.
 */
export function lambdaBundling(yours: BundlingOptions = {}): ResolvedLambdaBundling {
  const merged = {
    ...LAMBDA_BUNDLING,
    // A source map mode asks for source maps, as NodejsFunction would otherwise refuse it.
    ...(yours.sourceMapMode === undefined ? {} : { sourceMap: true }),
    ...definedOptions(yours),
  };
  // Yours without Oncely's own (given back when you spread LAMBDA_BUNDLING or oncelyBundling() into
  // your options), so that nothing is declared twice.
  const banner = yours.banner?.split(ESM_REQUIRE_BANNER).join('').trim() || undefined;
  const define = Object.fromEntries(
    Object.entries(yours.define ?? {}).filter(
      ([name, value]) => ESM_COMMONJS_PATHS[name as keyof typeof ESM_COMMONJS_PATHS] !== value,
    ),
  );
  if (merged.format === OutputFormat.ESM) {
    // A banner of yours that makes its own `require` (the usual ESM banner does) keeps it alone.
    const ownRequire = banner !== undefined && DECLARES_REQUIRE.test(banner);
    return {
      ...merged,
      banner: [ownRequire ? undefined : ESM_REQUIRE_BANNER, banner].filter(Boolean).join('\n'),
      define: { ...ESM_COMMONJS_PATHS, ...define },
      logOverride: {},
    };
  }
  return { ...merged, banner: banner ?? '', define, logOverride: CJS_LOG_OVERRIDES };
}

/** A banner that declares `require` itself, such as `const require = createRequire(import.meta.url);`. */
const DECLARES_REQUIRE = /\b(?:const|let|var)\s+require\b/;

/**
 * The `bundling` to give a NodejsFunction of your own so that it is bundled as Oncely bundles its
 * functions: {@link LAMBDA_BUNDLING}, your options over it, and what the format needs (see
 * `lambdaBundling`). With `sourceMap: true`, also set `NODE_OPTIONS=--enable-source-maps`.
 */
export function oncelyBundling(yours: BundlingOptions = {}): BundlingOptions {
  return nodejsFunctionBundling(lambdaBundling(yours));
}

/** The options NodejsFunction takes for a `lambdaBundling`: its log overrides as `esbuildArgs`. */
export function nodejsFunctionBundling({
  logOverride,
  ...bundling
}: ResolvedLambdaBundling): BundlingOptions {
  const args = Object.entries(logOverride).map(([id, level]) => [`--log-override:${id}`, level]);
  const { banner, define, ...rest } = bundling;
  return {
    ...rest,
    // NodejsFunction passes an empty banner or define on as an empty flag: leave them out instead.
    ...(banner ? { banner } : {}),
    ...(Object.keys(define).length > 0 ? { define } : {}),
    ...(args.length > 0 ? { esbuildArgs: { ...bundling.esbuildArgs, ...Object.fromEntries(args) } } : {}),
  };
}

/** Options given as `undefined` leave Oncely's default in place, as NodejsFunction's own do. */
function definedOptions(options: BundlingOptions): BundlingOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/**
 * What the asset's `package.json` says, beside the bundle: that an `index.js` (a CommonJS bundle,
 * when you choose that format) is CommonJS wherever the asset sits. Lambda would read it so anyway
 * (nothing above `/var/task` says otherwise), but the sandbox runs the asset inside the cloud
 * assembly, inside your project, and a `"type": "module"` there would make Node read the bundle as
 * an ES module. The default `index.mjs` is an ES module by its name alone.
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
 * hook writes it: for whatever reproduces an asset with `lambdaBuildOptions` on disk.
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
 * root (byte for byte: the assets of `npm run synth` are these builds' {@link lambdaBundleFile}, and
 * the asset's `package.json` is {@link writeLambdaAssetPackageJson}'s). Add what does not change the
 * code (`write`, `metafile`, `logLevel`); a plugin does, like the benchmark's.
 */
export function lambdaBuildOptions(
  { projectRoot, entry, outdir }: LambdaBuildTarget,
  bundling: ResolvedLambdaBundling = lambdaBundling(),
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
    sourcesContent: bundling.sourcesContent,
    external: bundling.externalModules,
    mainFields: bundling.mainFields,
    banner: bundling.banner ? { js: bundling.banner } : undefined,
    define: bundling.define,
    logOverride: bundling.logOverride,
    // NodejsFunction's `--inject:` (OncelyPipeline injects the Valkey store's module with
    // `leaseRecords: 'valkey'`).
    ...(bundling.inject?.length ? { inject: bundling.inject } : {}),
  };
}
