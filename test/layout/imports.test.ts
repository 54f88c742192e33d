import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };
import {
  circles,
  exampleCrossings,
  type FileImports,
  type ImportGraph,
  PACKAGE_PARTS,
  packageReachingOut,
  startsWithAny,
  unsorted,
  upwardImports,
} from './layout-rules.js';

// The repository's layout rules (DESIGN §10), read from the code's own imports: the package's
// folders import one way only, the harness's folders too, nothing imports in a circle, the example
// app reaches the package through its public entry points alone, and the tarball ships the package
// without the example. The rules themselves are in layout-rules.ts.

const ROOT = join(import.meta.dirname, '..', '..');
const SOURCE_FOLDERS = [
  'bin',
  'lib',
  'lambdas',
  'cli',
  'sandbox',
  'demo',
  'harness',
  'bench',
  'chaos',
  'soak',
];

function sourceFiles(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ts|mjs)$/.test(name))
    .map((name) => `${folder}/${name}`);
}

/**
 * Every module a file names in an import, an export … from, or an import() with a literal. A
 * statement's clause holds no `;`, so an `export const …;` is not read on into a doc comment's example.
 */
function specifiers(text: string): string[] {
  const pattern =
    /(?:^|\n)\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g;
  return [...text.matchAll(pattern)].map((match) => match[1] ?? match[2] ?? match[3] ?? '');
}

const files = SOURCE_FOLDERS.flatMap(sourceFiles);
const known = new Set(files);

/**
 * The repository file a relative specifier names (`./x.js` is the source `./x.ts`): one outside the
 * source folders too (`test/support/…`), for the rules to report.
 */
function target(from: string, specifier: string): string {
  const path = normalize(join(dirname(from), specifier));
  const candidates = [path, path.replace(/\.js$/, '.ts'), path.replace(/\.js$/, '.mjs')];
  const found = candidates.find((candidate) => known.has(candidate) || existsSync(join(ROOT, candidate)));
  if (!found) throw new Error(`${from} imports ${specifier}, which is no file of the repository`);
  return found;
}

const imports = new Map(
  files.map((file) => {
    const named = specifiers(readFileSync(join(ROOT, file), 'utf8'));
    return [
      file,
      {
        local: named
          .filter((specifier) => specifier.startsWith('.'))
          .map((specifier) => target(file, specifier)),
        packages: named.filter((specifier) => !specifier.startsWith('.')),
      },
    ];
  }),
);

const entries = Object.keys(packageJson.exports).map((entry) => `oncely${entry.slice(1)}`);

describe('the layout (DESIGN §10)', () => {
  it('sorts every source file into a part of the package, of the example app or of the harness', () => {
    expect(files.length).toBeGreaterThan(300);
    expect(unsorted(files)).toEqual([]);
  });

  it("has the package's and the harness's files import their own part or a part below it, never above", () => {
    expect(upwardImports(imports)).toEqual([]);
  });

  it('has no import circles', () => {
    expect(circles(imports)).toEqual([]);
  });

  it('has the example app reach the package only through its public entry points', () => {
    expect(exampleCrossings(imports, entries)).toEqual([]);
    // …and the package never reaches into the example, nor into itself by its own name.
    expect(packageReachingOut(imports)).toEqual([]);
  });

  it('packs the library, its constructs and its command, without the example app', async () => {
    // dist/ is what `npm test` built first.
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
      cwd: ROOT,
      maxBuffer: 1 << 24,
    });
    const packed: string[] = JSON.parse(stdout)[0].files.map((file: { path: string }) => file.path);
    const built = PACKAGE_PARTS.flat().map((part) => `dist/${part.replace(/ts$/, '')}`);
    expect(
      packed.filter((file) => !['README.md', 'package.json'].includes(file) && !startsWithAny(file, built)),
    ).toEqual([]);
    const promised = [
      ...Object.values(packageJson.exports).flatMap((entry) =>
        typeof entry === 'string' ? [entry] : Object.values(entry),
      ),
      ...Object.values(packageJson.bin),
    ].map((file) => relative('.', file));
    expect(promised.filter((file) => !packed.includes(file))).toEqual([]);
  });
});

/** A made-up graph: each file with the repository files it imports, and no packages unless given. */
function graph(edges: Record<string, string[]>, packages: Record<string, string[]> = {}): ImportGraph {
  return new Map(
    Object.entries(edges).map(([file, local]): [string, FileImports] => [
      file,
      { local, packages: packages[file] ?? [] },
    ]),
  );
}

describe('the layout rules bite', () => {
  it('report a harness support file that imports a command, and a command that imports another or the demo', () => {
    expect(
      upwardImports(
        graph({
          'harness/statistics.ts': ['bench/report.ts'],
          'bench/outbox-fleet.ts': ['soak/pacer.ts', 'harness/faults.ts', 'lambdas/outbox/relay.ts'],
          'soak/soak-run.ts': ['demo/wait-for.ts', 'chaos/faults.ts', 'lambdas/shop/consumer/ledger.ts'],
          'chaos/pipeline-run.ts': ['chaos/faults.ts', 'harness/pipeline-state.ts', 'lib/shop/shop-stack.ts'],
        }),
      ),
    ).toEqual([
      'harness/statistics.ts -> bench/report.ts',
      'bench/outbox-fleet.ts -> soak/pacer.ts',
      'soak/soak-run.ts -> demo/wait-for.ts',
      'soak/soak-run.ts -> chaos/faults.ts',
    ]);
  });

  it('report the package importing the harness, and a file of no part', () => {
    expect(upwardImports(graph({ 'sandbox/tables.ts': ['harness/hash.ts'] }))).toEqual([
      'sandbox/tables.ts -> harness/hash.ts',
    ]);
    expect(unsorted(['bench/run.ts', 'harness/hash.ts', 'tools/api-report.ts'])).toEqual([
      'tools/api-report.ts',
    ]);
  });

  it('report a circle of two modules', () => {
    expect(
      circles(graph({ 'bench/report.ts': ['bench/targets.ts'], 'bench/targets.ts': ['bench/report.ts'] })),
    ).toEqual(['bench/report.ts -> bench/targets.ts -> bench/report.ts']);
  });

  it("report the demo reaching the package's internals through the harness support", () => {
    expect(
      exampleCrossings(
        graph(
          {
            'demo/run-demo.ts': ['harness/wait-for.ts', 'harness/outbox-snapshot.ts'],
            'harness/wait-for.ts': [],
            'harness/outbox-snapshot.ts': ['lambdas/outbox/layout.ts', 'lambdas/shop/orders/place-order.ts'],
          },
          { 'harness/outbox-snapshot.ts': ['oncely/cdk', 'oncely/outbox/layout'] },
        ),
        ['oncely/cdk'],
      ),
    ).toEqual([
      'harness/outbox-snapshot.ts -> lambdas/outbox/layout.ts',
      'harness/outbox-snapshot.ts -> oncely/outbox/layout',
    ]);
  });
});
