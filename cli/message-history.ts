import { access } from 'node:fs/promises';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { deadLetterLogId, type HistoryEntry, type IdempotencyRecord } from '../lambdas/idempotency/record.js';
import { OUTBOX_ATTRIBUTES as A, itemKey } from '../lambdas/outbox/layout.js';
import { OUTBOX_OUTPUTS, outboxFromOutputs } from '../lib/constructs/outbox-outputs.js';
import { linesAbout } from '../sandbox/function-log.js';
import { type CollectedSpan, readTraceFile } from '../sandbox/trace-file.js';
import { type HistorySources, type MessageHistory, tellHistory } from './history-story.js';
import type { PipelineConnection } from './target.js';

/** What the story reads from: a pipeline's idempotency table, and its target's outputs for the outboxes. */
export type HistoryTarget = Pick<PipelineConnection, 'name' | 'outputs' | 'dynamodb'> & {
  resources: Pick<PipelineConnection['resources'], 'idempotencyTableName'>;
};

export interface HistoryQuery {
  key: string;
  /** The records to read: `namespace#key` each. */
  recordIds: readonly string[];
  /** The sandbox's trace file (its ready file's `traces.file`); absent on a stack, or with traces off. */
  tracesFile?: string;
  /** The sandbox's function log (its ready file's `logs.file`); absent on a stack. */
  logsFile?: string;
}

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
      const [record, log] = await Promise.all([
        read(table, { id }),
        read(table, { id: deadLetterLogId(id) }),
      ]);
      const deadLetters = ((log as IdempotencyRecord | undefined)?.history ?? []) as HistoryEntry[];
      return { id, record: record as IdempotencyRecord | undefined, deadLetters };
    }),
  );
  return tellHistory({
    key: query.key,
    records,
    outbox: await readOutboxItem(pipeline, query.key, read),
    spans: query.tracesFile === undefined ? undefined : await spansOf(query.tracesFile),
    ...(query.logsFile === undefined ? {} : { logs: await linesAbout(query.logsFile, query.key) }),
    nowMs: now(),
  });
}

/** The key's item in the target's outboxes (each prefix's), if one holds it. */
async function readOutboxItem(
  target: HistoryTarget,
  key: string,
  read: (table: string, key: Record<string, unknown>) => Promise<Record<string, unknown> | undefined>,
): Promise<HistorySources['outbox']> {
  const marker = OUTBOX_OUTPUTS.tableName;
  const prefixes = Object.keys(target.outputs)
    .filter((output) => output.endsWith(marker))
    .map((output) => output.slice(0, -marker.length));
  for (const prefix of prefixes) {
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

/** The trace file's spans; none yet while nothing has exported any (the file is written on the first). */
async function spansOf(file: string): Promise<CollectedSpan[]> {
  try {
    await access(file);
  } catch {
    return [];
  }
  return readTraceFile(file);
}
