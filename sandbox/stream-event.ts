import type { _Record, AttributeValue } from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBRecord, AttributeValue as EventAttributeValue } from 'aws-lambda';

/**
 * The record Lambda's event source mapping gives a function for a stream record: the stream's own
 * fields, with the mapping's region and ARN, the creation time in epoch seconds and binary values
 * in base64, as in Lambda's JSON event.
 */
export function toDynamoDbRecord(record: _Record, streamArn: string, region: string): DynamoDBRecord {
  const { dynamodb: stream = {}, userIdentity } = record;
  const image = (attributes: Record<string, AttributeValue> | undefined) =>
    attributes && mapValues(attributes, toEventValue);
  // Lambda's event has no key for what the stream leaves out (an image outside the view type).
  const dynamodb = definedOnly({
    ApproximateCreationDateTime:
      stream.ApproximateCreationDateTime && Math.floor(stream.ApproximateCreationDateTime.getTime() / 1000),
    Keys: image(stream.Keys),
    NewImage: image(stream.NewImage),
    OldImage: image(stream.OldImage),
    SequenceNumber: stream.SequenceNumber,
    SizeBytes: stream.SizeBytes,
    StreamViewType: stream.StreamViewType,
  });
  return {
    eventID: record.eventID,
    eventName: record.eventName,
    eventVersion: '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: region,
    dynamodb,
    eventSourceARN: streamArn,
    ...(userIdentity && { userIdentity: { type: userIdentity.Type, principalId: userIdentity.PrincipalId } }),
  };
}

function toEventValue(value: AttributeValue): EventAttributeValue {
  if (value.B !== undefined) return { B: Buffer.from(value.B).toString('base64') };
  if (value.BS !== undefined) return { BS: value.BS.map((item) => Buffer.from(item).toString('base64')) };
  if (value.M !== undefined) return { M: mapValues(value.M, toEventValue) };
  if (value.L !== undefined) return { L: value.L.map(toEventValue) };
  return value as EventAttributeValue;
}

function definedOnly<T extends object>(object: T): T {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined)) as T;
}

function mapValues<T, U>(object: Record<string, T>, map: (value: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(object).map(([key, value]) => [key, map(value)]));
}

/**
 * Lambda's reading of a stream function's partial batch response: the index in the batch of the
 * record to retry from (the reported one with the lowest sequence number), or `undefined` when every
 * record succeeded (no response, no or an empty `batchItemFailures`). A failure whose
 * `itemIdentifier` is empty or names no record of the batch fails the whole batch: index 0.
 */
export function retryFromIndex(result: unknown, batch: readonly DynamoDBRecord[]): number | undefined {
  const failures = (result as { batchItemFailures?: unknown } | null | undefined)?.batchItemFailures;
  if (failures === undefined || failures === null) return undefined;
  if (!Array.isArray(failures)) return 0;
  if (failures.length === 0) return undefined;
  const sequenceNumbers = batch.map((record) => record.dynamodb?.SequenceNumber);
  let lowest = Number.POSITIVE_INFINITY;
  for (const failure of failures) {
    const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
    const index = typeof id === 'string' && id !== '' ? sequenceNumbers.indexOf(id) : -1;
    if (index < 0) return 0;
    lowest = Math.min(lowest, index);
  }
  return lowest;
}

/** Why Lambda gave up on a batch. */
export type DiscardCondition = 'RetryAttemptsExhausted' | 'RecordAgeExceeded';

export interface DiscardedBatch {
  condition: DiscardCondition;
  records: readonly DynamoDBRecord[];
  shardId: string;
  streamArn: string;
  functionArn: string;
  /** The last invocation's request id and how it ended; none when the records expired unread. */
  lastInvocation?: { requestId: string; functionError: boolean };
  invokeCount: number;
}

/** The invocation record Lambda sends a stream mapping's on-failure destination for a discarded batch. */
export function onFailureRecord(batch: DiscardedBatch, now = new Date()) {
  const { records } = batch;
  const first = records[0]?.dynamodb;
  const last = records[records.length - 1]?.dynamodb;
  return {
    requestContext: {
      requestId: batch.lastInvocation?.requestId,
      functionArn: batch.functionArn,
      condition: batch.condition,
      approximateInvokeCount: batch.invokeCount,
    },
    responseContext: {
      statusCode: 200,
      executedVersion: '$LATEST',
      ...(batch.lastInvocation?.functionError && { functionError: 'Unhandled' }),
    },
    version: '1.0',
    timestamp: now.toISOString(),
    DDBStreamBatchInfo: {
      shardId: batch.shardId,
      startSequenceNumber: first?.SequenceNumber,
      endSequenceNumber: last?.SequenceNumber,
      approximateArrivalOfFirstRecord: arrival(first?.ApproximateCreationDateTime),
      approximateArrivalOfLastRecord: arrival(last?.ApproximateCreationDateTime),
      batchSize: records.length,
      streamArn: batch.streamArn,
    },
  };
}

/** Epoch seconds as Lambda writes an arrival time: ISO 8601 to the second. */
function arrival(epochSeconds: number | undefined): string | undefined {
  return epochSeconds === undefined
    ? undefined
    : new Date(epochSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}
