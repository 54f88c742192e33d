import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import {
  deadLetterLogId,
  type HistoryEntry,
  type IdempotencyRecord,
  isExpired,
} from '../lambdas/idempotency/record.js';
import { OUTBOX_ATTRIBUTES as A, itemKey } from '../lambdas/outbox/layout.js';
import { outboxFromOutputs } from '../lib/constructs/outbox-outputs.js';
import type { LoggedEntry } from '../sandbox/function-log.js';
import type { TraceFileReader } from '../sandbox/trace-file.js';
import { type HistorySources, type MessageHistory, tellHistory } from './history-story.js';
import type { OperatorRecords } from './operator-records.js';
import { outboxPrefixes } from './outbox-target.js';
import type { PipelineConnection } from './target.js';

/**
 * What the story reads from: a pipeline's idempotency table, its lease records cache when it has one
 * (`valkey`, DESIGN §3.1), and its target's outputs for the outboxes.
 */
export type HistoryTarget = Pick<PipelineConnection, 'name' | 'outputs' | 'dynamodb'> & {
  resources: Pick<PipelineConnection['resources'], 'idempotencyTableName'>;
  valkey?: OperatorRecords;
};

export interface HistoryQuery {
  key: string;
  /** The records to read: `namespace#key` each. */
  recordIds: readonly string[];
  /** The sandbox's trace file (its ready file's `traces.file`); absent on a stack, or with traces off. */
  spans?: TraceFileReader;
  /**
   * The functions' log lines about the key, written since `sinceMs` (a little before the story's
   * first step): the sandbox's function log, or a stack's CloudWatch Logs; absent, none.
   */
  logs?: (key: string, sinceMs: number) => Promise<readonly LoggedEntry[]>;
}

/** How long before the story's first known step its log lines are looked for, and how far back without one. */
const LOGS_BEFORE_MS = 60_000;
const LOGS_WITHOUT_STEPS_MS = 60 * 60_000;

/**
 * The story of one message (`oncely history`): its records and their dead-letter logs (one strongly
 * consistent GetItem each), its item in each outbox of the target (one each),
 * and the sandbox's spans that name its key. Everything by key: nothing is scanned or received.
 */
export async function readMessageHistory(
  pipeline: HistoryTarget,
  query: HistoryQuery,
  now: () => number = Date.now,
): Promise<MessageHistory> {
  const documents = DynamoDBDocumentClient.from(pipeline.dynamodb);
  const table = pipeline.resources.idempotencyTableName;
  const read = async (TableName: string, Key: Record<string, unknown>) =>
    (await documents.send(new GetCommand({ TableName, Key, ConsistentRead: true }))).Item;
  const records: HistorySources['records'] = await Promise.all(
    query.recordIds.map(async (id) => {
      // A record is in the table or in the cache (a lease operation's, with leaseRecords: 'valkey');
      // its dead-letter log is in the store of the consumer that dead-lettered it.
      const [record, log, cached, cachedLog] = await Promise.all([
        read(table, { id }),
        read(table, { id: deadLetterLogId(id) }),
        pipeline.valkey?.read(id),
        pipeline.valkey?.read(deadLetterLogId(id)),
      ]);
      const deadLetters = [
        ...((log as IdempotencyRecord | undefined)?.history ?? []),
        ...(cachedLog?.history ?? []),
      ] as HistoryEntry[];
      const inTable = record as IdempotencyRecord | undefined;
      const live = cached && (!inTable || isExpired(inTable, now())) ? cached : inTable;
      return { id, record: live, deadLetters };
    }),
  );
  const outbox = await readOutboxItem(pipeline, query.key, read);
  const nowMs = now();
  const known = [
    ...records.flatMap(({ record, deadLetters }) =>
      [...(record?.history ?? []), ...deadLetters].map((entry) => entry.t),
    ),
    ...(outbox ? [outbox.writtenAtMs] : []),
  ];
  const sinceMs = known.length ? Math.min(...known) - LOGS_BEFORE_MS : nowMs - LOGS_WITHOUT_STEPS_MS;
  // Log lines are an addition to the story: one that cannot be read (no permission, a service
  // that is not there) is said, and the story told without them.
  const unread: string[] = [];
  const logs = await query.logs?.(query.key, sinceMs).catch((error: unknown) => {
    unread.push(`the log lines (${(error as Error).name}: ${(error as Error).message})`);
    return undefined;
  });
  return tellHistory({
    key: query.key,
    records,
    outbox,
    spans: await query.spans?.spans(),
    ...(logs && { logs }),
    unread,
    nowMs,
  });
}

/** The key's item in the target's outboxes (each prefix's), if one holds it. */
async function readOutboxItem(
  target: HistoryTarget,
  key: string,
  read: (table: string, key: Record<string, unknown>) => Promise<Record<string, unknown> | undefined>,
): Promise<HistorySources['outbox']> {
  for (const prefix of outboxPrefixes(target.outputs)) {
    const outbox = outboxFromOutputs(target.name, target.outputs, prefix);
    const item = await read(outbox.tableName, itemKey(outbox, key));
    if (!item) continue;
    const writtenAtMs = Number(item[A.createdAt]);
    const sentAtMs = item[A.sentAt] === undefined ? undefined : Number(item[A.sentAt]);
    const text = (name: string) => (item[name] === undefined ? undefined : String(item[name]));
    return {
      status: item[A.status] === 'SENT' ? 'SENT' : 'PENDING',
      writtenAt: new Date(writtenAtMs).toISOString(),
      writtenAtMs,
      ...(sentAtMs === undefined ? {} : { sentAt: new Date(sentAtMs).toISOString(), sentAtMs }),
      ...(text(A.sentBy) === undefined ? {} : { sentBy: text(A.sentBy) }),
      ...(text(A.messageId) === undefined ? {} : { messageId: text(A.messageId) }),
      ...(item[A.attempts] === undefined ? {} : { attempts: Number(item[A.attempts]) }),
      ...(text(A.lastError) === undefined ? {} : { lastError: text(A.lastError) }),
    };
  }
  return undefined;
}
