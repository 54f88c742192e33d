import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { type Spread, spreadOf } from '../../harness/statistics.js';
import {
  lambdaBuildOptions,
  lambdaBundleFile,
  writeLambdaAssetPackageJson,
} from '../../lib/constructs/bundling.js';
import type { BenchEndpoints } from '../clients.js';
import { type Sample, timeImport } from '../start-up.js';
import { WITHOUT_OPENTELEMETRY_API } from '../without-opentelemetry.js';
import { TRACING_VARIANTS, type TracingVariant, type VariantRun } from './variants.js';

const run = promisify(execFile);

/** The last commit before tracing's code (8c28b9b, "Publish: carry the producer's trace context"). */
export const BEFORE_TRACING_COMMIT = 'f9110e9';

export interface TracingCostOptions {
  /** Fresh processes per variant: each a round, the variants in a rotating order. */
  rounds: number;
  /** Timed messages per run (as many again profiled), after 200 unmeasured. */
  messages: number;
  /** Loads of each bundle, in turns. */
  startUpRuns: number;
  projectRoot: string;
  /** The commit whose package is the `before` variant: the last before tracing's code. */
  earlierCommit: string;
  onProgress?: (line: string) => void;
}

/** What each variant is compared with: tracing's code without the API with the code before it, the API with neither. */
export const COMPARED_WITH: Partial<Record<TracingVariant, TracingVariant>> = {
  absent: 'before',
  api: 'absent',
  sdk: 'absent',
};

/** A variant's figures over the rounds, and against the one it is compared with, paired by round. */
export interface VariantCost {
  variant: TracingVariant;
  cpuMsPerMessage: Spread;
  ownMsPerMessage: Spread;
  librariesMsPerMessage: Spread;
  /** Each round's difference with the run of {@link COMPARED_WITH}'s variant in the same round. */
  more?: { than: TracingVariant; cpuMsPerMessage: Spread; ownMsPerMessage: Spread };
  spansPerMessage: number;
}

/** The consumer's bundle with and without the API: its bytes and its start-up. */
export interface BundleCost {
  withApi: boolean;
  minifiedBytes: number;
  gzippedBytes: number;
  startUpCpuMs: Spread;
  /** Each round's difference with the bundle without the API; none for that one. */
  startUpCpuMsMoreThanWithout?: Spread;
}

export interface TracingCost {
  variants: VariantCost[];
  bundles: BundleCost[];
}

const VARIANT_RUN = join('bench', 'tracing', 'variant-run.ts');
const HIDE_API = join('bench', 'tracing', 'hide-opentelemetry.mjs');
const EARLIER_ONCELY = join('bench', 'tracing', 'earlier-oncely.mjs');
/** `oncely/consumer` alone in a handler module: the consumer of (6)'s own layers. */
const CONSUMER_LAYER = join('bench', 'layers', 'consumer.ts');

/**
 * The cost of tracing (DESIGN §6, issue 44): the lease-mode consumer's CPU per message, and Oncely's
 * own share of it, as built before tracing, then with `@opentelemetry/api` absent, installed without
 * an SDK, and with an SDK registered, each run in a fresh process; and `oncely/consumer`'s bundle
 * built with the API and without it, its bytes and its start-up.
 */
export async function measureTracingCost(
  endpoints: BenchEndpoints,
  options: TracingCostOptions,
): Promise<TracingCost> {
  const earlier = await buildEarlierPackage(options.projectRoot, options.earlierCommit);
  try {
    const runs: VariantRun[][] = [];
    for (let round = 0; round < options.rounds; round++) {
      const order = TRACING_VARIANTS.map(
        (_, index, all) => all[(index + round) % all.length] as TracingVariant,
      );
      const byVariant = new Map<TracingVariant, VariantRun>();
      for (const variant of order) {
        byVariant.set(variant, await runVariant(variant, endpoints, options, earlier.root));
      }
      runs.push(TRACING_VARIANTS.map((variant) => byVariant.get(variant) as VariantRun));
      options.onProgress?.(`round ${round + 1} of ${options.rounds}`);
    }
    return { variants: variantCosts(runs), bundles: await bundleCosts(options) };
  } finally {
    await earlier.remove();
  }
}

/**
 * The package as `commit` left it, built (`tsc`, as `npm run build`) in a worktree of its own that
 * shares this one's node_modules: the same dependencies, only Oncely's code older.
 */
