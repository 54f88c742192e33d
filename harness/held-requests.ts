/** Raised when `waitForHung` sees fewer held requests than expected within its bound. */
export class HungRequestTimeoutError extends Error {
  override readonly name = 'HungRequestTimeoutError';
}

interface Held {
  readonly hung: boolean;
  /** true: go on; false: the proxy closed, drop the request. */
  settle(goOn: boolean): void;
}

interface Watcher {
  readonly count: number;
  resolve(): void;
}

/**
 * The requests the proxy keeps waiting: `hang`s until released, `delay`s until their timer.
 * Closing lets go of all of them at once, as dropped, so nothing outlives the proxy.
 */
export class HeldRequests {
  readonly #held = new Set<Held>();
  readonly #watchers = new Set<Watcher>();
  #closed = false;

  /** Resolves with whether the request may go on: true after `releaseHung`, false after `close`. */
  hang(): Promise<boolean> {
    const { done } = this.#hold(true, () => undefined);
    for (const watcher of this.#watchers) if (this.hung >= watcher.count) watcher.resolve();
    return done;
  }

  /** Resolves with true after `ms`, or false if the proxy closed first. */
  delay(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const { held, done } = this.#hold(false, () => clearTimeout(timer));
    if (held) timer = setTimeout(() => held.settle(true), ms);
    return done;
  }

  get hung(): number {
    return [...this.#held].filter((held) => held.hung).length;
  }

  releaseHung(): void {
    this.#settleWhere((held) => held.hung, true);
  }

  /** Resolves once at least `count` requests hang — the caller is then stuck at that step. */
  waitForHung(count: number, timeoutMs: number): Promise<void> {
    if (this.hung >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const watcher: Watcher = {
        count,
        resolve: () => {
          clearTimeout(timer);
          this.#watchers.delete(watcher);
          resolve();
        },
      };
      const timer = setTimeout(() => {
        this.#watchers.delete(watcher);
        reject(new HungRequestTimeoutError(`${this.hung} of ${count} requests hung within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#watchers.add(watcher);
    });
  }

  close(): void {
    this.#closed = true;
    this.#settleWhere(() => true, false);
  }

  #hold(hung: boolean, cancel: () => void): { held?: Held; done: Promise<boolean> } {
    if (this.#closed) return { done: Promise.resolve(false) };
    let held: Held | undefined;
    const done = new Promise<boolean>((resolve) => {
      const entry: Held = {
        hung,
        settle: (goOn) => {
          this.#held.delete(entry);
          cancel();
          resolve(goOn);
        },
      };
      this.#held.add(entry);
      held = entry;
    });
    return { held, done };
  }

  #settleWhere(select: (held: Held) => boolean, goOn: boolean): void {
    for (const held of [...this.#held]) if (select(held)) held.settle(goOn);
  }
}
