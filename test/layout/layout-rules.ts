// The repository's layout rules (DESIGN §10) as functions of an import graph, so that
// imports.test.ts can judge the real graph with them and a made-up one to show that each rule bites.

/** A source file's imports: the repository files it names by a relative path, the packages by name. */
export interface FileImports {
  local: string[];
  packages: string[];
}
export type ImportGraph = ReadonlyMap<string, FileImports>;

/** The package's parts, lowest first: a file may import its own part and the parts below it. */
export const PACKAGE_PARTS = [
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
export const EXAMPLE_PARTS = ['lambdas/shop/', 'lib/shop/', 'bin/app.ts', 'bin/demo.ts', 'demo/'];
/** The example's demo (`npm start`), which the harness never imports. */
const DEMO_PARTS = ['bin/demo.ts', 'demo/'];
/**
 * The harness, above the package and the example app, lowest first: its support, then the
 * commands beside each other. A harness file imports the product (but for the demo), the parts
 * below its own and its own folder: no command imports another.
 */
export const HARNESS_PARTS = [['harness/'], ['bench/', 'chaos/', 'soak/']];
const HARNESS_SUPPORT = 'harness/';

export const startsWithAny = (file: string, prefixes: readonly string[]) =>
  prefixes.some((prefix) => file.startsWith(prefix));
export const packageRank = (file: string) => PACKAGE_PARTS.findIndex((part) => startsWithAny(file, part));
export const isExample = (file: string) => startsWithAny(file, EXAMPLE_PARTS);
const isDemo = (file: string) => startsWithAny(file, DEMO_PARTS);
const isSupport = (file: string) => file.startsWith(HARNESS_SUPPORT);

/** Where a harness file sits: its part's rank and its own folder; undefined outside the harness. */
export function harnessPlace(file: string): { rank: number; folder: string } | undefined {
  for (const [rank, part] of HARNESS_PARTS.entries()) {
    const folder = part.find((prefix) => file.startsWith(prefix));
    if (folder) return { rank, folder };
  }
  return undefined;
}

/** The files of the graph that belong to no part of the package, the example app or the harness. */
export function unsorted(files: readonly string[]): string[] {
  return files.filter((file) => packageRank(file) === -1 && !isExample(file) && !harnessPlace(file));
}

function mayImport(file: string, imported: string): boolean {
  const rank = packageRank(file);
  if (rank !== -1) return packageRank(imported) !== -1 && packageRank(imported) <= rank;
  const place = harnessPlace(file);
  if (!place) return true; // The example app's imports are judged by exampleCrossings.
  const below = harnessPlace(imported);
  if (!below) return packageRank(imported) !== -1 || (isExample(imported) && !isDemo(imported));
  return below.rank < place.rank || below.folder === place.folder;
}

/** Every import of a package or harness file into a part above its own, beside it or outside the rules. */
export function upwardImports(graph: ImportGraph): string[] {
  return [...graph].flatMap(([file, { local }]) =>
    local.filter((imported) => !mayImport(file, imported)).map((imported) => `${file} -> ${imported}`),
  );
}

/** Every circle of imports, each as the path that closes it. */
export function circles(graph: ImportGraph): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]) => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') {
      found.push([...path.slice(path.indexOf(file)), file].join(' -> '));
      return;
    }
    state.set(file, 'open');
    for (const imported of graph.get(file)?.local ?? []) visit(imported, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of graph.keys()) visit(file, []);
  return found;
}

/** The harness support files the demo imports, directly or through each other. */
function supportOfTheDemo(graph: ImportGraph): Set<string> {
  const reached = new Set<string>();
  const reach = (file: string) => {
    for (const imported of graph.get(file)?.local ?? []) {
      if (!isSupport(imported) || reached.has(imported)) continue;
      reached.add(imported);
      reach(imported);
    }
  };
  for (const file of graph.keys()) if (isDemo(file)) reach(file);
  return reached;
}

/**
 * Every import by which the example app reaches the package other than through its public entry
 * points (`entries`, e.g. `oncely/consumer`): the demo may use the harness support, and then what
 * it uses keeps the example's rule too.
 */
export function exampleCrossings(graph: ImportGraph, entries: readonly string[]): string[] {
  const demoSupport = supportOfTheDemo(graph);
  return [...graph]
    .filter(([file]) => isExample(file) || demoSupport.has(file))
    .flatMap(([file, { local, packages }]) =>
      [
        ...local.filter((imported) => !isExample(imported) && !demoSupport.has(imported)),
        ...packages.filter((name) => name.startsWith('oncely') && !entries.includes(name)),
      ].map((imported) => `${file} -> ${imported}`),
    );
}

/** Every import by which the package reaches into the example app, or into itself by its own name. */
export function packageReachingOut(graph: ImportGraph): string[] {
  return [...graph]
    .filter(([file]) => packageRank(file) !== -1)
    .flatMap(([file, { local, packages }]) =>
      [...local.filter(isExample), ...packages.filter((name) => /^oncely(\/|$)/.test(name))].map(
        (imported) => `${file} -> ${imported}`,
      ),
    );
}
