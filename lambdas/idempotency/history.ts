import type { HistoryEntry } from './record.js';

/**
 * A record's history (DESIGN §3): each write that changes its status appends one entry, in the same
 * request, so the story of a message (`oncely history`) costs no request of its own. Short
 * attribute names, because every byte is stored with every record and counted in its write units.
 */
export const HISTORY_ATTRIBUTE = 'history';

/**
 * At most this many entries are kept, about 3 KB: a message that fails again and again, redriven
 * time after time, must not grow its record towards DynamoDB's 400 KB item limit. An acquire that
 * finds more keeps the first (the publish), a {@link HistoryEntry} saying how many went, and the latest.
 */
export const MAX_HISTORY_ENTRIES = 40;

/** The delivery a lease or a commit is taken for: what its history entry says of it. */
export interface Delivery {
  /** The SQS message id. */
  messageId: string;
  /** SQS's ApproximateReceiveCount. */
  receiveCount?: number;
  /** The envelope's `publishedAt`. */
  publishedAt?: string;
}

/** An entry for a lease taken (an acquire), for `delivery` if the caller named it. */
export function acquireEntry(now: number, token: string, delivery?: Delivery, first = false): HistoryEntry {
  return { s: 'IN_PROGRESS', t: now, l: shortToken(token), ...deliveryFields(delivery, first) };
}

/** What an entry says of `delivery`: its message id and receive count, and with `first` its publish time. */
export function deliveryFields(
  delivery: Delivery | undefined,
  first: boolean,
): Pick<HistoryEntry, 'm' | 'r' | 'p'> {
  if (!delivery) return {};
  return {
    m: delivery.messageId,
    ...(delivery.receiveCount === undefined ? {} : { r: delivery.receiveCount }),
    ...(first && delivery.publishedAt ? { p: delivery.publishedAt } : {}),
  };
}

export function shortToken(token: string | undefined): string | undefined {
  return token?.slice(0, 8);
}

/**
 * The history an acquire writes over a record that already has {@link MAX_HISTORY_ENTRIES} or more,
 * or undefined while it has room and the entry is appended: the first entry, a `TRIMMED` one and
 * the latest, then `entry`.
 */
export function trimmedHistory(
  existing: readonly HistoryEntry[] | undefined,
  entry: HistoryEntry,
): HistoryEntry[] | undefined {
  if (!existing || existing.length < MAX_HISTORY_ENTRIES) return undefined;
  const [first, ...rest] = existing;
  const earlierTrim = rest[0]?.s === 'TRIMMED' ? (rest[0].n ?? 0) : 0;
  const kept = rest.slice(-(MAX_HISTORY_ENTRIES / 2));
  const dropped = rest.length - kept.length - (earlierTrim > 0 ? 1 : 0) + earlierTrim;
  return [first as HistoryEntry, { s: 'TRIMMED', t: entry.t, n: dropped }, ...kept, entry];
}

/** The UpdateItem fragment that appends `:historyEntry` (a one-entry list); `:noHistory` is `[]`. */
export const APPEND_HISTORY = `${HISTORY_ATTRIBUTE} = list_append(if_not_exists(${HISTORY_ATTRIBUTE}, :noHistory), :historyEntry)`;

/** The values {@link APPEND_HISTORY} names. */
export function appendValues(entry: HistoryEntry): Record<string, unknown> {
  return { ':noHistory': [], ':historyEntry': [entry] };
}
