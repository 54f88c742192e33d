/**
 * `npx tsx bench/outbox-relay-cost.ts [--rounds N]`: what one relay invocation costs to drain a
 * group of 10, a group of 50 and 10 groups of 10 on DynamoDB Local and the SQS emulator — its
 * SendMessageBatch calls, its DynamoDB requests and its wall time, as the emulators answer and with
 * 5 ms added to every request (an AWS round trip). The outbox sends one message of a group per
 * call (DESIGN §9): these figures are the price of that rule. Prints a Markdown table.
 */

import { parseArgs } from 'node:util';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { marshall } from '@aws-sdk/util-dynamodb';
import type { DynamoDBStreamEvent } from 'aws-lambda';
import { openOutboxWorld } from '../harness/outbox-world.js';
import { spreadOf } from '../harness/statistics.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import { Outbox, type OutboxMessage } from '../lambdas/outbox/index.js';
import { groupPartition, type OutboxLayout } from '../lambdas/outbox/layout.js';
import { OutboxItems } from '../lambdas/outbox/outbox-items.js';
import { relayBatch } from '../lambdas/outbox/relay.js';
import { OUTBOX_SEND_RETRY } from '../lambdas/outbox/sender-environment.js';
import { sqsBatchSender } from '../lambdas/publisher/sqs-batch.js';
import { startDynamoDbLocal } from '../sandbox/dynamodb-local.js';
import { countRequests } from '../sandbox/request-counter.js';
import { startSqsEmulator } from '../sandbox/sqs-emulator.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createFifoQueue, deleteQueues } from './resources.js';

const SHAPES = [
  { groups: 1, perGroup: 10 },
  { groups: 1, perGroup: 50 },
  { groups: 10, perGroup: 10 },
];
const LATENCIES_MS = [0, 5];
/** Outbox.write takes at most 100 items, two per message. */
const MESSAGES_PER_WRITE = 10;
/** Relays so far: each drains groups of its own. */
let relays = 0;

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const rounds = Number(values.rounds);

const [dynamodbLocal, sqsEmulator] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
const endpoints: BenchEndpoints = { dynamodb: dynamodbLocal.endpoint, sqs: sqsEmulator.endpoint };
const world = await openOutboxWorld(endpoints);
try {
  // Unmeasured: the first relay pays for loading code and warming DynamoDB Local's JVM.
  await relayOnce(world.layout, { groups: 1, perGroup: 10 }, 0);
  console.log(
    '| groups × messages | added latency | SendMessageBatch calls | DynamoDB requests | wall ms, median (p10–p90) |',
  );
  console.log('|---|---|---|---|---|');
  for (const latencyMs of LATENCIES_MS) {
    for (const shape of SHAPES) {
      const runs = [];
      for (let round = 0; round < rounds; round++) runs.push(await relayOnce(world.layout, shape, latencyMs));
      const wall = spreadOf(runs.map((run) => run.wallMs));
      const [first] = runs;
      console.log(
        `| ${shape.groups} × ${shape.perGroup} | ${latencyMs} ms | ${first?.sqsCalls} | ${first?.dynamodbRequests} | ` +
          `${wall.median.toFixed(0)} (${wall.p10.toFixed(0)}–${wall.p90.toFixed(0)}) |`,
      );
    }
  }
} finally {
  await world.close();
  await Promise.all([sqsEmulator.stop(), dynamodbLocal.stop()]);
}

/** Writes the messages, then times one relay invocation on their markers; the queue must hold them all. */
async function relayOnce(layout: OutboxLayout, shape: (typeof SHAPES)[number], latencyMs: number) {
  const setup = dynamoDbClient(endpoints);
  const direct = sqsClient(endpoints);
  const queue = await createFifoQueue(direct, {});
  const groups = Array.from({ length: shape.groups }, (_, group) => `cost-${++relays}-g${group}`);
  const outbox = new Outbox({ client: setup, ...layout });
  for (const groupId of groups) {
    for (let from = 0; from < shape.perGroup; from += MESSAGES_PER_WRITE) {
      const messages: OutboxMessage[] = Array.from(
        { length: Math.min(MESSAGES_PER_WRITE, shape.perGroup - from) },
        (_, i) => ({
          type: 'StockReserved',
          groupId,
          key: `${groupId}-m${from + i}`,
          payload: { i: from + i },
        }),
      );
      await outbox.write({ messages });
    }
  }
  const event = await markerInserts(setup, layout, groups);

  const dynamodb = dynamoDbClient(endpoints, latencyMs);
  const sqs = sqsClient(endpoints, latencyMs);
  const dynamodbRequests = countRequests(dynamodb);
  const sqsRequests = countRequests(sqs);
  const started = performance.now();
  const response = await relayBatch(event, {
    items: new OutboxItems({ client: dynamodb, layout }),
    sendBatch: sqsBatchSender(sqs, queue.url),
    maxBatchBytes: 262_144,
    retry: OUTBOX_SEND_RETRY,
    claimMs: () => 60_000,
    timeLeftMs: () => 60_000,
  });
  const wallMs = performance.now() - started;

  const depth = await messagesInQueue(direct, queue.url);
  if (response.batchItemFailures.length > 0 || depth !== shape.groups * shape.perGroup) {
    throw new Error(`the relay left messages behind: ${depth} on the queue, ${JSON.stringify(response)}`);
  }
  await deleteQueues(direct, [queue]);
  for (const client of [setup, dynamodb]) client.destroy();
  for (const client of [direct, sqs]) client.destroy();
  return {
    wallMs,
    sqsCalls: sqsRequests.counts.SendMessageBatch ?? 0,
    dynamodbRequests: dynamodbRequests.total(),
  };
}

/** The stream event the relay gets for these groups' pending markers (its filter passes only those). */
async function markerInserts(
  client: DynamoDBClient,
  layout: OutboxLayout,
  groups: readonly string[],
): Promise<DynamoDBStreamEvent> {
  const documents = DynamoDBDocumentClient.from(client);
  const records: DynamoDBStreamEvent['Records'] = [];
  for (const groupId of groups) {
    const { Items = [] } = await documents.send(
      new QueryCommand({
        TableName: layout.tableName,
        KeyConditionExpression: '#pk = :group',
        ExpressionAttributeNames: { '#pk': layout.partitionKey },
        ExpressionAttributeValues: { ':group': groupPartition(groupId) },
        ConsistentRead: true,
      }),
    );
    for (const item of Items) {
      records.push({
        eventName: 'INSERT',
        dynamodb: { NewImage: marshall(item) as never, SequenceNumber: String(records.length + 1) },
      });
    }
  }
  return { Records: records };
}
