/**
 * Where Lambda Managed Instances place an invocation: in an execution environment that runs fewer
 * than `maxConcurrency` invocations, or a new one when all are full
 * (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-nodejs-runtime.html,
 * `PerExecutionEnvironmentMaxConcurrency`). An environment counts from the moment it is asked for,
 * so that invocations arriving together while it starts share it instead of each starting one.
 */
export class EnvironmentSlots<T> {
  readonly #maxConcurrency: number;
  readonly #start: () => Promise<T>;
  readonly #entries: { environment: Promise<T>; inFlight: number }[] = [];

  /** @param start - starts an environment; what it resolves to is handed to its invocations. */
  constructor(maxConcurrency: number, start: () => Promise<T>) {
    this.#maxConcurrency = maxConcurrency;
    this.#start = start;
  }

  /**
   * A slot in an environment with room (the fullest first, so that concurrent invocations share one
   * rather than spread), or in a new one. `release` frees the slot once its invocation is over.
   */
  take(): { environment: Promise<T>; release: () => void } {
    const withRoom = this.#entries
      .filter((entry) => entry.inFlight < this.#maxConcurrency)
      .sort((a, b) => b.inFlight - a.inFlight)[0];
    const entry = withRoom ?? { environment: this.#start(), inFlight: 0 };
    if (!withRoom) this.#entries.push(entry);
    entry.inFlight++;
    let released = false;
    return {
      environment: entry.environment,
      release: () => {
        if (released) return;
        released = true;
        entry.inFlight--;
      },
    };
  }

  /** Forgets an environment (it ended, or never started): no invocation is placed in it any more. */
  remove(environment: Promise<T>): void {
    const index = this.#entries.findIndex((entry) => entry.environment === environment);
    if (index >= 0) this.#entries.splice(index, 1);
  }

  /** Forgets every environment. */
  clear(): void {
    this.#entries.length = 0;
  }
}
