const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The producers' shared budget: `ratePerSecond` messages a second between them, and none while the
 * queue holds more than `maxQueued` (the pipeline is behind; publishing more would only deepen it).
 * A pause is not made up for afterwards with a burst.
 */
export class Pacer {
  readonly #msPerMessage: number;
  readonly #maxQueued: number;
  #next = Date.now();
  #queued = 0;

  constructor(options: { ratePerSecond: number; maxQueued: number }) {
    this.#msPerMessage = 1000 / options.ratePerSecond;
    this.#maxQueued = options.maxQueued;
  }

  /** The queue's depth as last sampled. */
  set queued(depth: number) {
    this.#queued = depth;
  }

  /** Resolves when `count` more messages may be published. */
  async take(count: number): Promise<void> {
    while (this.#queued > this.#maxQueued) await sleep(250);
    const at = Math.max(this.#next, Date.now());
    this.#next = at + count * this.#msPerMessage;
    if (at > Date.now()) await sleep(at - Date.now());
  }
}
