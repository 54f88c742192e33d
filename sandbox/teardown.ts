/** Stops a part that has started. */
export type Stop = () => Promise<void> | void;

/**
 * What a start-up has started, stopped latest first: what starts later uses what started before it
 * (a poller its function and queue), so it stops before them.
 */
export class Teardown {
  readonly #stops: Stop[] = [];
  #stopping: Promise<void> | undefined;

  /** Adds the stop of a part that has started. */
  add(stop: Stop): void {
    this.#stops.push(stop);
  }

  /** Waits for a part to start, then adds its stop. */
  async started<T>(starting: Promise<T>, stopOf: (value: T) => Promise<void> | void): Promise<T> {
    const value = await starting;
    this.add(() => stopOf(value));
    return value;
  }

  /** Runs every stop once, however often it is called; the first failure is thrown once all have run. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      let failure: unknown;
      for (const stop of [...this.#stops].reverse()) {
        try {
          await stop();
        } catch (error) {
          failure ??= error;
        }
      }
      if (failure !== undefined) throw failure;
    })();
    return this.#stopping;
  }
}
