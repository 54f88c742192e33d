import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { Context, DynamoDBStreamEvent } from 'aws-lambda';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../harness/fault-proxy.js';
import { Outbox } from '../../lambdas/outbox/index.js';
import { OUTBOX_ATTRIBUTES as A, type OutboxLayout, PENDING_PARTITION } from '../../lambdas/outbox/layout.js';
import { handler as relayHandler } from '../../lambdas/outbox/relay-handler.js';
import { CLAIM_MARGIN_MS } from '../../lambdas/outbox/sender-environment.js';
import { handler as sweeperHandler } from '../../lambdas/outbox/sweeper-handler.js';
import { LOCAL_REGION } from '../../sandbox/local-aws-config.js';
import { localDynamoClient } from '../support/dynamodb.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';
import { lambdaContext } from '../support/lambda-context.js';
import { createOutboxTable } from '../support/outbox.js';
import { createFifoQueue, deleteQueues, drainQueue, type FifoQueue, localSqsClient } from '../support/sqs.js';

// DESIGN §9: a claim lasts the invocation's time left *when it is taken*, plus CLAIM_MARGIN_MS. The
// relay and sweeper handlers run as deployed (clients from the environment), their DynamoDB
// requests through a fault proxy that only watches: it reads each claim's lease off the request.

const TIMEOUT_MS = 60_000;
/** How far the invocation's clock moves while a run's SENT marks are written. */
const MARK_TAKES_MS = 20_000;
/** More than one run of claims: the second is claimed after the first was sent and marked. */
const MESSAGES = 15;

let dynamodb: DynamoDBClient;
let sqs: SQSClient;
let layout: OutboxLayout;
let queue: FifoQueue;
let proxy: FaultProxy;
/** How long each claim the handlers asked for lasts, in the order asked. */
let leases: number[];
/** The invocation's elapsed time, as its Lambda context tells it. */
let elapsedMs: number;

beforeAll(async () => {
  dynamodb = localDynamoClient();
  sqs = localSqsClient();
  layout = await createOutboxTable(dynamodb);
  queue = await createFifoQueue(sqs);
  proxy = await startFaultProxy({ service: 'dynamodb', upstream: emulatorEndpoint('dynamodbEndpoint') });
});
afterAll(async () => {
  await proxy.close();
  await deleteQueues(sqs, [queue]);
  sqs.destroy();
  dynamodb.destroy();
});

beforeEach(() => {
  leases = [];
  elapsedMs = 0;
  proxy.setPlan((request) => {
    const values = request.body.ExpressionAttributeValues as Record<string, { N?: string }> | undefined;
    const isClaim = String(request.body.UpdateExpression ?? '').startsWith('SET #owner');
    if (request.operation === 'UpdateItem' && isClaim && values) {
      leases.push(Number(values[':expires']?.N) - Number(values[':now']?.N));
    }
    if (request.operation === 'TransactWriteItems') elapsedMs += MARK_TAKES_MS;
    return undefined;
  });
  vi.stubEnv('AWS_ENDPOINT_URL_DYNAMODB', proxy.endpoint);
  vi.stubEnv('AWS_ENDPOINT_URL_SQS', emulatorEndpoint('sqsEndpoint'));
  vi.stubEnv('AWS_REGION', LOCAL_REGION);
  vi.stubEnv('AWS_ACCESS_KEY_ID', 'local');
  vi.stubEnv('AWS_SECRET_ACCESS_KEY', 'local');
  vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
  vi.stubEnv('OUTBOX_TABLE_NAME', layout.tableName);
  vi.stubEnv('OUTBOX_QUEUE_URL', queue.url);
  vi.stubEnv('OUTBOX_SWEEP_AFTER_SECONDS', '0');
});
afterEach(() => vi.unstubAllEnvs());

/** An invocation whose time left follows `elapsedMs`. */
const invocation = (): Context => ({
  ...lambdaContext(),
  getRemainingTimeInMillis: () => TIMEOUT_MS - elapsedMs,
});

/** Writes the messages of one group, in order, in one write; returns their keys. */
async function writeGroup(groupId: string) {
  const messages = Array.from({ length: MESSAGES }, (_, i) => ({
    type: 'OrderPlaced',
    groupId,
    key: `${groupId}-m${i}`,
    payload: { i },
  }));
  const { keys } = await new Outbox({ client: dynamodb, ...layout }).write({ messages });
  return keys;
}

/** The second run's claims were taken with 20 s less left: they last 20 s less than the first run's. */
function expectLeasesFromTimeLeft() {
  expect(leases).toHaveLength(MESSAGES);
  expect(new Set(leases.slice(0, 10))).toEqual(new Set([TIMEOUT_MS + CLAIM_MARGIN_MS]));
  expect(new Set(leases.slice(10))).toEqual(new Set([TIMEOUT_MS - MARK_TAKES_MS + CLAIM_MARGIN_MS]));
}

describe('a claim lasts the time left when it is taken, plus the margin', () => {
  it('in the relay', async () => {
    const groupId = `relay-${randomUUID().slice(0, 8)}`;
    const keys = await writeGroup(groupId);
    const event: DynamoDBStreamEvent = {
      Records: [
        {
          eventName: 'INSERT',
          dynamodb: {
            SequenceNumber: '1',
            // A pending marker, as the stream's filter passes it.
            NewImage: { [A.pending]: { S: PENDING_PARTITION }, [A.groupId]: { S: groupId } },
          },
        },
      ],
    };

    expect(await relayHandler(event, invocation())).toEqual({ batchItemFailures: [] });

    expect((await drainQueue(sqs, queue.url, MESSAGES)).map(({ envelope }) => envelope.key)).toEqual(keys);
    expectLeasesFromTimeLeft();
  });

  it('in the sweeper', async () => {
    const groupId = `sweeper-${randomUUID().slice(0, 8)}`;
    const keys = await writeGroup(groupId);

    const report = await sweeperHandler({}, invocation());

    expect(report.groups.find((group) => group.groupId === groupId)?.sent).toEqual(keys);
    await drainQueue(sqs, queue.url, MESSAGES);
    expectLeasesFromTimeLeft();
  });
});
