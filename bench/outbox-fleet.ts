import { randomUUID } from 'node:crypto';
import { DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import { startBudgetProxy } from '../harness/budget-proxy.js';
import { createOutboxTable } from '../harness/outbox-world.js';
import { percentile } from '../harness/statistics.js';
import type { OutboxLayout } from '../lambdas/outbox/layout.js';
import { OutboxItems } from '../lambdas/outbox/outbox-items.js';
import { OUTBOX_SEND_RETRY } from '../lambdas/outbox/sender-environment.js';
import { sqsBatchSender } from '../lambdas/publisher/sqs-batch.js';
import type { ResolvedOutboxSettings } from '../lib/constructs/outbox-settings.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { pause } from '../sandbox/pause.js';
import { type BenchEndpoints, sqsClient } from './clients.js';
import { type ProducerLoad, runProducers } from './outbox-fleet-producers.js';
import { startFleetSenders } from './outbox-fleet-senders.js';
import { createFifoQueue, deleteQueues } from './resources.js';

/** SQS's largest message: the relay's batches stay under it (the construct's default). */
const MAX_BATCH_BYTES = 262_144;
/** How often the drain checks whether anything is still pending. */
const DRAIN_CHECK_MS = 250;

export interface FleetOptions {
  endpoints: BenchEndpoints;
  /** Each partition-key value's write budget a second, of the table and of the pending index. */
  unitsPerSecond: number;
  /** How long the producers write. */
  seconds: number;
  /** The first seconds of it, left out of the rate: producers and relay reach their pace. */
  warmSeconds: number;
  groups: readonly string[];
  load: ProducerLoad;
  /** The `pendingShards` of producer `index`, `elapsedMs` into the run. */
  shardsOf: (index: number, elapsedMs: number) => number;
  /** The shards the steady window is spread over: the ceiling's n. */
  shards: number;
  /** The construct's settings the relay mapping and the sweeper follow. */
  settings: ResolvedOutboxSettings;
  sweepIntervalMs: number;
}

export interface FleetRun {
  /** Messages committed by the producers. */
  committed: number;
  /** Messages sent (first sends) in the steady window, a second. */
  perSecond: number;
  /** unitsPerSecond ÷ 2 × shards: a message writes its shard twice, its marker's put and delete. */
  ceiling: number;
  /** Commit → first send by the relay, ms (from the relay's reports). */
  relayLagP50Ms: number;
  relayLagP99Ms: number;
  /** Producer transactions canceled for throttling, and writes that stayed throttled. */
  throttled: number;
  gaveUp: number;
  /** Messages the sweeper sent first. */
  swept: number;
  /** Committed but never on the queue; groups whose messages came out of order. */
  lost: number;
  outOfOrderGroups: number;
  /** Relay batches retried or discarded by the event source, and invocations that threw. */
  relayRetries: number;
  relayErrors: number;
  /** From the producers' stop to nothing pending. */
  drainSeconds: number;
}

/**
 * One fleet run (issue 33): producers write through `Outbox` → the budget proxy → DynamoDB Local,
 * a table with its stream; the relay runs from that stream and the sweeper on its schedule, both
 * through the proxy (a SENT mark's marker delete counts against its shard's budget, as on AWS).
 * After `seconds` the producers stop, the relay drains, and the queue is read: every committed
 * message must be there, each group in order.
 */
export async function runFleet(options: FleetOptions): Promise<FleetRun> {
  const direct = new DynamoDBClient(localAwsConfig(options.endpoints.dynamodb));
  const sqs = sqsClient(options.endpoints);
  const layout: OutboxLayout = {
    tableName: `fleet-${randomUUID().slice(0, 8)}`,
    partitionKey: 'pk',
    sortKey: 'sk',
  };
  const { tableArn, streamArn } = await createOutboxTable(direct, layout, { stream: true });
  const queue = await createFifoQueue(sqs, {});
  const proxy = await startBudgetProxy({
    upstream: options.endpoints.dynamodb,
    unitsPerSecond: options.unitsPerSecond,
  });
  // The producers' and the functions' own clients, with the SDK's defaults, as on AWS.
  const producerClient = new DynamoDBClient(localAwsConfig(proxy.endpoint));
  const senderClient = new DynamoDBClient(localAwsConfig(proxy.endpoint));
  const senders = await startFleetSenders({
    dynamodbEndpoint: options.endpoints.dynamodb,
    tableName: layout.tableName,
    tableArn,
    streamArn: String(streamArn),
    sender: {
      items: new OutboxItems({ client: senderClient, layout }),
      sendBatch: sqsBatchSender(sqs, queue.url),
      maxBatchBytes: MAX_BATCH_BYTES,
      retry: OUTBOX_SEND_RETRY,
    },
    sqs,
    settings: options.settings,
    sweepIntervalMs: options.sweepIntervalMs,
  });
  let stopped = false;
  try {
    const startedAt = Date.now();
    const until = startedAt + options.seconds * 1000;
    const log = await runProducers(
      {
        client: producerClient,
        layout,
        groups: options.groups,
        load: options.load,
        shardsOf: options.shardsOf,
        sent: senders.sends,
        onSent: senders.onSent,
      },
      startedAt,
      until,
    );
    const drainSeconds = await untilNothingPending(new OutboxItems({ client: direct, layout }), options);
    await senders.stop();
    stopped = true;

    const received = await receiveAll(sqs, queue.url);
    const got = new Set(received.map((message) => message.key));
    const expected = [...log.committed.values()].flat();
    const outOfOrderGroups = [...log.committed].filter(([groupId, keys]) => {
      const order = received.filter((message) => message.groupId === groupId).map((message) => message.key);
      const unique = order.filter((key, i) => order.indexOf(key) === i);
      return JSON.stringify(unique) !== JSON.stringify(keys);
    }).length;
    const windowStart = startedAt + options.warmSeconds * 1000;
    const sends = [...senders.sends];
    const inWindow = sends.filter(([, send]) => send.at >= windowStart && send.at < until).length;
    const lags = sends
      .filter(([, send]) => send.by === 'relay')
      .map(([key, send]) => Math.max(0, send.at - (log.committedAt.get(key) ?? send.at)))
      .sort((a, b) => a - b);
    return {
      committed: expected.length,
      perSecond: inWindow / (options.seconds - options.warmSeconds),
      ceiling: (options.unitsPerSecond / 2) * options.shards,
      relayLagP50Ms: lags.length > 0 ? percentile(lags, 50) : 0,
      relayLagP99Ms: lags.length > 0 ? percentile(lags, 99) : 0,
      throttled: log.throttled,
      gaveUp: log.gaveUp,
      swept: sends.filter(([, send]) => send.by === 'sweeper').length,
      lost: expected.filter((key) => !got.has(key)).length,
      outOfOrderGroups,
      relayRetries: senders.batches.filter((batch) => batch.retrying > 0 || batch.discarded > 0).length,
      relayErrors: senders.relayErrors.length,
      drainSeconds,
    };
  } finally {
    if (!stopped) await senders.stop();
    producerClient.destroy();
    senderClient.destroy();
    await proxy.close();
    await deleteQueues(sqs, [queue]);
    // DynamoDB Local keeps every table's stream: the next runs should not share it with this one's.
    await direct.send(new DeleteTableCommand({ TableName: layout.tableName }));
    sqs.destroy();
    direct.destroy();
  }
}

/**
 * Waits until no marker is pending (the relay drained, or else the sweeper), bounded by the time
 * the sweeper needs to take over: past its `sweepAfter`, two of its runs, and a minute. Returns the
 * seconds it took; throws past the bound.
 */
async function untilNothingPending(items: OutboxItems, options: FleetOptions): Promise<number> {
  const from = Date.now();
  const boundMs = options.settings.sweepAfter.toMilliseconds() + 2 * options.sweepIntervalMs + 60_000;
  const never = new AbortController().signal;
  while ((await items.countPendingBefore(Date.now() + 3_600_000)) > 0) {
    if (Date.now() - from > boundMs)
      throw new Error(`messages still pending ${boundMs} ms after the producers stopped`);
    await pause(DRAIN_CHECK_MS, never);
  }
  return (Date.now() - from) / 1000;
}

/** Receives and deletes until the queue is empty: a FIFO queue hands out a group's next once its head is gone. */
async function receiveAll(sqs: SQSClient, queueUrl: string): Promise<{ key: string; groupId: string }[]> {
  const received: { key: string; groupId: string }[] = [];
  for (let empty = 0; empty < 2; ) {
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1 }),
    );
    if (Messages.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    for (const message of Messages) {
      const envelope = JSON.parse(String(message.Body)) as { key: string; groupId: string };
      received.push({ key: envelope.key, groupId: envelope.groupId });
    }
    await sqs.send(
      new DeleteMessageBatchCommand({
        QueueUrl: queueUrl,
        Entries: Messages.map((message, i) => ({ Id: String(i), ReceiptHandle: message.ReceiptHandle })),
      }),
    );
  }
  return received;
}
