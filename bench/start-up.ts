import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { type Spread, spreadOf } from '../harness/statistics.js';
import {
  lambdaBuildOptions,
  lambdaBundleFile,
  writeLambdaAssetPackageJson,
} from '../lib/constructs/bundling.js';
import {
  BASELINE_BUNDLE,
  BUNDLE_FORMATS,
  type BuiltBundle,
  type BundledLambda,
  type BundleFormat,
  DEFAULT_FORMAT,
} from './bundle-size.js';
import { type SdkImports, sdkFloorOf, sdkImportsOf } from './sdk-floor.js';
import { WITHOUT_OPENTELEMETRY_API } from './without-opentelemetry.js';

const run = promisify(execFile);

export interface StartUpSettings {
  /** Timed imports of each module. */
  runs: number;
  /** Untimed rounds first, so that every file is in the page cache. */
  warmupRuns: number;
}

/** Load times of one module, in a fresh Node process each time. */
export interface ImportTimes {
  /** Wall time from `require()` (or `import()`) to the module evaluated, ms. */
  wallMs: Spread;
  /** CPU time of the process meanwhile, ms: steadier than wall time on a machine busy with other work. */
  cpuMs: Spread;
}

export interface StartUp {
  lambda: BundledLambda;
  format: BundleFormat;
  /** The AWS SDK packages the bundle loads at start. */
  sdkPackages: string[];
  bundle: ImportTimes;
  /** The same SDK imports alone, built the same way: the part of the start-up no code using those clients avoids. */
  sdkFloor: ImportTimes;
  /** The bundle's time less its floor's of the same round, ms: what the code above the SDK costs. */
  aboveFloor: { wallMs: Spread; cpuMs: Spread };
  /** The bundle's times divided by the baseline's (Powertools' consumer, same format) of the same round; absent for the baseline. */
  pairedRatio?: { wall: Spread; cpu: Spread };
  /** For {@link LAYERED}: the floor plus each layer of its imports, above the floor (CPU ms, paired). */
  layers?: { label: string; aboveFloorCpuMs: Spread }[];
}

/** The start-up figures of (6): every bundle in every format, and Oncely's own layer. */
export interface StartUpResults {
  bundles: StartUp[];
  /** Each of {@link OWN_LAYERS}, in the default format. */
  ownLayers: OwnLayerStartUp[];
  /**
   * What turning on the consumer's Powertools telemetry adds to its start-up: each round's CPU ms of
   * `consumerTelemetry` less `consumer`'s. A consumer made on its first invocation (`processFifoBatch`,
   * the example consumer) pays it in that invocation instead.
   */
  telemetryCostCpuMs: Spread;
}

/**
 * Oncely's own layer (issue 28): each entry point alone in a handler module, bundled as the stack
 * bundles its Lambdas (the default format), above its own SDK floor. What a user's code adds above
 * it (Middy, validation, business code) is the user's.
 */
export const OWN_LAYERS = {
  consumer: {
    label: '`oncely/consumer` alone, Powertools telemetry off',
    entry: 'bench/layers/consumer.ts',
  },
  consumerTelemetry: {
    label: '`oncely/consumer` alone, its default Powertools telemetry on',
    entry: 'bench/layers/consumer-telemetry.ts',
  },
  client: { label: '`oncely/client` alone (it has no telemetry)', entry: 'bench/layers/client.ts' },
} as const;
export type OwnLayer = keyof typeof OWN_LAYERS;

/** One of {@link OWN_LAYERS}: its start-up, its floor, and the difference. */
export interface OwnLayerStartUp {
  layer: OwnLayer;
  /** The AWS SDK packages it loads at start. */
  sdkPackages: string[];
  module: ImportTimes;
  sdkFloor: ImportTimes;
  /** Its time less its floor's of the same round, ms: Oncely's own start-up. */
  aboveFloor: { wallMs: Spread; cpuMs: Spread };
}

/**
 * What the example consumer's start-up above its floor is made of, in the default format: the floor
 * plus one more layer of what it imports at a time, each built the same way. What is left above the
 * last layer is the example's own choices (Middy, zod/mini, its business code).
 */
export const CONSUMER_LAYERS = [
  {
    name: 'fifo-batch',
    label:
      "Oncely's consumer (`fifoBatch` from `oncely/consumer`; its Powertools telemetry is bundled but loaded only " +
      'once `fifoBatch()` is called, which the example does on its first invocation)',
    imports: "import { fifoBatch } from 'oncely/consumer'; globalThis.__layer = [fifoBatch];",
  },
] as const;
const LAYERED = { lambda: 'oncely', format: DEFAULT_FORMAT } as const;

/**
 * The fresh Node process that loads a module as Lambda's init phase loads the handler's: an
 * `index.js` with `require()`, an `index.mjs` with `import()` (`sandbox/function-worker.mjs`
 * follows the same rule), with `--enable-source-maps` where the format has source maps (the flag
 * `lib/constructs/oncely-function.ts` then sets in `NODE_OPTIONS`). The clock stops once the
 * promise jobs the module's evaluation queued have run too (a bundled `import()`, such as the
 * consumer's Powertools telemetry, evaluates its modules in one), as they run before Lambda's init ends.
 */
