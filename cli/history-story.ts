import type { StoredError } from '../lambdas/idempotency/errors.js';
import { type HistoryEntry, type IdempotencyRecord, isExpired } from '../lambdas/idempotency/record.js';
import type { LoggedLine } from '../sandbox/function-log.js';
import type { CollectedSpan } from '../sandbox/trace-file.js';

/** Where a step of the story was read: the envelope, the outbox item, a record, its dead-letter log, a span. */
export type StorySource = 'envelope' | 'outbox' | 'record' | 'dlq' | 'span' | 'log';

/** One step of a message's story (`oncely history`), in time order. */
export interface StoryStep {
  /** ISO time, by the clock of whoever wrote it (a producer, a function, the operator's machine). */
  at: string;
  source: StorySource;
  /** What happened, in a few words: "published", "delivered", "effect failed", … */
  event: string;
  /** The record it happened to (`namespace#key`). */
  recordId?: string;
  /** The run of the effect (the record's attempts). */
  attempt?: number;
  /** The first 8 characters of the lease token that wrote it. */
  lease?: string;
  /** The SQS message id of the delivery, or of the copy sent to the DLQ or the queue. */
  messageId?: string;
  /** SQS's receive count of the delivery. */
  receiveCount?: number;
  /** Why it failed, or the outcome a span reports. */
  detail?: string;
  /** A span's trace id, to find the trace in any OTLP viewer. */
  traceId?: string;
  /** A span's duration, in milliseconds. */
  durationMs?: number;
  /** A log line's error, with its stack, as the function logged it (Powertools' `error` field). */
  error?: { name?: string; message?: string; stack?: string };
}

/** A record as the story shows it now. */
export interface RecordNow {
  id: string;
  /** Absent: the table has no record of it (not delivered yet, another namespace, or expired). */
  status?: string;
  attempts?: number;
  error?: StoredError;
  /** Of a lease held now: its token's first 8 characters and when it runs out (ISO). */
  lease?: { holder: string; expiresAt: string };
  /** ISO; absent on a record an operator must resolve, which never expires. */
  expiresAt?: string;
  /** RETRY_PENDING or IN_DOUBT: an operator's to resolve. */
  unresolved?: string;
  /** The id of the message in the DLQ, when its last failure was dead-lettered. */
  deadLetteredMessageId?: string;
  /** The record has no history: written by a version before it. */
  noHistory?: true;
}

/** An outbox item as the story shows it. */
export interface OutboxNow {
  status: 'PENDING' | 'SENT';
  /** ISO, by the producer's clock. */
  writtenAt: string;
  sentAt?: string;
  /** `relay` or `sweeper`. */
  sentBy?: string;
  messageId?: string;
  attempts?: number;
  lastError?: string;
}

/** What `oncely history` reads of one message, and tells. */
export interface MessageHistory {
  key: string;
  /** One per namespace asked about. */
  records: RecordNow[];
  /** The outbox item; absent when the target has no outbox or it holds none for this key. */
  outbox?: OutboxNow;
  /** Whether the target's spans were read (a sandbox collecting traces). */
  spansRead: boolean;
  steps: StoryStep[];
  /** What an operator can do now, in commands. */
  next: string[];
  /** The sources that could not be read, each with why (a stack's log lines without the permission, say). */
  unread: string[];
}

/** What was read, by key, for {@link tellHistory}. */
export interface HistorySources {
  key: string;
  /** Each record, and the entries of its dead-letter log (`deadLetterLogId`). */
  records: { id: string; record?: IdempotencyRecord; deadLetters: readonly HistoryEntry[] }[];
  outbox?: OutboxNow & { writtenAtMs: number; sentAtMs?: number };
  /** Absent when the target collects none. */
  spans?: readonly CollectedSpan[];
  /** The functions' log lines about the key (their `messageKey`); absent where none are read. */
  logs?: readonly (LoggedLine & { entry: Record<string, unknown> })[];
  /** The sources that could not be read, each with why: the story is told without them. */
  unread?: readonly string[];
  nowMs: number;
}

