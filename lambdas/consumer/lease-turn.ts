import { IdempotencyInProgressError, RecordNotWrittenError } from '../idempotency/errors.js';
import { recordId } from '../idempotency/keys.js';
import type {
  AheadStart,
  CompletionVerdict,
  HeldLeases,
  IdempotencyMode,
  LeaseCore,
  LeaseInput,
  LeaseStart,
} from '../idempotency/lease.js';
import type { Lease } from '../idempotency/lease-store.js';
import { AttemptsExhaustedError } from './errors.js';
import type { OperationOutcome, OperationRuntime } from './operation-runtime.js';
import { asStoreFailure } from './store-failure.js';

/** How a turn ended: its outcome, or — its completion still being written — its outcome once written. */
export type OperationStep = OperationOutcome | { settling: Promise<OperationOutcome> };

/** What a lease-mode record's turn is made of: its operation's core, its input, and its effect. */
export interface LeaseTurnParts {
  namespace: string;
  idempotency: LeaseCore;
  input: LeaseInput;
  /** The SQS message id of the record's delivery: one the consumer dead-lettered is not run again. */
  messageId: string;
  runtime: OperationRuntime;
  /** Runs the operation's function under `lease`. */
  effect(lease: Lease): Promise<unknown>;
}

/** The next record's turn, when its lease waits for the start mark this turn's completion can carry. */
export interface WaitingSuccessor {
  turn: LeaseTurn;
  lease: Lease;
}

/** Where a turn stands in its group: the record before it, and the leases the group holds. */
export interface TurnPlace {
  /** The id of the group's previous record, when it is a lease-mode record too. */
  after?: string;
  held: HeldLeases;
}

/**
 * One lease-mode record of a FIFO group: its lease (taken ahead of its turn, with the rest of its
 * group, or at its turn), the start mark an ahead lease needs (at-most-once), the effect, and its
 * record. Its completion carries the next record's start when that lease waits for one; otherwise
 * it is written while the next record runs (`settling`).
 */
