import { gzipSync } from 'node:zlib';
import { OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { build, type Metafile, type Plugin } from 'esbuild';
import {
  lambdaBuildOptions,
  lambdaBundleFile,
  lambdaBundling,
  type ResolvedLambdaBundling,
} from '../lib/constructs/bundling.js';
import { WITHOUT_OPENTELEMETRY_API } from './without-opentelemetry.js';

/** The Lambdas measured in (4) and (6); Powertools' consumer is the baseline of both. */
export const BUNDLES = {
  oncely: { label: 'Oncely: the example consumer', entry: 'lambdas/shop/consumer/handler.ts' },
  publisher: { label: 'Oncely: the publisher', entry: 'lambdas/publisher/handler.ts' },
  powertools: { label: 'Powertools: the same consumer', entry: 'bench/consumers/powertools-consumer.ts' },
} as const;
export type BundledLambda = keyof typeof BUNDLES;
export const BASELINE_BUNDLE: BundledLambda = 'powertools';

const RUNTIME_SDK = ['@aws-sdk/*'];

/**
 * The ways of bundling a Lambda that (6) compares, each applied alike to Oncely's Lambdas and to
 * Powertools' consumer: the default (`LAMBDA_BUNDLING`), and the choices it was made against.
 */
export const BUNDLE_FORMATS = {
  esmBundledSdk: {
    label: 'ES module, AWS SDK bundled (the default)',
    bundling: lambdaBundling(),
  },
  esmBundledSdkSourceMaps: {
    label: 'the default with source maps (`sourceMap: true`, `--enable-source-maps`)',
    bundling: lambdaBundling({ sourceMap: true }),
  },
  esmRuntimeSdk: {
    label: "ES module, the runtime's AWS SDK",
    bundling: lambdaBundling({ externalModules: RUNTIME_SDK }),
  },
  cjsRuntimeSdk: {
    label: "CommonJS, the runtime's AWS SDK (the default before)",
    bundling: lambdaBundling({ format: OutputFormat.CJS, externalModules: RUNTIME_SDK }),
  },
} as const satisfies Record<string, { label: string; bundling: ResolvedLambdaBundling }>;
export type BundleFormat = keyof typeof BUNDLE_FORMATS;
export const DEFAULT_FORMAT: BundleFormat = 'esmBundledSdk';
/** The format whose bytes are the libraries' own: everything but the AWS SDK, which Lambda could provide. */
export const WITHOUT_SDK_FORMAT: BundleFormat = 'esmRuntimeSdk';

/** Whether a format's bundles leave the AWS SDK to the runtime. */
export function usesRuntimeSdk(format: BundleFormat): boolean {
  return BUNDLE_FORMATS[format].bundling.externalModules.length > 0;
}

/** A Lambda's bundle as `cdk deploy` would upload it, kept in memory. */
export interface BuiltBundle {
  lambda: BundledLambda;
  format: BundleFormat;
  entry: string;
  /** The file Lambda loads: `index.mjs` or `index.js`. */
  fileName: string;
  /** The minified bundle, as Lambda loads it. */
  code: Uint8Array;
  /** Its source map, when the format has one: Lambda reads it with `--enable-source-maps`. */
  sourceMap?: Uint8Array;
  metafile: Metafile;
}

export interface BundleSize {
  lambda: BundledLambda;
  entry: string;
  bytes: number;
  /** Gzipped, roughly what the deployment zip stores. */
  gzipBytes: number;
  /** Bytes of the minified output by where they come from, largest first. */
  parts: { origin: string; bytes: number }[];
}

/**
 * Bundles each Lambda as `lib/constructs/oncely-function.ts` has NodejsFunction bundle it, with the
 * options of `format` (`lib/constructs/bundling.ts`; by default the deployed ones: a minified ES
 * module with names kept, for node24, the AWS SDK inside). Nothing is written to disk. `plugins` go
 * after the benchmark's own.
 */
export async function buildBundles(
  projectRoot: string,
  format: BundleFormat = DEFAULT_FORMAT,
  plugins: Plugin[] = [],
): Promise<BuiltBundle[]> {
  const built: BuiltBundle[] = [];
  const { bundling } = BUNDLE_FORMATS[format];
  const fileName = lambdaBundleFile(bundling);
  for (const lambda of Object.keys(BUNDLES) as BundledLambda[]) {
    const { entry } = BUNDLES[lambda];
    const result = await build({
      ...lambdaBuildOptions({ projectRoot, entry, outdir: 'bundle' }, bundling),
      write: false,
      metafile: true,
      logLevel: 'error',
      plugins: [onePowertoolsCommons(projectRoot), WITHOUT_OPENTELEMETRY_API, ...plugins],
    });
    const file = (suffix: string) =>
      result.outputFiles.find((candidate) => candidate.path.endsWith(suffix))?.contents;
    const code = file(fileName);
    if (!code) throw new Error(`esbuild wrote no ${fileName} for ${entry}`);
    built.push({
      lambda,
      format,
      entry,
      fileName,
      code,
      sourceMap: bundling.sourceMap ? file(`${fileName}.map`) : undefined,
      metafile: result.metafile,
    });
  }
  return built;
}

/** (4) How large each bundle is, and what it is made of. */
export function bundleSizes(bundles: readonly BuiltBundle[]): BundleSize[] {
  return bundles.map(({ lambda, entry, code, metafile }) => ({
    lambda,
    entry,
    bytes: code.byteLength,
    gzipBytes: gzipSync(code).byteLength,
    parts: partsOf(metafile),
  }));
}

/**
 * The Powertools idempotency and batch packages are on 2.35.0 (the newest on the registry) while the
 * logger and metrics are on 2.36.0, so npm installs a second `@aws-lambda-powertools/commons` for them.
 * A project on one Powertools version bundles one copy: resolve every import of it from the root.
 */
function onePowertoolsCommons(projectRoot: string): Plugin {
  return {
    name: 'one-powertools-commons',
    setup(esbuild) {
      esbuild.onResolve({ filter: /^@aws-lambda-powertools\/commons(\/|$)/ }, (args) =>
        args.pluginData?.fromRoot
          ? undefined
          : esbuild.resolve(args.path, {
              kind: args.kind,
              resolveDir: projectRoot,
              pluginData: { fromRoot: true },
            }),
      );
    },
  };
}

/** A package (`zod`, `@aws-lambda-powertools/logger`), or the project folder the code comes from. */
function partsOf(metafile: Metafile): BundleSize['parts'] {
  const output = Object.values(metafile.outputs).find((candidate) => candidate.entryPoint);
  const bytes = new Map<string, number>();
  for (const [path, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) {
    const origin = originOf(path);
    bytes.set(origin, (bytes.get(origin) ?? 0) + bytesInOutput);
  }
  return [...bytes]
    .filter(([, size]) => size > 0)
    .map(([origin, size]) => ({ origin, bytes: size }))
    .sort((a, b) => b.bytes - a.bytes);
}

function originOf(path: string): string {
  const packagePath = path.split('node_modules/').at(-1) ?? path;
  if (packagePath !== path) {
    const [scope = '', name = ''] = packagePath.split('/');
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  return path.split('/').slice(0, 2).join('/');
}
