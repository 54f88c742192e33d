import { gzipSync } from 'node:zlib';
import { build, type Metafile, type Plugin } from 'esbuild';
import { lambdaBuildOptions, lambdaBundleFile } from '../src/cdk/bundling.js';

export const BUNDLES = {
  oncely: { label: 'Oncely: the example consumer', entry: 'examples/shop/consumer/handler.ts' },
  powertools: { label: 'Powertools: the same consumer', entry: 'bench/consumers/powertools-consumer.ts' },
} as const;
export type BundledConsumer = keyof typeof BUNDLES;

export interface BundleSize {
  consumer: BundledConsumer;
  entry: string;
  /** The minified `index.mjs`, as Lambda loads it. */
  bytes: number;
  /** Gzipped, roughly what the deployment zip stores. */
  gzipBytes: number;
  /** Bytes of the minified output by where they come from, largest first. */
  parts: { origin: string; bytes: number }[];
}

/**
 * (4) The consumers bundled as `lib/oncely-pipeline.ts` has NodejsFunction bundle them, with the
 * same options (`lib/bundling.ts`): esbuild, ESM, minified with names kept, for node24, the AWS SDK
 * left out (the Lambda runtime provides it). Nothing is written to disk.
 */
export async function measureBundleSizes(projectRoot: string): Promise<BundleSize[]> {
  const sizes: BundleSize[] = [];
  for (const consumer of Object.keys(BUNDLES) as BundledConsumer[]) {
    const { entry } = BUNDLES[consumer];
    const result = await build({
      ...lambdaBuildOptions({ projectRoot, entry, outdir: 'bundle' }),
      write: false,
      metafile: true,
      logLevel: 'error',
      plugins: [onePowertoolsCommons(projectRoot)],
    });
    const code = result.outputFiles.find((file) => file.path.endsWith(lambdaBundleFile()));
    if (!code) throw new Error(`esbuild wrote no ${lambdaBundleFile()} for ${entry}`);
    sizes.push({
      consumer,
      entry,
      bytes: code.contents.byteLength,
      gzipBytes: gzipSync(code.contents).byteLength,
      parts: partsOf(result.metafile),
    });
  }
  return sizes;
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