/** Puts what was read in time order and says what comes next. Pure: `oncely history` reads, this tells. */
export function tellHistory(sources: HistorySources): MessageHistory {
  const { key, nowMs } = sources;
  const steps: (StoryStep & { ms: number; order: number })[] = [];
  const add = (ms: number, step: Omit<StoryStep, 'at'>) =>
    steps.push({ ...step, at: new Date(ms).toISOString(), ms, order: steps.length });
  const published = new Set<string>();
  for (const { id, record, deadLetters } of sources.records) {
    const sent = new Set<string>();
    for (const entry of deadLetters) {
      // A retried write whose answer was lost may have logged one send twice.
      if (entry.m === undefined || sent.has(entry.m)) continue;
      sent.add(entry.m);
      add(entry.t, {
        source: 'dlq',
        recordId: id,
        event: 'sent to the DLQ',
        messageId: entry.m,
        ...(entry.x ? { detail: entry.x } : {}),
      });
    }
    const deadLettered = [
      ...deadLetters.map((entry) => ({ t: entry.t, m: entry.m })),
      ...(record?.history ?? []).flatMap((entry) => (entry.d ? [{ t: entry.t, m: entry.d }] : [])),
    ];
    /** Whether the delivery `entry` names is a copy of a message dead-lettered before it: a redrive's. */
    const redriven = (entry: HistoryEntry) =>
      entry.m !== undefined && deadLettered.some((earlier) => earlier.t <= entry.t && earlier.m !== entry.m);
    let previous: HistoryEntry | undefined;
    for (const entry of record?.history ?? []) {
      if (entry.p && !published.has(entry.p)) {
        published.add(entry.p);
        const ms = Date.parse(entry.p);
        if (Number.isFinite(ms)) add(ms, { source: 'envelope', event: 'published' });
      }
      add(entry.t, { source: 'record', recordId: id, ...describeEntry(entry, previous, redriven(entry)) });
      previous = entry;
    }
  }
  const { outbox } = sources;
  if (outbox) {
    add(outbox.writtenAtMs, { source: 'outbox', event: 'written to the outbox' });
    if (outbox.sentAtMs !== undefined) {
      add(outbox.sentAtMs, {
        source: 'outbox',
        event: `sent to the queue by the ${outbox.sentBy ?? 'relay'}`,
        messageId: outbox.messageId,
      });
    }
  }
  for (const span of sources.spans ?? []) {
    if (!mentions(span, key)) continue;
    const outcome = span.attributes['oncely.outcome'];
    const detail = [
      typeof outcome === 'string' ? outcome : '',
      span.status.code === 'error' ? `error: ${span.status.message ?? ''}`.trim() : '',
    ]
      .filter((part) => part !== '')
      .join(', ');
    add(span.startMs, {
      source: 'span',
      event: `span ${span.name}`,
      traceId: span.traceId,
      durationMs: span.endMs - span.startMs,
      ...(detail ? { detail } : {}),
    });
  }
  for (const logged of sources.logs ?? []) {
    const { entry } = logged;
    const level = typeof entry.level === 'string' ? entry.level.toLowerCase() : 'log';
    const at = typeof entry.timestamp === 'string' ? Date.parse(entry.timestamp) : Number.NaN;
    add(Number.isFinite(at) ? at : logged.at, {
      source: 'log',
      event: `${level}: ${String(entry.message ?? logged.line)}`,
      detail: logged.function,
      ...(typeof entry.messageId === 'string' ? { messageId: entry.messageId } : {}),
      ...loggedError(entry.error),
    });
  }
  // Stable: steps written in the same millisecond keep the order they were read in.
  steps.sort((a, b) => a.ms - b.ms || a.order - b.order);
  const records = sources.records.map(({ id, record }) => recordNow(id, record, nowMs));
  return {
    key,
    records,
    ...(outbox ? { outbox: withoutTimes(outbox) } : {}),
    spansRead: sources.spans !== undefined,
    unread: [...(sources.unread ?? [])],
    steps: steps.map(({ ms: _ms, order: _order, ...step }) => step),
    next: nextSteps(
      key,
      records,
      outbox,
      new Set(sources.records.filter((each) => each.deadLetters.length > 0).map((each) => each.id)),
    ),
  };
}

/** The error a log line carries, when it is one with a stack or a message: the story shows it whole. */
function loggedError(value: unknown): Pick<StoryStep, 'error'> {
  if (typeof value !== 'object' || value === null) return {};
  const { name, message, stack } = value as Record<string, unknown>;
  const text = (field: unknown) => (typeof field === 'string' ? field : undefined);
  if (text(stack) === undefined && text(message) === undefined) return {};
  return { error: { name: text(name), message: text(message), stack: text(stack) } };
}

function describeEntry(
  entry: HistoryEntry,
  previous: HistoryEntry | undefined,
  redriven: boolean,
): Pick<StoryStep, 'event' | 'attempt' | 'lease' | 'messageId' | 'receiveCount' | 'detail'> {
  const who = {
    ...(entry.a === undefined ? {} : { attempt: entry.a }),
    ...(entry.l === undefined ? {} : { lease: entry.l }),
  };
  const delivery = {
    ...who,
    ...(entry.m === undefined ? {} : { messageId: entry.m }),
    ...(entry.r === undefined ? {} : { receiveCount: entry.r }),
  };
  // The consumer may take the record before `--as retry` clears its mark: then no `retry-sent` comes between.
  const resent = previous?.o === 'retry-sent' || previous?.o === 'resolved-retry';
  const copy = redriven ? ' (a redriven copy)' : resent ? ' (the re-sent copy)' : '';
  const error = entry.x === undefined ? {} : { detail: entry.x };
  switch (entry.s) {
    case 'IN_PROGRESS':
      if (previous?.s === 'IN_PROGRESS')
        return { event: `delivered${copy}: an expired lease taken over`, ...delivery };
      return { event: entry.m === undefined ? 'lease taken' : `delivered${copy}: lease taken`, ...delivery };
    case 'COMPLETED':
      if (entry.o === 'resolved-completed') return { event: 'resolved by an operator: completed' };
      // A transaction's record is written once, by the delivery that commits it.
      if (entry.l === undefined)
        return { event: `delivered${copy}: effect applied in one transaction`, ...delivery };
      return { event: 'effect applied', ...who };
    case 'FAILED':
      if (entry.o === 'resolved-retry') return { event: 'resolved by an operator: retry' };
      if (entry.o === 'retry-sent') return { event: 'sent back to the queue by the operator' };
      if (entry.d !== undefined)
        return { event: 'effect failed: dead-lettered', ...who, ...error, messageId: entry.d };
      return { event: 'effect failed: to be retried', ...who, ...error };
    case 'REJECTED':
      return { event: 'effect rejected for good: dead-lettered', ...who, ...error };
    case 'IN_DOUBT':
      return { event: 'parked in doubt', ...who, ...error };
    case 'TRIMMED':
      return {
        event: `${entry.n ?? 'some'} earlier steps dropped (the history keeps the first and the latest)`,
      };
  }
}

