import type { LeaseTurn, WaitingSuccessor } from './lease-turn.js';

/** What a lease-mode record's turn needs from its group: its own turn, and a way to find the next one's lease. */
export interface GroupTurn {
  turn: LeaseTurn;
  successor(): Promise<WaitingSuccessor | undefined>;
}

/**
 * The lease-mode records of one message group in one batch. When the group starts, their leases are
 * taken together — concurrent conditional writes, one round trip for the group instead of one per
 * record — each record still running in its turn. A lease taken ahead whose turn never comes (a
 * failure stopped the group, the deadline deferred it, the batch failed) is given back when the
 * group is done. Only a record's first occurrence in the group takes its lease ahead: a second
 * message with the same key waits at its turn for the first one's record to be written, and meets
 * it as a duplicate.
 */
export class GroupLeases<R> {
  readonly #records: readonly R[];
  readonly #turns: readonly (LeaseTurn | undefined)[];
  readonly #mayStart: () => boolean;
  #opened = false;

  /**
   * @param turns each record's lease turn (undefined for a record that is not lease-mode)
   * @param mayStart whether the group's next record may start now (the group goes on, the deadline
   *   allows): a successor's start mark is written early, with its predecessor's completion, only
   *   if so — a lease started and then given back unused would be parked should its give-back fail
   */
  constructor(records: readonly R[], turns: readonly (LeaseTurn | undefined)[], mayStart: () => boolean) {
    this.#records = records;
    this.#turns = turns;
    this.#mayStart = mayStart;
  }

  /** Takes the group's leases, once, when its first record's turn comes. */
  open(): void {
    if (this.#opened) return;
    this.#opened = true;
    const firsts = new Map<string, LeaseTurn>();
    // A lease record of another turn of this group is this invocation's, whoever's turn it is.
    const held = (id: string) => this.#turns.find((turn) => turn?.id === id && turn.heldToken)?.heldToken;
    this.#turns.forEach((turn, index) => {
      if (!turn) return;
      const original = firsts.get(turn.id);
      if (original) {
        turn.follow(original);
        return;
      }
      firsts.set(turn.id, turn);
      // Only an at-most-once record's completion may start the next lease: a record whose lease
      // may be taken over and run again (at-least-once) could not be fenced without parking it.
      const before = this.#turns[index - 1];
      turn.takeAhead(index === 0, { after: before?.mode === 'at-most-once' ? before.id : undefined, held });
    });
  }

  /** Whether the record's effect was already allowed to start: its turn needs no deadline check. */
  started(record: R): boolean {
    return this.#turns[this.#records.indexOf(record)]?.started ?? false;
  }

  /** The record's lease turn in this group, if it is a lease-mode record. */
  turnOf(record: R): GroupTurn | undefined {
    const index = this.#records.indexOf(record);
    const turn = this.#turns[index];
    if (!turn) return undefined;
    return { turn, successor: () => this.#waitingSuccessor(index) };
  }

  /** Gives back every lease taken ahead whose turn never came. Never throws. */
  async close(): Promise<void> {
    await Promise.all(this.#turns.map((turn) => turn?.giveBackIfUnused()));
  }

  async #waitingSuccessor(index: number): Promise<WaitingSuccessor | undefined> {
    const [current, turn] = [this.#turns[index], this.#turns[index + 1]];
    const lease = current && (await turn?.waitingLeaseAfter(current.id));
    return turn && lease && this.#mayStart() ? { turn, lease } : undefined;
  }
}
