import { randomUUID } from 'node:crypto';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { beforeAll, describe, expect, it } from 'vitest';
import { resolveAsRetry } from '../../cli/in-doubt-retry.js';
import { createEnvelope } from '../../lambdas/common/envelope.js';
import { awsTraceHeaderOf, sqsTraceAttributes } from '../../lambdas/common/trace-context.js';
import { leaseOperation, OutcomeUnknownError, processFifoBatch } from '../../lambdas/consumer/index.js';
import { DynamoDBIdempotencyStore } from '../../lambdas/idempotency/index.js';
import type { LeaseStore } from '../../lambdas/idempotency/lease-store.js';
import { DEFAULT_RECORD_TTL_SECONDS } from '../../lambdas/idempotency/record.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { toSqsRecord } from '../../sandbox/sqs-event.js';
import { consumerTestWorld } from '../support/consumer-world.js';
import { readItem } from '../support/dynamodb.js';
import { lambdaContext } from '../support/lambda-context.js';
import { LEASE_STORES, leaseRecords } from '../support/lease-stores.js';
import { receiveMessages } from '../support/sqs.js';
import { metricsRecorder, silentLogger } from '../support/telemetry.js';

// DESIGN §6: a message parked IN_DOUBT keeps the producer's trace context with it, and
// `oncely in-doubt resolve --as retry` sends it back with that context, through the emulators.

const world = consumerTestWorld('consumer-trace');
/** The table `oncely in-doubt resolve` reads: the CLI works on DynamoDB's records. */
let table: string;
beforeAll(() => {
  [table] = world.tables as [string];
});

const trace = {
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
  tracestate: 'rojo=00f067aa0ba902b7',
  awsTraceHeader: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
};

/** Parks one message IN_DOUBT in `store`: sent with the trace context, its outcome unknown. */
async function parkInDoubt(store: LeaseStore) {
  const { queue, dlq } = await world.queuePair();
  const key = randomUUID();
  const envelope = createEnvelope({ type: 'Charge', groupId: 'g', key, payload: {} });
  const { MessageAttributes, MessageSystemAttributes } = sqsTraceAttributes(trace);
  await world.sqs.send(
    new SendMessageCommand({
      QueueUrl: queue.url,
      MessageBody: JSON.stringify(envelope),
      MessageAttributes,
      ...awsTraceHeaderOf(MessageSystemAttributes?.AWSTraceHeader.StringValue),
      MessageGroupId: 'g',
      MessageDeduplicationId: key,
    }),
  );
  const [received] = await receiveMessages(world.sqs, queue.url, 1);
  const event = { Records: [toSqsRecord(received as never, queue.arn, LOCAL_REGION)] };
  const response = await processFifoBatch(event, lambdaContext(), {
    operations: {
      Charge: leaseOperation({
        namespace: 'charges',
        mode: 'at-most-once',
        run: () => {
          throw new OutcomeUnknownError('the card network timed out');
        },
      }),
    },
    store,
    deadLetterQueue: { client: world.sqs, queueUrl: dlq.url },
    logger: silentLogger(),
    metrics: metricsRecorder(),
  });
  expect(response.batchItemFailures).toEqual([]);
  return { queue, id: `charges#${key}` };
}

describe.each(LEASE_STORES)('a message parked IN_DOUBT (records in %s)', (storeName) => {
  const records = leaseRecords(storeName);

  it('keeps its trace context in its record', async () => {
    const { id } = await parkInDoubt(records.store());
    const record = await records.read(id);
    expect(record?.status).toBe('IN_DOUBT');
    expect(record?.message).toMatchObject({ groupId: 'g', traceContext: trace });
  });
});

// `oncely in-doubt resolve` reads and writes the table: the CLI resolves DynamoDB's records only.
describe('a message parked IN_DOUBT, resolved by the CLI (DynamoDB only)', () => {
  it('keeps its trace context, and --as retry sends it back with it', async () => {
    const { queue, id } = await parkInDoubt(
      new DynamoDBIdempotencyStore({ client: world.dynamodb, tableName: table }),
    );
    const record = await readItem(table, id);
    expect(record?.status).toBe('IN_DOUBT');
    expect(record?.message).toMatchObject({ groupId: 'g', traceContext: trace });

    await resolveAsRetry(
      {
        dynamodb: world.dynamodb,
        sqs: world.sqs,
        resources: {
          idempotencyTableName: table,
          queueUrl: queue.url,
          idempotencyTtlSeconds: String(DEFAULT_RECORD_TTL_SECONDS),
        },
      },
      id,
    );
    const [again] = await receiveMessages(world.sqs, queue.url, 1);
    expect(again?.MessageAttributes?.traceparent?.StringValue).toBe(trace.traceparent);
    expect(again?.MessageAttributes?.tracestate?.StringValue).toBe(trace.tracestate);
    expect(again?.Attributes?.AWSTraceHeader).toBe(trace.awsTraceHeader);
  });
});
