import { OncelyError } from '../lambdas/common/oncely-error.js';
/**
 * A filter pattern of an event source mapping (`FilterCriteria.Filters[].Pattern`) that the sandbox
 * cannot apply: not JSON, not a pattern, or with an operator outside the subset it emulates.
 */
export class UnsupportedFilterPatternError extends OncelyError {
  static override readonly errorName: string = 'UnsupportedFilterPatternError';
  readonly retryable = false;
}

/** Whether Lambda would pass a record (as the function would receive it) to the function. */
export type RecordFilter = (record: unknown) => boolean;

type Matcher = (value: unknown) => boolean;

/**
 * Lambda's event filtering: a record passes when it matches any of the patterns (all pass when there
 * are none). A pattern names keys, nested as in the record; a key's array lists what its value may
 * be: an exact value (`null` and `""` included), `{ "exists": bool }`, `{ "prefix": "…" }`,
 * `{ "anything-but": value or [values] }` or `{ "numeric": [op, n, (op, n)] }`. A record value that
 * is an array matches when one of its elements does. Throws {@link UnsupportedFilterPatternError}
 * for anything else, as Lambda refuses a pattern it cannot read.
 */
export function compileFilters(patterns: readonly string[]): RecordFilter {
  const compiled = patterns.map(compilePattern);
  if (compiled.length === 0) return () => true;
  return (record) => compiled.some((matches) => matches(record));
}

function compilePattern(pattern: string): Matcher {
  let parsed: unknown;
  try {
    parsed = JSON.parse(pattern);
  } catch {
    throw new UnsupportedFilterPatternError(`filter pattern ${pattern} is not JSON`);
  }
  if (!isPlainObject(parsed)) {
    throw new UnsupportedFilterPatternError(`filter pattern ${pattern} is not a JSON object`);
  }
  return compileObject(parsed, pattern);
}

function compileObject(pattern: Record<string, unknown>, source: string): Matcher {
  const fields = Object.entries(pattern).map(([key, rule]): [string, Matcher] => {
    if (Array.isArray(rule)) return [key, compileLeaf(rule, source)];
    if (isPlainObject(rule)) return [key, compileObject(rule, source)];
    throw new UnsupportedFilterPatternError(
      `filter pattern ${source}: the rule of ${key} must be an array or an object`,
    );
  });
  return (value) => fields.every(([key, matches]) => matches(isPlainObject(value) ? value[key] : undefined));
}

/** A key's array of allowed values: any one of them may match. */
function compileLeaf(rules: unknown[], source: string): Matcher {
  const matchers = rules.map((rule) => compileRule(rule, source));
  return (value) => matchers.some((matches) => matches(value));
}

function compileRule(rule: unknown, source: string): Matcher {
  if (rule === null || ['string', 'number', 'boolean'].includes(typeof rule)) {
    return anyElement((value) => value === rule);
  }
  const entries = isPlainObject(rule) ? Object.entries(rule) : [];
  const [operator, operand] = entries[0] ?? [];
  if (entries.length === 1) {
    if (operator === 'exists' && typeof operand === 'boolean') {
      return (value) => isLeaf(value) === operand;
    }
    if (operator === 'prefix' && typeof operand === 'string') {
      return anyElement((value) => typeof value === 'string' && value.startsWith(operand));
    }
    if (operator === 'anything-but') {
      const excluded = new Set<unknown>(Array.isArray(operand) ? operand : [operand]);
      if ([...excluded].every((item) => typeof item === 'string' || typeof item === 'number')) {
        return anyElement((value) => isLeaf(value) && value !== null && !excluded.has(value));
      }
    }
    if (operator === 'numeric') {
      const test = numericTest(operand);
      if (test) return anyElement((value) => typeof value === 'number' && test(value));
    }
  }
  throw new UnsupportedFilterPatternError(
    `filter pattern ${source}: ${JSON.stringify(rule)} is not an operator the sandbox emulates ` +
      '(exact values, exists, prefix, anything-but, numeric)',
  );
}

const COMPARISONS: Record<string, (value: number, bound: number) => boolean> = {
  '=': (value, bound) => value === bound,
  '<': (value, bound) => value < bound,
  '<=': (value, bound) => value <= bound,
  '>': (value, bound) => value > bound,
  '>=': (value, bound) => value >= bound,
};

/** `[op, n]` or `[op, n, op, n]` (a range), as EventBridge's numeric matching takes them. */
function numericTest(operand: unknown): ((value: number) => boolean) | undefined {
  if (!Array.isArray(operand) || (operand.length !== 2 && operand.length !== 4)) return undefined;
  const tests: ((value: number) => boolean)[] = [];
  for (let i = 0; i < operand.length; i += 2) {
    const compare = COMPARISONS[String(operand[i])];
    const bound = operand[i + 1];
    if (!compare || typeof bound !== 'number') return undefined;
    tests.push((value) => compare(value, bound));
  }
  return (value) => tests.every((test) => test(value));
}

/** A record value that is an array matches when one of its elements does. */
function anyElement(matches: Matcher): Matcher {
  return (value) => (Array.isArray(value) ? value.some(matches) : matches(value));
}

/** `exists` looks at leaves only: a value that is itself an object of keys does not count. */
function isLeaf(value: unknown): boolean {
  return value !== undefined && !isPlainObject(value);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A mapping's `FilterCriteria` as the patterns' JSON texts, or why the sandbox cannot apply them
 * (the mapping then does not run, and is listed with the note).
 */
export function filterPatternsOf(criteria: {
  Filters?: { Pattern?: string }[];
}): { patterns: string[] } | { note: string } {
  const patterns = (criteria.Filters ?? [])
    .map((filter) => filter.Pattern)
    .filter((pattern): pattern is string => pattern !== undefined);
  try {
    compileFilters(patterns);
  } catch (error) {
    if (!(error instanceof UnsupportedFilterPatternError)) throw error;
    return { note: error.message };
  }
  return { patterns };
}
