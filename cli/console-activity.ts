import type { CollectedSpan } from '../sandbox/trace-file.js';
import type { PendingOutboxMessage } from './outbox-list.js';

/**
 * What became of a message, as its latest delivery's verdict says (`oncely.outcome`); that it runs
 * again now (given back or deferred, and its record held under a live lease); or that it waits in
 * the outbox.
 */
export type MessageState =
  | 'in progress'
  | 'applied'
  | 'duplicate'
  | 'in-doubt'
  | 'dead-lettered'
  | 'deferred'
  | 'given-back'
  | 'pending in the outbox';

/** A message the console lists: its latest delivery, and how many there were. */
export interface RecentMessage {
  key: string;
  type?: string;
  group?: string;
  /** The record it was routed to (`namespace#key`), whose story the console tells. */
  recordId?: string;
  state: MessageState;
  /** Deliveries seen (record spans, or verdict lines): more than one for a retry, a redrive or a duplicate. */
  deliveries: number;
  /** ISO time of the latest. */
  lastAt: string;
}

/** A function's invocations and errors (CloudWatch's, a stack's or the sandbox's). */
export interface FunctionCounts {
  name: string;
  invocations: number;
  errors: number;
}

/** Which messages a list shows: each field narrows it; `key` matches a part of the key. */
export interface MessageFilter {
  type?: string;
  group?: string;
  state?: string;
  key?: string;
}

/** The most messages a list shows, the latest first. */
export const MESSAGES_LISTED = 200;

/** One delivery of a message and what became of it: from its record span, or its consumer's verdict line. */
export interface SeenDelivery {
  key: string;
  type?: string;
  group?: string;
  recordId?: string;
  state: MessageState;
  atMs: number;
}

/** The deliveries the sandbox's record spans tell (kind consumer, with `oncely.outcome`). */
export function deliveriesInSpans(spans: readonly CollectedSpan[]): SeenDelivery[] {
  const deliveries: SeenDelivery[] = [];
  for (const span of spans) {
    const key = span.attributes['oncely.message.key'];
    if (span.kind !== 'consumer' || typeof key !== 'string') continue;
    deliveries.push({
      key,
      ...text('type', span.attributes['oncely.message.type']),
      ...text('group', span.attributes['oncely.message.group']),
      ...text('recordId', span.attributes['oncely.record.id']),
      state: (span.attributes['oncely.outcome'] as MessageState | undefined) ?? 'given-back',
      atMs: span.startMs,
    });
  }
  return deliveries;
}

/**
 * The deliveries the consumer's log lines tell: each line that says a record's verdict (`outcome`,
 * with the record's `messageKey`) is one delivery's, as a stack's CloudWatch Logs hold them.
 */
export function deliveriesInLogLines(
  lines: readonly { at: number; entry: Record<string, unknown> }[],
): SeenDelivery[] {
  const deliveries: SeenDelivery[] = [];
  for (const { at, entry } of lines) {
    if (typeof entry.messageKey !== 'string' || typeof entry.outcome !== 'string') continue;
    deliveries.push({
      key: entry.messageKey,
      ...text('type', entry.messageType),
      ...text('group', entry.groupId),
      ...text('recordId', entry.recordId),
      state: entry.outcome as MessageState,
      atMs: at,
    });
  }
  return deliveries;
}

/** Verdicts after which the message comes back: its record may be running again now. */
const UNSETTLED = new Set<MessageState>(['given-back', 'deferred']);

/** The records of the latest {@link MESSAGES_LISTED} keys whose latest delivery left them unsettled: those that may be in progress. */
export function unsettledRecordIds(deliveries: readonly SeenDelivery[]): string[] {
  const latest = new Map<string, SeenDelivery>();
  for (const delivery of deliveries) {
    const seen = latest.get(delivery.key);
    if (!seen || seen.atMs <= delivery.atMs) latest.set(delivery.key, delivery);
  }
  return [...latest.values()]
    .filter((delivery) => UNSETTLED.has(delivery.state) && delivery.recordId !== undefined)
    .sort((a, b) => b.atMs - a.atMs)
    .slice(0, MESSAGES_LISTED)
    .map((delivery) => delivery.recordId as string);
}

/**
 * The recent messages, each by its latest delivery, with those pending in the outbox; filtered,
 * latest first. A message left unsettled whose record is in `inProgress` (held under a live lease
 * now) is `in progress`.
 */
export function recentMessages(
  deliveries: readonly SeenDelivery[],
  pending: readonly PendingOutboxMessage[],
  filter: MessageFilter,
  inProgress: ReadonlySet<string> = new Set(),
): { messages: RecentMessage[]; truncated: boolean } {
  const byKey = new Map<string, RecentMessage & { ms: number }>();
  for (const delivery of deliveries) {
    const seen = byKey.get(delivery.key);
    const count = (seen?.deliveries ?? 0) + 1;
    if (seen && seen.ms > delivery.atMs) {
      seen.deliveries = count;
      continue;
    }
    const { atMs, ...latest } = delivery;
    byKey.set(delivery.key, {
      ...latest,
      ...(latest.recordId === undefined && seen?.recordId !== undefined ? { recordId: seen.recordId } : {}),
      deliveries: count,
      lastAt: new Date(atMs).toISOString(),
      ms: atMs,
    });
  }
  for (const message of pending) {
    if (byKey.has(message.key)) continue;
    const ms = Date.parse(message.createdAt);
    byKey.set(message.key, {
      key: message.key,
      ...text('type', message.type),
      group: message.groupId,
      state: 'pending in the outbox',
      deliveries: 0,
      lastAt: message.createdAt,
      ms,
    });
  }
  for (const message of byKey.values()) {
    if (UNSETTLED.has(message.state) && message.recordId && inProgress.has(message.recordId)) {
      message.state = 'in progress';
    }
  }
  const matching = [...byKey.values()]
    .filter(
      (message) =>
        (!filter.type || message.type === filter.type) &&
        (!filter.group || message.group === filter.group) &&
        (!filter.state || message.state === filter.state) &&
        (!filter.key || message.key.includes(filter.key)),
    )
    .sort((a, b) => b.ms - a.ms);
  return {
    messages: matching.slice(0, MESSAGES_LISTED).map(({ ms: _ms, ...message }) => message),
    truncated: matching.length > MESSAGES_LISTED,
  };
}

function text<K extends string>(name: K, value: unknown): Partial<Record<K, string>> {
  return typeof value === 'string' && value !== '' ? ({ [name]: value } as Record<K, string>) : {};
}
