import { setTimeout as sleep } from 'node:timers/promises';
import { IdempotencyStoreUnavailableError } from '../lambdas/consumer/index.js';

/** The message type of the record a `deliver-abort` step adds to its batch, in a group of its own. */
export const CHAOS_ABORT_TYPE = 'ChaosBatchAbort';

/** How long the abort waits for an at-most-once effect before failing the batch anyway. */
const EFFECT_WAIT_MS = 500;

/**
 * A batch that fails as a whole while an at-most-once effect runs (issue 26, finding 3), for one
 * invocation. The batch carries a record of its own type whose operation stands for another
 * group's request being throttled: once the batch's first at-most-once effect has applied, it
 * throws the consumer's batch-wide error, and that effect waits until the batch has failed before
 * it returns. From then on DynamoDB refuses every request but that record's own (its completion
 * goes through; the give-back of the leases after it does not).
 */
export class PlannedAbort {
  /** The key whose effect ran while the batch failed; undefined until an at-most-once effect applied. */
  spared: string | undefined;
  #aborted = false;
  readonly #signal: Promise<AbortSignal>;
  readonly #effectApplied: Promise<void>;
  #setSignal!: (signal: AbortSignal) => void;
  #applied: () => void = () => undefined;

  /** @param awaitEffect whether the batch holds an at-most-once record: else it fails at once. */
  constructor(awaitEffect: boolean) {
    this.#signal = new Promise((resolve) => (this.#setSignal = resolve));
    this.#effectApplied = awaitEffect
      ? new Promise((resolve) => (this.#applied = resolve))
      : Promise.resolve();
  }

  /** Whether DynamoDB now refuses a request on record `id` (`namespace#key`). */
  refuses(id: string | undefined): boolean {
    return this.#aborted && !(this.spared !== undefined && id?.endsWith(`#${this.spared}`));
  }

  get aborted(): boolean {
    return this.#aborted;
  }

  /** Inside the batch's first at-most-once effect, once applied: the batch fails now; wait for it. */
  async effectApplied(key: string): Promise<void> {
    if (this.spared !== undefined) return;
    this.spared = key;
    this.#applied();
    const signal = await this.#signal;
    if (!signal.aborted)
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
  }

  /** What the abort record's operation does: it learns the batch's signal, and fails the batch. */
  async execute(key: string, signal: AbortSignal): Promise<never> {
    signal.addEventListener('abort', () => (this.#aborted = true), { once: true });
    this.#setSignal(signal);
    await Promise.race([this.#effectApplied, sleep(EFFECT_WAIT_MS)]);
    const throttled = Object.assign(new Error('Rate of requests exceeds the allowed throughput'), {
      name: 'ThrottlingException',
    });
    throw new IdempotencyStoreUnavailableError(`chaos-abort#${key}`, throttled);
  }
}
