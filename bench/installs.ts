import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// What an install put in a project's node_modules, measured the same way for Oncely and for
// Powertools: the scratch-project tests assert on it and `npm run bench:install` reports it.

/** What a project's node_modules holds: its packages (each nested copy counted) and its size on disk. */
export interface InstallWeight {
  readonly packages: number;
  /** Disk usage, as `du` counts it: allocated blocks, in MB (10^6 bytes). */
  readonly megabytes: number;
  /** Java archives anywhere in it: a sign of a Java program such as DynamoDB Local. */
  readonly jars: number;
}

/** One installed copy of a package: where, and which version. */
export interface InstalledCopy {
  readonly path: string;
  readonly version: string;
}

export function installWeight(project: string): InstallWeight {
  const files = { bytes: 0, jars: 0 };
  walkFiles(join(project, 'node_modules'), files);
  return {
    packages: packageDirectories(join(project, 'node_modules')).length,
    megabytes: Math.round(files.bytes / 1e5) / 10,
    jars: files.jars,
  };
}

/** Every copy of package `name` in the project's node_modules, at the top and nested. */
export function installedCopies(project: string, name: string): InstalledCopy[] {
  return packageDirectories(join(project, 'node_modules'))
    .filter((directory) => directory.endsWith(`/node_modules/${name}`))
    .map((path) => ({ path, version: readVersion(path) }));
}

/** The packages in a node_modules folder and, recursively, in theirs. */
function packageDirectories(nodeModules: string): string[] {
  const found: string[] = [];
  for (const entry of entries(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@')
      ? entries(join(nodeModules, entry)).map((name) => `${entry}/${name}`)
      : [entry];
    for (const name of names) {
      const directory = join(nodeModules, name);
      found.push(directory, ...packageDirectories(join(directory, 'node_modules')));
    }
  }
  return found;
}

function walkFiles(directory: string, totals: { bytes: number; jars: number }): void {
  for (const entry of entries(directory)) {
    const path = join(directory, entry);
    const stat = lstatSync(path);
    totals.bytes += stat.blocks * 512;
    if (stat.isDirectory()) walkFiles(path, totals);
    else if (entry.endsWith('.jar')) totals.jars += 1;
  }
}

function entries(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}

function readVersion(directory: string): string {
  return (JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { version: string }).version;
}
