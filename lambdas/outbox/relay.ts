import { randomUUID } from 'node:crypto';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';
import { forEachAtOnce } from './at-once.js';
import { type DrainOptions, type DrainReport, drainGroup } from './drain-group.js';
import { OUTBOX_ATTRIBUTES as A, isPendingValue } from './layout.js';

/** What draining needs, bar the owner and the clock of one invocation. */
export type SenderOptions = Omit<DrainOptions, 'owner' | 'timeLeftMs' | 'sentBy'>;

export interface RelayReport {
  groups: DrainReport[];
  /** Groups that could not be drained, with the error. */
  errors: { groupId: string; error: string }[];
}

/** How many groups one invocation drains at once. */
const GROUPS_AT_ONCE = 10;

/**
 * The relay (DESIGN §9): a Lambda on the outbox table's stream, invoked with the pending markers
 * just written (the event source's filter passes only those). A marker says "group G has pending
 * messages": the relay drains each such group in order. A group whose messages could not be sent
 * is reported as a batch item failure at its first record, so Lambda retries from there (a bounded
 * number of times); what is still pending after that, the sweeper sends.
 */
export async function relayBatch(
  event: DynamoDBStreamEvent,
  options: SenderOptions & { timeLeftMs: () => number; onReport?: (report: RelayReport) => void },
): Promise<DynamoDBBatchResponse> {
  const firstRecordOfGroup = new Map<string, DynamoDBRecord>();
  for (const record of event.Records) {
    const groupId = pendingMarkerGroup(record);
    if (groupId !== undefined && !firstRecordOfGroup.has(groupId)) firstRecordOfGroup.set(groupId, record);
  }
  const owner = `relay:${randomUUID()}`;
  const report: RelayReport = { groups: [], errors: [] };
  const failedGroups: string[] = [];
  await forEachAtOnce([...firstRecordOfGroup.keys()], GROUPS_AT_ONCE, async (groupId) => {
    try {
      const drained = await drainGroup(groupId, { ...options, owner, sentBy: 'relay' });
      report.groups.push(drained);
      if (drained.notSent.length > 0 || drained.sentUnmarked.length > 0) failedGroups.push(groupId);
    } catch (error) {
      report.errors.push({
        groupId,
        error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      });
      failedGroups.push(groupId);
    }
  });
  options.onReport?.(report);
  // Lambda retries from the lowest sequence number reported: the earliest record of a failed group.
  const failed = event.Records.filter((record) =>
    failedGroups.some((groupId) => firstRecordOfGroup.get(groupId) === record),
  );
  const first = failed[0]?.dynamodb?.SequenceNumber;
  return { batchItemFailures: first ? [{ itemIdentifier: first }] : [] };
}

/** The group of a newly written pending marker; undefined for any other record. */
function pendingMarkerGroup(record: DynamoDBRecord): string | undefined {
  const image = record.dynamodb?.NewImage;
  if (record.eventName !== 'INSERT' || !image) return undefined;
  const item = unmarshall(image as Record<string, AttributeValue>);
  return isPendingValue(item[A.pending]) && typeof item[A.groupId] === 'string' ? item[A.groupId] : undefined;
}
