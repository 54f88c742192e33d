import { IdempotencyInProgressError, RecordNotWrittenError } from '../idempotency/errors.js';
import { recordId } from '../idempotency/keys.js';
import type {
  CompletionVerdict,
  LeaseIdempotency,
  LeaseInput,
  LeaseStart,
  StartVerdict,
} from '../idempotency/lease.js';
import type { Lease } from '../idempotency/store.js';
import type { OperationOutcome, OperationRuntime } from './operations.js';
import { asStoreFailure } from './store-failure.js';

/** How a turn ended: its outcome, or — its completion still being written — its outcome once written. */
export type OperationStep = OperationOutcome | { settling: Promise<OperationOutcome> };

/** What a lease-mode record's turn is made of: its operation's core, its input, and its effect. */
export interface LeaseTurnParts {
  namespace: string;
  idempotency: LeaseIdempotency;
  input: LeaseInput;
  runtime: OperationRuntime;
  /** Runs the operation's function under `lease`. */
  effect(lease: Lease): Promise<unknown>;
}

/** The next record's turn, when its lease waits for the start mark this turn's completion can carry. */
export interface WaitingSuccessor {
  turn: LeaseTurn;
  lease: Lease;
}

/**
 * One lease-mode record of a FIFO group: its lease (taken ahead of its turn, with the rest of its
 * group, or at its turn), the start mark an ahead lease needs (at-most-once), the effect, and its
 * record. Its completion is written together with the next record's start mark when that lease
 * waits for one; otherwise it is written while the next record runs (`settling`).
 */
export class LeaseTurn {
  readonly id: string;
  readonly #parts: LeaseTurnParts;
  #start: Promise<LeaseStart<unknown>> | undefined;
  /** What the predecessor's completion did with this lease's start mark. */
  #marked: Exclude<StartVerdict, 'not-started'> | undefined;
  /** Its turn has come: from then on the turn settles its lease, nothing gives it back unused. */
  #due = false;

  constructor(parts: LeaseTurnParts) {
    this.#parts = parts;
    this.id = recordId(parts.namespace, parts.input.key);
  }

  /** Whether the predecessor's completion already marked this lease started: its effect may run. */
  get started(): boolean {
    return this.#marked === 'started';
  }

  /**
   * Takes the lease before the record's turn, so that a group's leases are taken together. Only the
   * group's first record (`first`) takes it as started: the others' effects wait for their turn.
   */
  takeAhead(first: boolean): void {
    this.#start ??= this.#acquire(!first);
  }

  /** Its lease, if taken ahead and still waiting for its start mark before its turn. */
  async waitingLease(): Promise<Lease | undefined> {
    const start = await this.#start?.catch(() => undefined);
    if (this.#due || this.#marked || start?.status !== 'acquired' || !start.awaitingStart) return undefined;
    return start.lease;
  }

  /**
   * The record's turn: start (or the lease taken ahead), start mark, effect, record. `successor`
   * finds the next record's lease when it waits for a start mark (and may start now). Throws the
   * record's failure, as `ConsumerOperation.execute` does.
   */
  async run(successor: () => Promise<WaitingSuccessor | undefined>): Promise<OperationStep> {
    const { idempotency, input, runtime } = this.#parts;
    this.#due = true;
    this.#start ??= this.#acquire(false);
    const start = await this.#start;
    if (start.status !== 'acquired') return start.status;
    const { lease } = start;
    if (runtime.signal.aborted) {
      await this.#giveBack(lease, 'the batch failed before the effect started');
      throw runtime.signal.reason;
    }
    if (this.#marked === 'lease-lost') throw new IdempotencyInProgressError(lease.id, runtime.store.now());
    if (start.awaitingStart && this.#marked !== 'started') await this.#markStarted(lease);
    let result: unknown;
    try {
      result = await this.#parts.effect(lease);
    } catch (error) {
      // Throws RecordNotWrittenError when the failure cannot be recorded: then no acknowledgement.
      if ((await idempotency.recordFailure(lease, error, input.message)) === 'in-doubt') return 'in-doubt';
      throw error;
    }
    const next = await successor();
    if (next) {
      const written = await idempotency.recordCompletionAndStart(lease, result, next.lease);
      next.turn.#markedByPredecessor(written.next);
      return executed(written.completion);
    }
    // No acknowledgement without a record (DESIGN §3), but the group need not wait for it: the
    // COMPLETED write goes on while the next record runs, and a failure of it stops the group then.
    return { settling: idempotency.recordCompletion(lease, result).then(executed) };
  }

  /** Gives back a lease taken ahead whose turn never came: its group stopped, or ran out of time. */
  async giveBackIfUnused(): Promise<void> {
    if (this.#due || !this.#start || this.#marked === 'lease-lost') return;
    const start = await this.#start.catch(() => undefined);
    if (start?.status === 'acquired') await this.#giveBack(start.lease, 'its group stopped before its turn');
  }

  #acquire(ahead: boolean): Promise<LeaseStart<unknown>> {
    const { idempotency, input, namespace } = this.#parts;
    const start = idempotency.start(input, { ahead }).catch((error: unknown) => {
      throw asStoreFailure(namespace, input.key, error);
    });
    start.catch(() => undefined); // met at its turn; until then not an unhandled rejection
    return start;
  }

  async #markStarted(lease: Lease): Promise<void> {
    const { idempotency, input, namespace, runtime } = this.#parts;
    let marked: boolean;
    try {
      marked = await idempotency.markStarted(lease);
    } catch (error) {
      await this.#giveBack(lease, 'its start mark could not be written');
      throw asStoreFailure(namespace, input.key, error);
    }
    if (!marked) throw new IdempotencyInProgressError(lease.id, runtime.store.now());
  }

  #markedByPredecessor(verdict: StartVerdict): void {
    if (verdict === 'not-started') return;
    this.#marked = verdict;
    if (verdict === 'lease-lost') this.#parts.runtime.telemetry.leaseLost(this.id, 'start');
  }

  /**
   * Gives up a lease whose effect never started, so the redelivery runs afresh instead of finding it
   * IN_PROGRESS. Tried a few times; if it still fails the lease expires on its own (and one taken
   * ahead, never marked started, is then taken over rather than parked).
   */
  async #giveBack(lease: Lease, why: string): Promise<void> {
    const { store, telemetry } = this.#parts.runtime;
    const released = await store.releaseWithRetries(lease);
    if (released.value === true) {
      telemetry.logger.info(`released the lease unused: ${why}`, { idempotencyKey: lease.id });
    } else if (released.value === false) {
      telemetry.leaseLost(lease.id, 'release');
    } else {
      telemetry.logger.error('could not release the lease; it expires on its own', {
        idempotencyKey: lease.id,
        leaseExpiresAt: new Date(lease.expiresAt).toISOString(),
        error: released.error,
      });
    }
  }
}

/** A completion's verdict as the turn's outcome: not written means no acknowledgement. */
function executed(completion: CompletionVerdict): OperationOutcome {
  if (completion instanceof RecordNotWrittenError) throw completion;
  return 'executed';
}
