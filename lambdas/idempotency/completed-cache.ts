import { IdempotencyConflictError } from './errors.js';

/** What a duplicate needs to be answered without DynamoDB. */
export interface CachedCompletion {
  payloadHash: string;
  /** The stored result JSON (absent for `undefined`). */
  result?: string;
  /** Epoch milliseconds after which the record no longer exists. */
  expiresAtMs: number;
}

/**
 * A per-container LRU of COMPLETED records. A record never changes once COMPLETED (until it
 * expires), so serving hot duplicates from memory is safe and saves a DynamoDB request each.
 */
export class CompletedRecordCache {
  readonly #entries = new Map<string, CachedCompletion>();

  /** How many records it keeps, the least recently used going first. */
  readonly maxEntries: number;

  /** @param maxEntries - how many records it keeps; 1,000 by default. */
  constructor(maxEntries = 1_000) {
    this.maxEntries = maxEntries;
  }

  /** @internal */
  get(id: string, nowMs: number): CachedCompletion | undefined {
    const entry = this.#entries.get(id);
    if (!entry) return undefined;
    this.#entries.delete(id);
    if (entry.expiresAtMs <= nowMs) return undefined;
    this.#entries.set(id, entry); // re-insert: Map order is the recency order
    return entry;
  }

  /**
   * The completion a call with this payload duplicates, if cached; the same key with another
   * payload is a conflict, detected here as it would be by DynamoDB.
   * @internal
   */
  duplicateOf(id: string, payloadHash: string, nowMs: number): CachedCompletion | undefined {
    const cached = this.get(id, nowMs);
    if (cached && cached.payloadHash !== payloadHash) throw new IdempotencyConflictError(id);
    return cached;
  }

  /** @internal */
  set(id: string, entry: CachedCompletion): void {
    this.#entries.delete(id);
    this.#entries.set(id, entry);
    if (this.#entries.size > this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
  }

  /** How many records it holds now. */
  get size(): number {
    return this.#entries.size;
  }
}