const LOAD_TIMER = [
  "import { createRequire } from 'node:module'; import { pathToFileURL } from 'node:url';",
  'const file = process.argv[1];',
  'const cpu = process.cpuUsage(); const start = performance.now();',
  "if (file.endsWith('.mjs')) await import(pathToFileURL(file).href); else createRequire(file)(file);",
  'await new Promise((resolve) => setImmediate(resolve));',
  'const wallMs = performance.now() - start; const { user, system } = process.cpuUsage(cpu);',
  'process.stdout.write(JSON.stringify({ wallMs, cpuMs: (user + system) / 1000 }));',
].join(' ');

export interface Sample {
  wallMs: number;
  cpuMs: number;
}

/** A module (6) loads: a bundle of {@link BUNDLES}, or one of {@link OWN_LAYERS}, built alike. */
type LoadedModule = Pick<BuiltBundle, 'format' | 'entry' | 'fileName' | 'code' | 'sourceMap'> & {
  lambda: BundledLambda | OwnLayer;
};

interface TimedModule {
  lambda: BundledLambda | OwnLayer;
  format: BundleFormat;
  /** The bundle, only the AWS SDK imports it makes (its floor), or the floor and a layer of {@link CONSUMER_LAYERS}. */
  kind: 'bundle' | 'floor' | (typeof CONSUMER_LAYERS)[number]['name'];
  file: string;
  samples: Sample[];
}

/**
 * (6) Module start-up: each bundle (of every format it was built in), and each of
 * {@link OWN_LAYERS} (in the default format), written to a temporary directory with the asset's
 * package.json, then loaded in a fresh Node process, `runs` times; and beside it its SDK floor. A
 * round loads every module once, in an order that rotates from round to round, so that all share
 * whatever else the machine is doing; each bundle's time is compared with its floor's and with the
 * baseline's of the same round and format. The runtime's SDK comes from the project's node_modules,
 * as Lambda's comes from the runtime.
 */
