import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import type { StandardSchemaV1 } from '../../lambdas/common/standard-schema.js';
import {
  DLQ_ATTRIBUTES,
  type FifoBatchOptions,
  leaseOperation,
  processFifoBatch,
  transactionalOperation,
} from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { createTable, localDynamoClient } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { deadLetters, eventRecord } from '../support/sqs.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// `payload` takes any Standard Schema, not only zod's classic schemas: zod/mini's, or one whose
// validation is asynchronous.

/** The transactional test's table: transactional mode keeps its records in DynamoDB only. */
let dynamodb: DynamoDBClient;
let tableName: string;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  tableName = await createTable(dynamodb, 'payload-schema');
});

afterAll(() => {
  dynamodb.destroy();
});

function consume(operations: FifoBatchOptions['operations'], payloads: unknown[], store: LeaseStore) {
  const dlq = deadLetters();
  const options: FifoBatchOptions = {
    operations,
    store,
    deadLetterQueue: { client: dlq.client, queueUrl: 'https://sqs.local/dlq.fifo' },
    logger: silentLogger(),
    metrics: metricsRecorder(),
  };
  const event: SQSEvent = { Records: payloads.map((payload) => eventRecord('Credit', payload)) };
  return { dlq, response: processFifoBatch(event, lambdaContext(), options) };
}

/** A Standard Schema of another library's making, whose validation answers asynchronously. */
const positiveCents: StandardSchemaV1<unknown, { cents: number }> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    validate: async (value) => {
      const cents = (value as { cents?: unknown } | null)?.cents;
      return typeof cents === 'number' && cents > 0
        ? { value: { cents } }
        : { issues: [{ message: 'must be a positive number', path: [{ key: 'cents' }] }] };
    },
  },
};

describe.each(LEASE_STORES)('payload schemas (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  it('takes a zod/mini schema: its output reaches the effect, its problems the DLQ', async () => {
    const seen: number[] = [];
    const credit = leaseOperation({
      namespace: 'mini',
      mode: 'at-least-once',
      payload: z.object({ cents: z.pipe(z.string(), z.transform(Number)) }),
      run: ({ payload }) => {
        seen.push(payload.cents);
      },
    });
    const { dlq, response } = consume(
      { Credit: credit },
      [{ cents: '250' }, { cents: 250 }],
      records.store(),
    );
    expect(await response).toEqual({ batchItemFailures: [] });
    expect(seen).toEqual([250]);
    expect(dlq.sent.map((input) => input.MessageAttributes?.[DLQ_ATTRIBUTES.errorName]?.StringValue)).toEqual(
      ['InvalidPayloadError'],
    );
  });
});

// Transactional mode refuses a Valkey store: its records are DynamoDB's (one transaction with the effect).
describe('payload schemas, transactional (DynamoDB only)', () => {
  it('awaits a schema whose validation is asynchronous', async () => {
    const planned: number[] = [];
    const credit = transactionalOperation({
      namespace: 'async',
      payload: positiveCents,
      plan: ({ payload }) => {
        planned.push(payload.cents);
        return { writes: [] };
      },
    });
    const { dlq, response } = consume(
      { Credit: credit },
      [{ cents: 5 }, { cents: -5 }],
      new DynamoDBIdempotencyStore({ client: dynamodb, tableName }),
    );
    expect(await response).toEqual({ batchItemFailures: [] });
    expect(planned).toEqual([5]);
    expect(
      dlq.sent.map((input) => input.MessageAttributes?.[DLQ_ATTRIBUTES.errorMessage]?.StringValue),
    ).toEqual([
      'the Credit payload is invalid: cents: must be a positive number. Fix the producer, then publish a corrected message.',
    ]);
  });
});