/** A consumer's span names one key; a send span the keys of its batch. */
function mentions(span: CollectedSpan, key: string): boolean {
  const one = span.attributes['oncely.message.key'];
  const many = span.attributes['oncely.message.keys'];
  return one === key || (Array.isArray(many) && many.includes(key));
}

function recordNow(id: string, record: IdempotencyRecord | undefined, nowMs: number): RecordNow {
  if (!record || isExpired(record, nowMs)) return { id };
  const leaseHeld = record.status === 'IN_PROGRESS' && record.leaseToken && record.leaseExpiresAt;
  return {
    id,
    status: record.status,
    ...(record.attempts === undefined ? {} : { attempts: record.attempts }),
    ...(record.error ? { error: record.error } : {}),
    ...(leaseHeld
      ? {
          lease: {
            holder: String(record.leaseToken).slice(0, 8),
            expiresAt: new Date(Number(record.leaseExpiresAt)).toISOString(),
          },
        }
      : {}),
    ...(record.expiresAt === undefined ? {} : { expiresAt: new Date(record.expiresAt * 1000).toISOString() }),
    ...(record.unresolved ? { unresolved: record.unresolved } : {}),
    ...(record.deadLetteredMessageId ? { deadLetteredMessageId: record.deadLetteredMessageId } : {}),
    ...(record.history ? {} : { noHistory: true as const }),
  };
}

function withoutTimes(outbox: NonNullable<HistorySources['outbox']>): OutboxNow {
  const { writtenAtMs: _written, sentAtMs: _sent, ...rest } = outbox;
  return rest;
}

/** What an operator can do now, for each record and the outbox item. */
function nextSteps(
  key: string,
  records: readonly RecordNow[],
  outbox: HistorySources['outbox'],
  sentToDlq: ReadonlySet<string>,
): string[] {
  const next: string[] = [];
  if (outbox?.status === 'PENDING') {
    next.push(
      `It waits in the outbox (${outbox.attempts ?? 0} failed sends${outbox.lastError ? `, last: ${outbox.lastError}` : ''}): ` +
        'the relay sends it, or the sweeper; `oncely outbox list --stuck` shows what holds it.',
    );
  }
  for (const record of records) {
    const step = nextForRecord(key, record, sentToDlq.has(record.id));
    if (step) next.push(step);
  }
  return next;
}

function nextForRecord(key: string, record: RecordNow, sentToDlq: boolean): string | undefined {
  const { id } = record;
  switch (record.status) {
    case undefined:
      // A transactional record is written only by the commit: its dead-lettering left only the log.
      if (sentToDlq)
        return `${id}: no record, and its message was sent to the DLQ. Fix the cause, then \`oncely dlq redrive --key ${key}\`.`;
      return `${id}: no record. Not delivered yet, handled under another namespace, or expired; \`oncely dlq list\` shows whether it waits in the DLQ.`;
    case 'COMPLETED':
      return `${id}: done. Its effect happened; copies of it are answered as duplicates until ${record.expiresAt ?? 'it is resolved'}.`;
    case 'IN_PROGRESS':
      return `${id}: running, or its invocation died. Nothing to do: its lease (${record.lease?.holder}) runs out at ${record.lease?.expiresAt}, and the next delivery after that settles it.`;
    case 'IN_DOUBT':
      return `${id}: in doubt. Find out whether the effect happened, then \`oncely in-doubt resolve ${id} --as completed\` if it did, or \`--as retry\` if it did not.`;
    case 'REJECTED':
      return `${id}: rejected for good (${record.error?.name ?? 'error'}); a copy gets the same error. Fix the data and publish it under a new key, or \`oncely dlq discard\` it.`;
    case 'FAILED':
      if (record.unresolved === 'RETRY_PENDING')
        return `${id}: a retry whose message may not be on the queue: run \`oncely in-doubt resolve ${id} --as retry\` again to send it.`;
      if (record.deadLetteredMessageId)
        return `${id}: in the DLQ (message ${record.deadLetteredMessageId}). Fix the cause, then \`oncely dlq redrive --key ${key}\`.`;
      return `${id}: failed ${record.attempts ?? 0} times; SQS delivers it again after its visibility timeout.`;
    default:
      return undefined;
  }
}
