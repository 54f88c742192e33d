import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';
import { listUnresolved } from '../../cli/in-doubt-records.js';
import {
  ID_ATTRIBUTE,
  LEGACY_UNRESOLVED_INDEX_NAME,
  UNRESOLVED_ATTRIBUTE,
  UNRESOLVED_INDEX_ATTRIBUTES,
  UNRESOLVED_INDEX_NAME,
  UPDATED_AT_ATTRIBUTE,
} from '../../lambdas/idempotency/record.js';
import { surveyUnresolved } from '../../lambdas/monitor/unresolved-counts.js';
import { localDynamoClient, uniqueName } from '../support/dynamodb.js';

// Item 9b of issue 31: the unresolved index projected every attribute, so the monitor's COUNT
// queries read every parked record's kept message (up to 300 KB each) on each run. It now projects
// what its readers read; the earlier index stays one version (one index per CloudFormation update),
// and readers fall back on it while the new one is missing or backfilling.

const dynamodb = localDynamoClient();
afterAll(() => dynamodb.destroy());

const RECORDS = 12;
const MESSAGE_BYTES = 100 * 1024;

type Projection = 'summary' | 'legacy';

/** A table with the indexes given: the new one (its projection), the earlier ALL one, or both. */
async function tableWith(...indexes: Projection[]): Promise<string> {
  const name = uniqueName('unresolved-index');
  const keys = [
    { AttributeName: UNRESOLVED_ATTRIBUTE, KeyType: 'HASH' as const },
    { AttributeName: UPDATED_AT_ATTRIBUTE, KeyType: 'RANGE' as const },
  ];
  await dynamodb.send(
    new CreateTableCommand({
      TableName: name,
      AttributeDefinitions: [
        { AttributeName: ID_ATTRIBUTE, AttributeType: 'S' },
        { AttributeName: UNRESOLVED_ATTRIBUTE, AttributeType: 'S' },
        { AttributeName: UPDATED_AT_ATTRIBUTE, AttributeType: 'N' },
      ],
      KeySchema: [{ AttributeName: ID_ATTRIBUTE, KeyType: 'HASH' }],
      GlobalSecondaryIndexes: indexes.map((index) =>
        index === 'summary'
          ? {
              IndexName: UNRESOLVED_INDEX_NAME,
              KeySchema: keys,
              Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...UNRESOLVED_INDEX_ATTRIBUTES] },
            }
          : {
              IndexName: LEGACY_UNRESOLVED_INDEX_NAME,
              KeySchema: keys,
              Projection: { ProjectionType: 'ALL' },
            },
      ),
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  const documents = DynamoDBDocumentClient.from(dynamodb);
  for (let i = 0; i < RECORDS; i++) {
    await documents.send(
      new PutCommand({
        TableName: name,
        Item: {
          id: `notifications#cost-${i}`,
          status: 'IN_DOUBT',
          unresolved: 'IN_DOUBT',
          payloadHash: 'hash',
          updatedAt: Date.now() + i,
          attempts: 1,
          error: { name: 'OutcomeUnknownError', message: 'POST /send failed after the request was sent' },
          message: { body: 'x'.repeat(MESSAGE_BYTES), groupId: `group-${i}` },
        },
      }),
    );
  }
  return name;
}

/** Read units the Queries sent through `client` while `run` runs (DynamoDB's own ConsumedCapacity). */
async function readUnits(client: DynamoDBClient, run: () => Promise<unknown>): Promise<number> {
  let units = 0;
  const name = uniqueName('read-units');
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const query = context.commandName === 'QueryCommand';
      if (query) (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
      const output = await next(args);
      if (query)
        units +=
          (output.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity
            ?.CapacityUnits ?? 0;
      return output;
    },
    { step: 'initialize', name },
  );
  try {
    await run();
    return units;
  } finally {
    client.middlewareStack.remove(name);
  }
}

describe('the unresolved index', () => {
  it('projects no kept message: counting reads the summaries, not the bodies', async () => {
    const both = await tableWith('summary', 'legacy');
    const legacyOnly = await tableWith('legacy');
    const now = Math.floor(Date.now() / 1000);

    const counted = { summary: 0, legacy: 0 };
    const summaryUnits = await readUnits(dynamodb, async () => {
      counted.summary = (await surveyUnresolved(dynamodb, both, now)).counts.inDoubt;
    });
    const legacyUnits = await readUnits(dynamodb, async () => {
      counted.legacy = (await surveyUnresolved(dynamodb, legacyOnly, now)).counts.inDoubt;
    });

    expect(counted).toEqual({ summary: RECORDS, legacy: RECORDS });
    console.log(
      `unresolved index, ${RECORDS} records of ${MESSAGE_BYTES / 1024} KB: counting read ${summaryUnits} read units ` +
        `on ${UNRESOLVED_INDEX_NAME}, ${legacyUnits} on ${LEGACY_UNRESOLVED_INDEX_NAME} (ALL)`,
    );
    // The bodies alone are RECORDS × 100 KB = 300 eventually consistent 4 KB units.
    expect(legacyUnits).toBeGreaterThanOrEqual((RECORDS * MESSAGE_BYTES) / 4096 / 2);
    // Each query (one per reason) reads at least half a unit; the summaries fit well within one.
    expect(summaryUnits).toBeLessThanOrEqual(2);
  });

  it('the monitor and the list fall back on the earlier index while the new one is missing', async () => {
    const legacyOnly = await tableWith('legacy');
    expect((await surveyUnresolved(dynamodb, legacyOnly, Math.floor(Date.now() / 1000))).counts).toEqual({
      inDoubt: RECORDS,
      retryPending: 0,
    });
    const target = {
      dynamodb,
      sqs: undefined as never,
      resources: { idempotencyTableName: legacyOnly, queueUrl: '', idempotencyTtlSeconds: '60' },
    };
    const listed = (await listUnresolved(target)).records;
    expect(listed).toHaveLength(RECORDS);
    expect(listed[0]).toMatchObject({ id: 'notifications#cost-0', groupId: 'group-0', attempts: 1 });
  });

  it('the list reads each shown record’s group from the table', async () => {
    const summaryOnly = await tableWith('summary');
    const target = {
      dynamodb,
      sqs: undefined as never,
      resources: { idempotencyTableName: summaryOnly, queueUrl: '', idempotencyTtlSeconds: '60' },
    };
    const listed = (await listUnresolved(target)).records;
    expect(listed.map((record) => record.groupId)).toEqual(
      Array.from({ length: RECORDS }, (_, i) => `group-${i}`),
    );
  });
});
