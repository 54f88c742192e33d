import { OncelyConfigurationError } from './configuration-error.js';

/**
 * The keys of an options type, each `true`. Written `{ … } satisfies KnownKeys<Options>`, the one
 * list of an options type's keys: the compiler refuses it while it misses a key of the type or
 * names one the type lacks, so it cannot drift from the type.
 */
export type KnownKeys<T> = { readonly [K in keyof T]-?: true };

/**
 * One sentence per own key of `object` that `known` lacks, naming the nearest known key, or saying
 * that none is close. A known key whose value is `undefined` is fine. Pure.
 *
 * @param noun what a key is called where it was written: `option`, `prop`
 */
export function unknownKeyProblems(
  object: object,
  known: Readonly<Record<string, true>>,
  noun: string,
): string[] {
  const names = Object.keys(known);
  return Object.keys(object)
    .filter((key) => !Object.hasOwn(known, key))
    .map((key) => {
      const nearest = nearestName(key, names);
      return nearest === undefined
        ? `unknown ${noun} "${key}" (none is close; the ${noun}s are ${names.join(', ')})`
        : `unknown ${noun} "${key}": did you mean "${nearest}"?`;
    });
}

/**
 * Throws OncelyConfigurationError, naming each unknown key and the nearest known one, if `options`
 * has an own key `known` lacks: a misspelt option would otherwise be ignored in silence (from
 * JavaScript, or from configuration). `undefined` options are fine.
 *
 * @param where who took the options, as the message names it: `fifoBatch()`, `new Outbox()`
 */
export function refuseUnknownKeys(
  where: string,
  options: object | undefined,
  known: Readonly<Record<string, true>>,
): void {
  if (options === undefined) return;
  const problems = unknownKeyProblems(options, known, 'option');
  if (problems.length === 0) return;
  const keys = Object.keys(options).filter((key) => !Object.hasOwn(known, key));
  throw new OncelyConfigurationError(keys, `${where}: ${problems.join('; ')}`);
}

/**
 * The name nearest `key` by edit distance (letter case aside), if it is close: within a third of
 * the longer one's length, and at least one edit. The first of equally near names.
 */
function nearestName(key: string, names: readonly string[]): string | undefined {
  let nearest: string | undefined;
  let nearestDistance = Number.POSITIVE_INFINITY;
  for (const name of names) {
    const distance = editDistance(key.toLowerCase(), name.toLowerCase());
    const close = distance <= Math.max(1, Math.floor(Math.max(key.length, name.length) / 3));
    if (close && distance < nearestDistance) {
      nearest = name;
      nearestDistance = distance;
    }
  }
  return nearest;
}

/**
 * Edits (insert, delete, replace, or swap two neighbours) that turn `a` into `b`: the optimal
 * string alignment distance, so that a typo's swapped letters count once.
 */
function editDistance(a: string, b: string): number {
  // rows[i][j]: the distance between a's first i letters and b's first j.
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[];
    for (let j = 1; j <= b.length; j++) {
      const replace = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + replace);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, at(i - 2, j - 2) + 1);
      }
      row[j] = distance;
    }
  }
  return at(a.length, b.length);
}