export async function measureStartUp(
  bundles: readonly BuiltBundle[],
  { projectRoot, runs, warmupRuns }: StartUpSettings & { projectRoot: string },
): Promise<StartUpResults> {
  const directory = await mkdtemp(join(tmpdir(), 'oncely-start-up-'));
  try {
    await symlink(join(projectRoot, 'node_modules'), join(directory, 'node_modules'), 'dir');
    const imports = new Map<string, SdkImports>();
    const modules: TimedModule[] = [];
    const packagesOf = new Map<string, string[]>();
    const loaded: LoadedModule[] = [...bundles, ...(await buildOwnLayers(projectRoot))];
    for (const bundle of loaded) {
      const sdk = imports.get(bundle.entry) ?? (await sdkImportsOf(projectRoot, bundle.entry));
      imports.set(bundle.entry, sdk);
      const folder = join(directory, `${bundle.lambda}-${bundle.format}`);
      await mkdir(folder);
      await writeLambdaAssetPackageJson(folder);
      const floor = await sdkFloorOf(projectRoot, bundle, sdk);
      packagesOf.set(`${bundle.lambda}-${bundle.format}`, floor.packages);
      const { lambda, format } = bundle;
      const bundleFile = await writeModule(folder, bundle.fileName, bundle);
      modules.push({ lambda, format, kind: 'bundle', file: bundleFile, samples: [] });
      modules.push({
        lambda,
        format,
        kind: 'floor',
        file: await writeModule(folder, floor.fileName, floor),
        samples: [],
      });
      if (lambda !== LAYERED.lambda || format !== LAYERED.format) continue;
      for (const layer of CONSUMER_LAYERS) {
        const layered = await sdkFloorOf(projectRoot, bundle, sdk, layer);
        const file = await writeModule(folder, layered.fileName, layered);
        modules.push({ lambda, format, kind: layer.name, file, samples: [] });
      }
    }
    for (let round = 0; round < warmupRuns + runs; round += 1) {
      for (let turn = 0; turn < modules.length; turn += 1) {
        const module = modules[(round + turn) % modules.length] as TimedModule;
        const sample = await importTime(module, directory);
        if (round >= warmupRuns) module.samples.push(sample);
      }
    }
    const samplesOf = (lambda: TimedModule['lambda'], format: BundleFormat, kind: TimedModule['kind']) =>
      modules.find((module) => module.lambda === lambda && module.format === format && module.kind === kind)
        ?.samples ?? [];
    const difference = (a: number, b: number) => a - b;
    const ratio = (a: number, b: number) => a / b;
    /** Each round's figure of `own` combined with that of `others` in the same round. */
    const paired = (
      own: Sample[],
      others: Sample[],
      combine: (a: number, b: number) => number,
      figure: keyof Sample,
    ) => spreadOf(own.map((sample, round) => combine(sample[figure], (others[round] as Sample)[figure])));
    const aboveFloor = (own: Sample[], floor: Sample[]) => ({
      wallMs: paired(own, floor, difference, 'wallMs'),
      cpuMs: paired(own, floor, difference, 'cpuMs'),
    });
    const ownLayers = (Object.keys(OWN_LAYERS) as OwnLayer[]).map((layer): OwnLayerStartUp => {
      const own = samplesOf(layer, DEFAULT_FORMAT, 'bundle');
      const floor = samplesOf(layer, DEFAULT_FORMAT, 'floor');
      return {
        layer,
        sdkPackages: packagesOf.get(`${layer}-${DEFAULT_FORMAT}`) ?? [],
        module: timesOf(own),
        sdkFloor: timesOf(floor),
        aboveFloor: aboveFloor(own, floor),
      };
    });
    const withTelemetry = samplesOf('consumerTelemetry', DEFAULT_FORMAT, 'bundle');
    const withoutTelemetry = samplesOf('consumer', DEFAULT_FORMAT, 'bundle');
    return {
      bundles: bundles.map(({ lambda, format }) => {
        const own = samplesOf(lambda, format, 'bundle');
        const floor = samplesOf(lambda, format, 'floor');
        const baseline = samplesOf(BASELINE_BUNDLE, format, 'bundle');
        return {
          lambda,
          format,
          sdkPackages: packagesOf.get(`${lambda}-${format}`) ?? [],
          bundle: timesOf(own),
          sdkFloor: timesOf(floor),
          aboveFloor: aboveFloor(own, floor),
          pairedRatio:
            lambda === BASELINE_BUNDLE
              ? undefined
              : { wall: paired(own, baseline, ratio, 'wallMs'), cpu: paired(own, baseline, ratio, 'cpuMs') },
          layers:
            lambda === LAYERED.lambda && format === LAYERED.format
              ? CONSUMER_LAYERS.map(({ name, label }) => ({
                  label,
                  aboveFloorCpuMs: paired(samplesOf(lambda, format, name), floor, difference, 'cpuMs'),
                }))
              : undefined,
        };
      }),
      ownLayers,
      telemetryCostCpuMs: paired(withTelemetry, withoutTelemetry, difference, 'cpuMs'),
    };
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

/** Each of {@link OWN_LAYERS}, bundled in the default format as `buildBundles` bundles the Lambdas. */
async function buildOwnLayers(projectRoot: string): Promise<LoadedModule[]> {
  const { bundling } = BUNDLE_FORMATS[DEFAULT_FORMAT];
  const fileName = lambdaBundleFile(bundling);
  const built: LoadedModule[] = [];
  for (const [lambda, { entry }] of Object.entries(OWN_LAYERS) as [OwnLayer, { entry: string }][]) {
    const { outputFiles } = await build({
      ...lambdaBuildOptions({ projectRoot, entry, outdir: 'bundle' }, bundling),
      write: false,
      logLevel: 'error',
      plugins: [WITHOUT_OPENTELEMETRY_API],
    });
    const code = outputFiles.find((output) => output.path.endsWith(fileName))?.contents;
    if (!code) throw new Error(`esbuild wrote no ${fileName} for ${entry}`);
    // The default format has no source maps: nothing else to load.
    built.push({ lambda, format: DEFAULT_FORMAT, entry, fileName, code });
  }
  return built;
}

/** Writes a module (and its source map, if it has one) into `folder`; returns its path. */
async function writeModule(
  folder: string,
  fileName: string,
  { code, sourceMap }: { code: Uint8Array; sourceMap?: Uint8Array },
): Promise<string> {
  const file = join(folder, fileName);
  await writeFile(file, code);
  if (sourceMap) await writeFile(`${file}.map`, sourceMap);
  return file;
}

async function importTime(module: TimedModule, cwd: string): Promise<Sample> {
  return timeImport(module.file, cwd, BUNDLE_FORMATS[module.format].bundling.sourceMap);
}

/** Loads `file` in a fresh Node process as Lambda's init loads a handler (see LOAD_TIMER): its times. */
export async function timeImport(file: string, cwd: string, sourceMap = false): Promise<Sample> {
  const sourceMaps = sourceMap ? ['--enable-source-maps'] : [];
  const { stdout } = await run(
    process.execPath,
    [...sourceMaps, '--input-type=module', '-e', LOAD_TIMER, file],
    // Only what the import needs: none of this process's NODE_OPTIONS (tsx's loader) in the child.
    { cwd, env: { PATH: process.env.PATH, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } },
  );
  const sample = JSON.parse(stdout) as Sample;
  if (!(Number.isFinite(sample.wallMs) && Number.isFinite(sample.cpuMs))) {
    throw new Error(`importing ${file} printed ${JSON.stringify(stdout)}, not its times`);
  }
  return sample;
}

function timesOf(samples: readonly Sample[]): ImportTimes {
  return {
    wallMs: spreadOf(samples.map((sample) => sample.wallMs)),
    cpuMs: spreadOf(samples.map((sample) => sample.cpuMs)),
  };
}