export class LeaseTurn {
  readonly id: string;
  readonly #parts: LeaseTurnParts;
  #start: Promise<AheadStart<unknown>> | undefined;
  #place: TurnPlace = {
    held() {
      return undefined;
    },
  };
  /** The lease it holds, once acquired: the group's other turns may need to know it is this invocation's. */
  #lease: Lease | undefined;
  /** Whether the predecessor's completion started this lease. */
  #startedByPredecessor = false;
  /** Its turn has come: from then on the turn settles its lease, nothing gives it back unused. */
  #due = false;
  /** The turn of the same key earlier in the group, when this one is a later copy of it. */
  #original: LeaseTurn | undefined;
  /**
   * What a later copy of its key waits for: its COMPLETED write while that goes on after its turn
   * (rejected with RecordNotWrittenError if it failed); otherwise its record was written already.
   */
  #written: Promise<unknown> = Promise.resolve();

  constructor(parts: LeaseTurnParts) {
    this.#parts = parts;
    this.id = recordId(parts.namespace, parts.input.key);
  }

  /** Whether the predecessor's completion already marked this lease started: its effect may run. */
  get started(): boolean {
    return this.#startedByPredecessor;
  }

  /** The token of the lease this turn holds, if it acquired one. */
  get heldToken(): string | undefined {
    return this.#lease?.token;
  }

  /**
   * Takes the lease before the record's turn, so that a group's leases are taken together. Only the
   * group's first record (`first`) takes it as started: the others' effects wait for their turn.
   */
  takeAhead(first: boolean, place: TurnPlace): void {
    this.#place = place;
    this.#start ??= this.#acquire(!first);
  }

  /**
   * Makes this turn a later copy of `original`'s key in the group: it takes no lease ahead, and at
   * its turn it waits for `original`'s record to be written first — a COMPLETED write still going
   * on is this invocation's own, and the copy is its duplicate, not a key held elsewhere.
   */
  follow(original: LeaseTurn): void {
    this.#original = original;
  }

  /** The mode of its operation. */
  get mode(): IdempotencyMode {
    return this.#parts.idempotency.mode;
  }

  /**
   * Its lease, if taken ahead `after` the record `id` names and still waiting for its start before
   * its turn: that record's completion may start it (its recovery reads that record to tell).
   */
  async waitingLeaseAfter(id: string): Promise<Lease | undefined> {
    const start = await this.#start?.catch(() => undefined);
    if (this.#due || this.#startedByPredecessor || this.#place.after !== id) return undefined;
    return start?.status === 'acquired' && start.awaitingStart ? start.lease : undefined;
  }

  /**
   * The record's turn: start (or the lease taken ahead), start mark, effect, record. `successor`
   * finds the next record's lease when it waits for a start mark (and may start now). Throws the
   * record's failure, as `ConsumerOperation.execute` does.
   */
  async run(successor: () => Promise<WaitingSuccessor | undefined>): Promise<OperationStep> {
    const { idempotency, input, runtime } = this.#parts;
    this.#due = true;
    // Throws the original's RecordNotWrittenError when its write failed: the copy is not acknowledged either.
    if (this.#original) await this.#original.#written;
    const ahead = await this.#start;
    // Not taken ahead, or deferred: its lease depended on the records before it, settled by now.
    const start = !ahead || ahead.status === 'deferred' ? await this.#startAtTurn() : ahead;
    if (start.status !== 'acquired') return start.status;
    const { lease } = start;
    if (runtime.signal.aborted) {
      await this.#giveBack(lease, 'the batch failed before the effect started');
      throw runtime.signal.reason;
    }
    if (lease.deadLettered?.messageId === this.#parts.messageId) await this.#deadLetterAgain(lease);
    // Taken ahead uncounted (at-least-once): its outcome write counts its run. Only when a run before
    // it died (its acquire took a lease over) is it counted now, so that a death again counts; on
    // its first run no write more, at the price of its first death going uncounted.
    if (!lease.runCounted && lease.tookOver)
      await this.#fencedStep(lease, (l) => idempotency.countRun(l), 'its run could not be counted');
    // DESIGN §5: its acquire counted this run; the runs before it that never recorded a failure
    // died with their invocations (a crash, a timeout). Enough of them, and it goes to the DLQ unrun.
    const runs = lease.attempt - lease.attemptsAtDeadLetter;
    if (idempotency.mode === 'at-least-once' && runs > runtime.maxAttempts)
      await this.#runsDied(lease, runs - 1);
    if (start.awaitingStart && !this.#startedByPredecessor)
      await this.#fencedStep(lease, (l) => idempotency.markStarted(l), 'its start mark could not be written');
    runtime.telemetry.hook('onClaim', lease.id);
    let result: unknown;
    try {
      result = await this.#parts.effect(lease);
    } catch (error) {
      // DESIGN §5: its own failed runs, not SQS's receive count (which rises while it waits behind
      // a failing record), say when it has failed enough; then it goes to the DLQ in its group.
      const attempts = lease.attempt - lease.attemptsAtDeadLetter;
      const last = attempts >= runtime.maxAttempts;
      // Throws RecordNotWrittenError when the failure cannot be recorded: then no acknowledgement.
      const verdict = await idempotency.recordFailure(
        lease,
        error,
        input.message,
        last ? this.#parts.messageId : undefined,
      );
      if (verdict === 'in-doubt') return 'in-doubt';
      if (verdict === 'failed' && last) throw new AttemptsExhaustedError(attempts, error);
      throw error;
    }
    const next = await successor();
    if (next) {
      const written = await idempotency.recordCompletion(lease, result, next.lease);
      next.turn.#startedByPredecessor = written.next === 'started';
      return executed(written.completion);
    }
    // No acknowledgement without a record (DESIGN §3), but the group need not wait for it: the
    // COMPLETED write goes on while the next record runs, and a failure of it stops the group then.
    const settling = idempotency.recordCompletion(lease, result).then(executed);
    this.#written = settling;
    return { settling };
  }

  /**
   * This very message was sent to the DLQ by an earlier delivery (DESIGN §5) whose acknowledgement
   * was lost (its delete failed, its invocation died, its send failed): it does not run again. Its
   * record is written FAILED as that delivery left it (this acquire not counted), and it goes to
   * the DLQ again — where the mark makes that a no-op if the earlier send arrived.
   */
  async #deadLetterAgain(lease: Lease): Promise<never> {
    const { idempotency, input, messageId, runtime } = this.#parts;
    const { name = 'Error', message = 'failed' } = lease.deadLettered?.error ?? {};
    const error = Object.assign(new Error(message), { name });
    await idempotency.recordFailure(lease, error, input.message, messageId);
    throw new AttemptsExhaustedError(runtime.maxAttempts, error);
  }

  /**
   * This at-least-once record has had `runs` runs since its key was last dead-lettered, at least
   * `maxAttempts`, and the last ended without recording its outcome: its invocation died (a crash, a
   * timeout), and it would likely take this one down too. SQS's `maxReceiveCount` would dead-letter
   * it only after 50 receives, with its batch. It is written FAILED for this message and goes to
   * the DLQ unrun, as after `maxAttempts` failures.
   */
  async #runsDied(lease: Lease, runs: number): Promise<never> {
    const { idempotency, input, messageId } = this.#parts;
    const error = Object.assign(
      new Error(`its run ${runs} ended without recording an outcome: its invocation died`),
      { name: 'InvocationDied' },
    );
    await idempotency.recordFailure(lease, error, input.message, messageId);
    throw new AttemptsExhaustedError(runs, error);
  }

  /** Gives back a lease taken ahead whose turn never came: its group stopped, or ran out of time. */
  async giveBackIfUnused(): Promise<void> {
    if (this.#due || !this.#start) return;
    const start = await this.#start.catch(() => undefined);
    if (start?.status === 'acquired') await this.#giveBack(start.lease, 'its group stopped before its turn');
  }

  #startAtTurn(): Promise<LeaseStart<unknown>> {
    const { idempotency, input } = this.#parts;
    const start = this.#held(idempotency.start(input, { held: this.#place.held }));
    this.#start = start;
    return start;
  }

  #acquire(ahead: boolean): Promise<AheadStart<unknown>> {
    const { idempotency, input } = this.#parts;
    const { after, held } = this.#place;
    return this.#held(ahead ? idempotency.startAhead(input, { after }) : idempotency.start(input, { held }));
  }

  /** `started`, noting the lease it acquired, and with the store's errors as the consumer's. */
  #held<S extends AheadStart<unknown>>(started: Promise<S>): Promise<S> {
    const { input, namespace } = this.#parts;
    const start = started.then(
      (value) => {
        if (value.status === 'acquired') this.#lease = value.lease;
        return value;
      },
      (error: unknown) => {
        throw asStoreFailure(namespace, input.key, error);
      },
    );
    start.catch(() => undefined); // met at its turn; until then not an unhandled rejection
    return start;
  }

  /**
   * One fenced write before the effect (counting a run taken over, or the at-most-once start
   * mark): failed, the lease is given back and the store's failure thrown; refused by its fence,
   * another invocation holds the key.
   */
  async #fencedStep(lease: Lease, write: (lease: Lease) => Promise<boolean>, what: string): Promise<void> {
    const { input, namespace, runtime } = this.#parts;
    let written: boolean;
    try {
      written = await write(lease);
    } catch (error) {
      await this.#giveBack(lease, what);
      throw asStoreFailure(namespace, input.key, error);
    }
    if (!written) throw new IdempotencyInProgressError(lease.id, runtime.store.now());
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
