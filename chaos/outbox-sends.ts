/** Why a message may reach SQS once more. */
export type DuplicateExplanation = 'lost-answer' | 'crash' | 'stall' | 'mark-not-written';

export const DUPLICATE_EXPLANATIONS: readonly DuplicateExplanation[] = [
  'lost-answer',
  'crash',
  'stall',
  'mark-not-written',
];

/** A message that reached SQS more often than what came before explains. */
export interface UnexplainedSend {
  key: string;
  arrivals: number;
  /** The copy (2 for the second) that nothing before it explains. */
  copy: number;
  /** Every explanation logged for the message, before and after. */
  explanations: DuplicateExplanation[];
}

export interface SendsVerdict {
  /** Messages that reached SQS more than once. */
  duplicates: number;
  /** Of those, how many each kind of explanation covers (one message may have several). */
  explained: Record<DuplicateExplanation, number>;
  unexplained: UnexplainedSend[];
}

/**
 * When each message reached SQS, and when something happened that leaves it to be sent again: its
 * send's answer was lost (a fault's, or a connection to SQS that failed), its sender crashed or stalled after sending it, or its sender gave it back
 * sent but without its SENT mark. Each event licenses one more arrival after it, never one before.
 */
export class SendLog {
  readonly #arrivals = new Map<string, number[]>();
  readonly #explanations = new Map<string, { tick: number; why: DuplicateExplanation }[]>();
  #tick = 0;

  /** A SendMessageBatch entry with this deduplication id reached SQS. */
  arrived(key: string, answerLost: boolean): void {
    const tick = ++this.#tick;
    this.#arrivals.set(key, [...(this.#arrivals.get(key) ?? []), tick]);
    if (answerLost) this.#note(key, tick, 'lost-answer');
  }

  explain(keys: Iterable<string>, why: DuplicateExplanation): void {
    const tick = ++this.#tick;
    for (const key of keys) this.#note(key, tick, why);
  }

  verdict(): SendsVerdict {
    const explained = Object.fromEntries(DUPLICATE_EXPLANATIONS.map((why) => [why, 0])) as Record<
      DuplicateExplanation,
      number
    >;
    const unexplained: UnexplainedSend[] = [];
    let duplicates = 0;
    for (const [key, arrivals] of this.#arrivals) {
      if (arrivals.length < 2) continue;
      duplicates++;
      const events = this.#explanations.get(key) ?? [];
      for (const why of new Set(events.map((event) => event.why))) explained[why]++;
      // The i-th arrival (from 0) needs i events before it: one per copy sent again.
      const unlicensed = arrivals.findIndex(
        (tick, index) => events.filter((event) => event.tick < tick).length < index,
      );
      if (unlicensed !== -1) {
        const explanations = events.map((event) => event.why);
        unexplained.push({ key, arrivals: arrivals.length, copy: unlicensed + 1, explanations });
      }
    }
    return { duplicates, explained, unexplained };
  }

  #note(key: string, tick: number, why: DuplicateExplanation): void {
    this.#explanations.set(key, [...(this.#explanations.get(key) ?? []), { tick, why }]);
  }
}
