import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Metafile } from 'esbuild';
import { lambdaBundleFile, writeLambdaAssetPackageJson } from '../lib/constructs/bundling.js';
import { BASELINE_BUNDLE, type BuiltBundle, type BundledLambda } from './bundle-size.js';
import { type Spread, spreadOf } from './statistics.js';

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
  /** The AWS SDK packages the bundle loads at start (left out of the bundle: the runtime provides them). */
  sdkPackages: string[];
  bundle: ImportTimes;
  /** Those packages alone, loaded the same way: the part of the start-up no bundle of the function avoids. */
  sdkAlone: ImportTimes;
  /** The bundle's times divided by the baseline's of the same round; absent for the baseline. */
  pairedRatio?: { wall: Spread; cpu: Spread };
}

/**
 * The fresh Node process that loads a module as Lambda's init phase loads the handler's: an
 * `index.js` with `require()`, an `index.mjs` with `import()` (`sandbox/function-worker.mjs`
 * follows the same rule). Its flags are the deployed functions' `NODE_OPTIONS`
 * (`lib/constructs/oncely-function.ts`): with `--enable-source-maps`, Node reads a module's source map when
 * it loads it.
 */
const NODE_FLAGS = ['--enable-source-maps', '--input-type=module'];
const LOAD_TIMER = [
  "import { createRequire } from 'node:module'; import { pathToFileURL } from 'node:url';",
  'const file = process.argv[1];',
  'const cpu = process.cpuUsage(); const start = performance.now();',
  "if (file.endsWith('.mjs')) await import(pathToFileURL(file).href); else createRequire(file)(file);",
  'const wallMs = performance.now() - start; const { user, system } = process.cpuUsage(cpu);',
  'process.stdout.write(JSON.stringify({ wallMs, cpuMs: (user + system) / 1000 }));',
].join(' ');

interface Sample {
  wallMs: number;
  cpuMs: number;
}

/**
 * (6) Module start-up: each bundle written to a temporary directory with its source map (and the
 * asset's package.json), then loaded in a fresh Node process, `runs` times; and beside it the AWS SDK
 * packages it loads at start, alone. A round loads every module once, in an order that rotates from round to round, so that all share whatever
 * else the machine is doing; each bundle's time is also divided by the baseline's of the same round
 * (the paired ratio). The SDK comes from the project's node_modules, as Lambda's comes from the runtime.
 */
export async function measureStartUp(
  bundles: readonly BuiltBundle[],
  { projectRoot, runs, warmupRuns }: StartUpSettings & { projectRoot: string },
): Promise<StartUp[]> {
  const directory = await mkdtemp(join(tmpdir(), 'oncely-start-up-'));
  try {
    await symlink(join(projectRoot, 'node_modules'), join(directory, 'node_modules'), 'dir');
    const sdkPackages = new Map(bundles.map((bundle) => [bundle.lambda, sdkImportsOf(bundle.metafile)]));
    const modules: TimedModule[] = [];
    for (const bundle of bundles) {
      const packages = sdkPackages.get(bundle.lambda) ?? [];
      modules.push({
        lambda: bundle.lambda,
        kind: 'bundle',
        file: await writeBundle(directory, bundle),
        samples: [],
      });
      modules.push({
        lambda: bundle.lambda,
        kind: 'sdk',
        file: await writeSdkImports(directory, bundle, packages),
        samples: [],
      });
    }
    for (let round = 0; round < warmupRuns + runs; round += 1) {
      for (let turn = 0; turn < modules.length; turn += 1) {
        const module = modules[(round + turn) % modules.length] as TimedModule;
        const sample = await importTime(module.file, directory);
        if (round >= warmupRuns) module.samples.push(sample);
      }
    }
    const samplesOf = (lambda: BundledLambda, kind: TimedModule['kind']) =>
      modules.find((module) => module.lambda === lambda && module.kind === kind)?.samples ?? [];
    const baseline = samplesOf(BASELINE_BUNDLE, 'bundle');
    return bundles.map(({ lambda }) => {
      const own = samplesOf(lambda, 'bundle');
      const ratios = (figure: keyof Sample) =>
        spreadOf(own.map((sample, round) => sample[figure] / (baseline[round] as Sample)[figure]));
      return {
        lambda,
        sdkPackages: sdkPackages.get(lambda) ?? [],
        bundle: timesOf(own),
        sdkAlone: timesOf(samplesOf(lambda, 'sdk')),
        pairedRatio:
          lambda === BASELINE_BUNDLE ? undefined : { wall: ratios('wallMs'), cpu: ratios('cpuMs') },
      };
    });
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

interface TimedModule {
  lambda: BundledLambda;
  /** The bundle, or only the AWS SDK packages it imports. */
  kind: 'bundle' | 'sdk';
  file: string;
  samples: Sample[];
}

/**
 * The external AWS SDK packages the bundle loads at start: those it requires (or, as an ES module,
 * imports statically). A dynamic `import()` waits for its first use.
 */
function sdkImportsOf(metafile: Metafile): string[] {
  const output = Object.values(metafile.outputs).find((candidate) => candidate.entryPoint);
  const packages = (output?.imports ?? [])
    .filter(
      (entry) =>
        entry.external &&
        (entry.kind === 'require-call' || entry.kind === 'import-statement') &&
        entry.path.startsWith('@aws-sdk/'),
    )
    .map((entry) => entry.path);
  return [...new Set(packages)].sort();
}

async function writeBundle(directory: string, bundle: BuiltBundle): Promise<string> {
  const folder = join(directory, bundle.lambda);
  await mkdir(folder);
  const file = join(folder, lambdaBundleFile());
  await writeFile(file, bundle.code);
  await writeFile(`${file}.map`, bundle.sourceMap);
  await writeLambdaAssetPackageJson(folder);
  return file;
}

/** A module that loads only `packages`, in the bundle's format: the same `require()` or `import`. */
async function writeSdkImports(directory: string, bundle: BuiltBundle, packages: string[]): Promise<string> {
  const esModule = lambdaBundleFile().endsWith('.mjs');
  const file = join(directory, `${bundle.lambda}-sdk.${esModule ? 'mjs' : 'cjs'}`);
  const load = (name: string) => (esModule ? `import '${name}';\n` : `require('${name}');\n`);
  await writeFile(file, packages.map(load).join(''));
  return file;
}

async function importTime(file: string, cwd: string): Promise<Sample> {
  const { stdout } = await run(
    process.execPath,
    [...NODE_FLAGS, '-e', LOAD_TIMER, file],
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
