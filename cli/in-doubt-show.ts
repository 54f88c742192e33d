import type { StoredError } from '../lambdas/idempotency/index.js';
import { type InDoubtTarget, locateRecord, resolvable, stateOf } from './in-doubt-records.js';

/** A record as `oncely in-doubt resolve` shows it before asking. */
export interface RecordToResolve {
  id: string;
  /** IN_DOUBT or RETRY_PENDING. */
  status: string;
  attempts?: number;
  error?: StoredError;
  /** ISO time it entered this status. */
  since?: string;
  /** ISO time it expires; absent: never while unresolved (only an older version's records have one). */
  expiresAt?: string;
  /** What the kept message is, without its payload; absent when the record kept none. */
  message?: { groupId: string; type?: string; key?: string; publishedAt?: string; bytes: number };
}

/** Reads the record to resolve (strongly consistent); an unknown or settled one is the error `resolve` gives. */
export async function readRecordToResolve(target: InDoubtTarget, id: string): Promise<RecordToResolve> {
  const nowMs = Date.now();
  const record = resolvable((await locateRecord(target, id, nowMs)).record, id, nowMs);
  return {
    id,
    status: stateOf(record, nowMs),
    ...(record.attempts === undefined ? {} : { attempts: record.attempts }),
    ...(record.error ? { error: record.error } : {}),
    ...(record.updatedAt === undefined ? {} : { since: new Date(record.updatedAt).toISOString() }),
    ...(record.expiresAt === undefined ? {} : { expiresAt: new Date(record.expiresAt * 1000).toISOString() }),
    ...(record.message
      ? { message: { groupId: record.message.groupId, ...summary(record.message.body) } }
      : {}),
  };
}

export function describeRecordToResolve(record: RecordToResolve): string {
  const { message } = record;
  const kept = message
    ? [message.type ?? '(not an envelope)', ...(message.key ? [message.key] : [])].join(' ') +
      `, group ${message.groupId}, published ${message.publishedAt ?? '(unknown)'}, ${message.bytes} bytes`
    : '(none kept: it cannot be retried from here)';
  const rows: [string, string][] = [
    ['status', record.status],
    ['attempts', String(record.attempts ?? '-')],
    ['error', record.error ? `${record.error.name}: ${record.error.message}` : '-'],
    ['since', record.since ?? '-'],
    ['expires', record.expiresAt ?? 'never (unresolved records do not expire)'],
    ['message', kept],
  ];
  return [`Record ${record.id}:`, ...rows.map(([name, value]) => `  ${name.padEnd(10)} ${value}`)].join('\n');
}

/** The envelope's fields that say which message it is; the payload stays out of an operator's terminal. */
function summary(body: string): { type?: string; key?: string; publishedAt?: string; bytes: number } {
  const bytes = Buffer.byteLength(body, 'utf8');
  try {
    const { type, key, publishedAt } = JSON.parse(body) as Record<string, unknown>;
    return {
      ...(typeof type === 'string' ? { type } : {}),
      ...(typeof key === 'string' ? { key } : {}),
      ...(typeof publishedAt === 'string' ? { publishedAt } : {}),
      bytes,
    };
  } catch {
    return { bytes };
  }
}