async function buildEarlierPackage(projectRoot: string, commit: string) {
  const parent = await mkdtemp(join(tmpdir(), 'oncely-earlier-'));
  const root = join(parent, 'tree');
  const remove = async () => {
    await run('git', ['worktree', 'remove', '--force', root], { cwd: projectRoot }).catch(() => undefined);
    await rm(parent, { recursive: true, force: true });
  };
  try {
    await run('git', ['worktree', 'add', '--detach', root, commit], { cwd: projectRoot });
    await symlink(join(projectRoot, 'node_modules'), join(root, 'node_modules'));
    await run(join(projectRoot, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: root });
    return { root, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

async function runVariant(
  variant: TracingVariant,
  endpoints: BenchEndpoints,
  options: TracingCostOptions,
  earlierRoot: string,
): Promise<VariantRun> {
  const hooks =
    variant === 'absent'
      ? ['--import', `./${HIDE_API}`]
      : variant === 'before'
        ? ['--import', `./${EARLIER_ONCELY}`]
        : [];
  const { stdout } = await run(
    process.execPath,
    [
      '--import',
      'tsx',
      ...hooks,
      VARIANT_RUN,
      `--variant=${variant}`,
      `--dynamodb=${endpoints.dynamodb}`,
      `--sqs=${endpoints.sqs}`,
      `--messages=${options.messages}`,
      // Oncely's own code is the package's: the earlier one's, in the "before" runs.
      `--project-root=${variant === 'before' ? earlierRoot : options.projectRoot}`,
    ],
    {
      cwd: options.projectRoot,
      env: { ...process.env, ONCELY_BENCH_EARLIER: earlierRoot },
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  const result = JSON.parse(stdout) as VariantRun;
  const expectedSpans = variant === 'sdk' ? 1 : 0;
  if (result.spansPerMessage !== expectedSpans) {
    throw new Error(`${variant}: ${result.spansPerMessage} spans per message, not ${expectedSpans}`);
  }
  return result;
}

function variantCosts(runs: readonly VariantRun[][]): VariantCost[] {
  const of = (variant: TracingVariant) =>
    runs.map((round) => round[TRACING_VARIANTS.indexOf(variant)] as VariantRun);
  return TRACING_VARIANTS.map((variant) => {
    const own = of(variant);
    const than = COMPARED_WITH[variant];
    const more = (figure: 'cpuMsPerMessage' | 'ownMsPerMessage', other: VariantRun[]) =>
      spreadOf(own.map((result, round) => result[figure] - (other[round] as VariantRun)[figure]));
    return {
      variant,
      cpuMsPerMessage: spreadOf(own.map((result) => result.cpuMsPerMessage)),
      ownMsPerMessage: spreadOf(own.map((result) => result.ownMsPerMessage)),
      librariesMsPerMessage: spreadOf(own.map((result) => result.librariesMsPerMessage)),
      ...(than && {
        more: {
          than,
          cpuMsPerMessage: more('cpuMsPerMessage', of(than)),
          ownMsPerMessage: more('ownMsPerMessage', of(than)),
        },
      }),
      spansPerMessage: own[0]?.spansPerMessage ?? 0,
    };
  });
}

async function bundleCosts(options: TracingCostOptions): Promise<BundleCost[]> {
  const directory = await mkdtemp(join(tmpdir(), 'oncely-tracing-bench-'));
  try {
    const files: string[] = [];
    const sizes: { minifiedBytes: number; gzippedBytes: number }[] = [];
    for (const withApi of [false, true]) {
      const outdir = join(directory, withApi ? 'with' : 'without');
      const { outputFiles } = await build({
        ...lambdaBuildOptions({ projectRoot: options.projectRoot, entry: CONSUMER_LAYER, outdir }),
        write: false,
        logLevel: 'error',
        plugins: withApi ? [] : [WITHOUT_OPENTELEMETRY_API],
      });
      const code = outputFiles.find((output) => output.path.endsWith(lambdaBundleFile()))?.contents;
      if (!code) throw new Error(`esbuild wrote no ${lambdaBundleFile()} for ${CONSUMER_LAYER}`);
      await mkdir(outdir, { recursive: true });
      await writeLambdaAssetPackageJson(outdir);
      const file = join(outdir, lambdaBundleFile());
      await writeFile(file, code);
      files.push(file);
      sizes.push({ minifiedBytes: code.byteLength, gzippedBytes: gzipSync(code).byteLength });
    }
    const samples: Sample[][] = [[], []];
    for (let round = 0; round < options.startUpRuns + 2; round++) {
      for (const index of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const sample = await timeImport(files[index] as string, directory);
        // Two untimed rounds first: every file in the page cache.
        if (round >= 2) samples[index]?.push(sample);
      }
    }
    const [without = [], withApi = []] = samples;
    return [
      {
        withApi: false,
        ...sizes[0],
        startUpCpuMs: spreadOf(without.map(({ cpuMs }) => cpuMs)),
      } as BundleCost,
      {
        withApi: true,
        ...sizes[1],
        startUpCpuMs: spreadOf(withApi.map(({ cpuMs }) => cpuMs)),
        startUpCpuMsMoreThanWithout: spreadOf(
          withApi.map(({ cpuMs }, round) => cpuMs - (without[round] as Sample).cpuMs),
        ),
      } as BundleCost,
    ];
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}
