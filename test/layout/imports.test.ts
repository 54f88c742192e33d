import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import packageJson from '../../package.json' with { type: 'json' };

// The repository's layout rules (DESIGN §10), read from the code's own imports: the package's
// folders import one way only, nothing imports in a circle, the example app reaches the package
// through its public entry points alone, and the tarball ships the package without the example.

const ROOT = join(import.meta.dirname, '..', '..');

/** The package's parts, lowest first: a file may import its own part and the parts below it. */
const PACKAGE_PARTS = [
  ['lambdas/common/'],
  ['lambdas/idempotency/'],
  ['lambdas/consumer/', 'lambdas/publisher/', 'lambdas/monitor/'],
  ['lambdas/outbox/', 'lambdas/client/'],
  ['lib/constructs/'],
  ['sandbox/'],
  ['cli/'],
  ['bin/oncely.ts'],
];
/** The example app: the shop's handlers, its stack, its CDK app and its demo. */
const EXAMPLE_PARTS = ['lambdas/shop/', 'lib/shop/', 'bin/app.ts', 'bin/demo.ts', 'demo/'];
const SOURCE_FOLDERS = ['bin', 'lib', 'lambdas', 'cli', 'sandbox', 'demo'];

const startsWithAny = (file: string, prefixes: string[]) =>
  prefixes.some((prefix) => file.startsWith(prefix));
const packageRank = (file: string) => PACKAGE_PARTS.findIndex((part) => startsWithAny(file, part));
const isExample = (file: string) => startsWithAny(file, EXAMPLE_PARTS);

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

/** The repository file a relative specifier names (`./x.js` is the source `./x.ts`). */
function target(from: string, specifier: string): string {
  const path = normalize(join(dirname(from), specifier));
  const candidates = [path, path.replace(/\.js$/, '.ts'), path.replace(/\.js$/, '.mjs')];
  const found = candidates.find((candidate) => known.has(candidate));
  if (!found) throw new Error(`${from} imports ${specifier}, which is no source file of the repository`);
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

describe('the layout (DESIGN §10)', () => {
  it('sorts every source file into a part of the package or of the example app', () => {
    expect(files.length).toBeGreaterThan(150);
    expect(files.filter((file) => packageRank(file) === -1 && !isExample(file))).toEqual([]);
  });

  it("has the package's files import their own part or a part below it, never above", () => {
    const upward = files.flatMap((file) => {
      const rank = packageRank(file);
      if (rank === -1) return [];
      return (imports.get(file)?.local ?? [])
        .filter((imported) => packageRank(imported) === -1 || packageRank(imported) > rank)
        .map((imported) => `${file} -> ${imported}`);
    });
    expect(upward).toEqual([]);
  });

  it('has no import circles', () => {
    const circles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        circles.push([...path.slice(path.indexOf(file)), file].join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const imported of imports.get(file)?.local ?? []) visit(imported, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    expect(circles).toEqual([]);
  });

  it('has the example app reach the package only through its public entry points', () => {
    const entries = Object.keys(packageJson.exports).map((entry) => `oncely${entry.slice(1)}`);
    const crossings = files.filter(isExample).flatMap((file) => {
      const { local = [], packages = [] } = imports.get(file) ?? {};
      return [
        ...local.filter((imported) => !isExample(imported)),
        ...packages.filter((name) => name.startsWith('oncely') && !entries.includes(name)),
      ].map((imported) => `${file} -> ${imported}`);
    });
    expect(crossings).toEqual([]);
    // …and the package never reaches into the example, nor into itself by its own name.
    const reversed = files
      .filter((file) => !isExample(file))
      .flatMap((file) => {
        const { local = [], packages = [] } = imports.get(file) ?? {};
        return [...local.filter(isExample), ...packages.filter((name) => /^oncely(\/|$)/.test(name))].map(
          (imported) => `${file} -> ${imported}`,
        );
      });
    expect(reversed).toEqual([]);
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
