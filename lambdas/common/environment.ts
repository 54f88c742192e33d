import { OncelyConfigurationError } from './configuration-error.js';

/** Environment variables as `process.env` holds them. */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The whole numbers a variable accepts: from `min` to `max` (the largest safe integer by default). */
export interface IntegerRange {
  min: number;
  max?: number;
}

/**
 * Reads a function's environment variables, typed and checked. It collects every problem instead
 * of stopping at the first, so that {@link check} throws one OncelyConfigurationError naming all
 * the variables to fix. An empty variable counts as unset.
 */
export class EnvironmentReader {
  readonly #environment: Environment;
  readonly #problems = new Map<string, string>();

  constructor(environment: Environment = process.env) {
    this.#environment = environment;
  }

  /** A variable that must be set; '' (after recording the problem) when it is not. */
  required(variable: string): string {
    const value = this.#environment[variable];
    if (value === undefined || value === '') {
      this.#problem(variable, value === undefined ? 'is not set' : 'is empty');
      return '';
    }
    return value;
  }

  /** A variable that may be unset. */
  optional(variable: string): string | undefined {
    return this.#environment[variable] || undefined;
  }

  /** An http(s) URL; required unless `optional`. */
  url(variable: string): string;
  url(variable: string, presence: 'optional'): string | undefined;
  url(variable: string, presence?: 'optional'): string | undefined {
    const value = presence === 'optional' ? this.optional(variable) : this.required(variable);
    if (value && !/^https?:\/\/[^/\s]+/.test(value)) {
      this.#problem(variable, `must be an http(s) URL, not ${JSON.stringify(value)}`);
    }
    return value;
  }

  /** An optional `host:port` address (a port from 1 to 65535). */
  endpoint(variable: string): { host: string; port: number } | undefined {
    const value = this.optional(variable);
    if (!value) return undefined;
    const match = /^([^\s:/]+):(\d{1,5})$/.exec(value);
    const port = Number(match?.[2]);
    if (!match || port < 1 || port > 65_535) {
      this.#problem(variable, `must be host:port, not ${JSON.stringify(value)}`);
      return undefined;
    }
    return { host: match[1] as string, port };
  }

  /** An optional whole number in `range`: `fallback` when unset. */
  integer(variable: string, range: IntegerRange, fallback: number): number;
  integer(variable: string, range: IntegerRange): number | undefined;
  integer(variable: string, { min, max = Number.MAX_SAFE_INTEGER }: IntegerRange, fallback?: number) {
    const value = this.optional(variable);
    if (value === undefined) return fallback;
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
      this.#problem(variable, `must be a whole number ${range}, not ${JSON.stringify(value)}`);
    }
    return number;
  }

  /**
   * Throws the configuration error if a variable read so far is missing or invalid:
   * `<subject>: <every problem>. <remedy>`. The remedy says who sets the variables and what else to do.
   */
  check(subject: string, remedy: string): void {
    if (this.#problems.size === 0) return;
    const problems = [...this.#problems].map(([variable, problem]) => `${variable} ${problem}`);
    throw new OncelyConfigurationError(
      [...this.#problems.keys()],
      `${subject}: ${problems.join('; ')}. ${remedy}`,
    );
  }

  #problem(variable: string, problem: string): void {
    this.#problems.set(variable, problem);
  }
}
