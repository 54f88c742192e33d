import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { outboxFromOutputs } from 'oncely/cdk';
import { type OutgoingMessage, publish } from 'oncely/client';
import { CONSUMER_METRICS } from 'oncely/consumer';
import { startEmailGateway } from '../harness/email-gateway.js';
import { differences, readInDoubtIds, readLedger } from '../harness/ledger-snapshot.js';
import { countPending, readOutbox } from '../harness/outbox-snapshot.js';
import { resendAfterDedupWindow } from '../harness/resend-after-window.js';
import { waitFor } from '../harness/wait-for.js';
import { buildWorkload, type WorkloadSize } from '../harness/workload.js';
import { NOTIFICATIONS_NAMESPACE } from '../lambdas/shop/consumer/notifications.js';
import { orderPlacedKey } from '../lambdas/shop/orders/place-order.js';
import { LEDGER_TABLE_OUTPUT, ORDERS_OUTPUTS } from '../lib/shop/shop-stack.js';
import { MetricsTally } from './metrics-tally.js';
import { startOncelyLocal } from './oncely-local.js';
import { DRAIN_TIMEOUT_MS, PLACE_CONCURRENCY, runOrderFlow, splitByProducer } from './order-flow.js';

/** The shop's CDK app: the directory of its cdk.json. */
const SHOP_APP = dirname(dirname(fileURLToPath(import.meta.url)));
const PUBLISH_CHUNK = 500;
const LOG_FILE = '.oncely/demo-functions.log';
/** How often the sandbox runs its schedules: the outbox's sweeper works during the demo, not once a minute. */
const SCHEDULE_INTERVAL_SECONDS = 3;

export interface DemoReport {
  checks: { name: string; ok: boolean; detail?: string }[];
}

/**
 * `npm start`: the sandbox, driven the way a user's services would drive the deployed pipeline,
 * with trouble injected on purpose; the report checks that every effect happened exactly once.
 */
export async function runDemo(
  size: WorkloadSize,
  print: (line: string) => void,
  progress: (line: string) => void = print,
): Promise<DemoReport> {
  const workload = buildWorkload(size);
  // The gateway sees each e-mail's Idempotency-Key: the consumer's record id, `namespace#key`.
  const receipts = workload.notificationKeys.map((key) => `${NOTIFICATIONS_NAMESPACE}#${key}`);
  // Trouble strikes the earliest receipts, so their 12-second wait for redelivery overlaps the
  // rest of the work instead of trailing after it.
  const firstReceipts = workload.stream
    .filter((message) => message.type === 'SendNotification')
    .map((message) => `${NOTIFICATIONS_NAMESPACE}#${message.key}`);
  const hangKey = firstReceipts[0] ?? '';
  const flakyKeys = new Set(firstReceipts.slice(1, 41));
  const gateway = await startEmailGateway((key) =>
    key === hangKey ? 'hang' : flakyKeys.has(key) ? 'unavailable' : 'accept',
  );
  const tally = new MetricsTally();
  mkdirSync('.oncely', { recursive: true });
  writeFileSync(LOG_FILE, '');

  print(
    'Starting the sandbox (`oncely local`): DynamoDB Local, the SQS emulator, the shop’s stack synthesised …',
  );
  const sandbox = await startOncelyLocal({
    appDirectory: SHOP_APP,
    environment: { NOTIFICATION_URL: gateway.url, NOTIFICATION_TIMEOUT_MS: '10000' },
    scheduleIntervalSeconds: SCHEDULE_INTERVAL_SECONDS,
    // Its output is the functions' (and its own): their EMF metrics are tallied, the rest logged.
    onOutput: (line) => {
      if (!tally.add(line)) appendFileSync(LOG_FILE, `${line}\n`);
    },
  }).catch(async (error: unknown) => {
    await gateway.close();
    throw error;
  });
  const { endpoints, region, resources, outputs, stackName, console: pipelineConsole } = sandbox.description;
  const ledgerTableName = outputs[LEDGER_TABLE_OUTPUT];
  const placeOrderFunctionName = outputs[ORDERS_OUTPUTS.placeOrderFunctionName];
  // The edge answers for Lambda, SQS and DynamoDB alike, and the queue URLs name it.
  const local = {
    endpoint: endpoints.edge,
    region,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  const lambda = new LambdaClient(local);
  const sqs = new SQSClient(local);
  const dynamodb = new DynamoDBClient(local);
  try {
    if (!resources || !ledgerTableName || !placeOrderFunctionName) {
      throw new Error(
        `${stackName} has no OncelyPipeline, or no ${LEDGER_TABLE_OUTPUT} or ${ORDERS_OUTPUTS.placeOrderFunctionName} output: is ${SHOP_APP} the shop?`,
      );
    }
    // The orders table holds the outbox: its outputs name the table, its keys and the stuck bound.
    const outbox = outboxFromOutputs(`the sandbox of ${stackName}`, outputs);
    const send = (messages: OutgoingMessage[], requestId?: string) =>
      publish(messages, { functionName: resources.publisherFunctionName, lambda, requestId });
    // In flight included: a queue is done only once nothing is being processed either.
    const queueDepth = async (QueueUrl: string) => {
      const { Attributes } = await sqs.send(
        new GetQueueAttributesCommand({
          QueueUrl,
          AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
        }),
      );
      return (
        Number(Attributes?.ApproximateNumberOfMessages ?? 0) +
        Number(Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
      );
    };
    if (pipelineConsole) print(`Watch it in the console while it runs: ${pipelineConsole.url}`);
    print(
      `Ready in the sandbox (${stackName}); schedules run every ${SCHEDULE_INTERVAL_SECONDS} s; ` +
        `function logs go to ${LOG_FILE}.\n`,
    );
    print(`1. A stock load: ${workload.stock.length} StockReceived events.`);
    await send(workload.stock);
    await waitFor(
      async () => (await readLedger(dynamodb, ledgerTableName)).stock.size === workload.stock.length,
      30_000,
    );

    const all = [...workload.stream];
    all.splice(120, 0, workload.poison[0] as OutgoingMessage);
    all.splice(240, 0, workload.poison[1] as OutgoingMessage);
    const { orders: perCustomer, rest: stream } = splitByProducer(all);
    const started = Date.now();
    const orderCount = perCustomer.reduce((n, chain) => n + chain.length, 0);
    print(
      `2. ${orderCount} orders of ${perCustomer.length} customers, placed through the orders service ` +
        `(Lambda Invoke of PlaceOrder, ${PLACE_CONCURRENCY} customers at a time):\n` +
        '   each order and its OrderPlaced event commit in one transaction; the outbox publishes the event.',
    );
    const orders = await runOrderFlow({
      lambda,
      dynamodb,
      functionName: placeOrderFunctionName,
      outbox,
      orders: perCustomer,
      progress,
    });
    const placed = orders.outcomes.filter((outcome) => outcome.placed);
    const refused = orders.outcomes.flatMap((o) => (o.placed ? [] : [`${o.orderId}: ${o.errorType}`]));
    print(
      `   placed ${placed.length} in ${seconds(orders.placedAfterMs)} s; ` +
        (orders.drainedAfterMs === undefined
          ? `the outbox still had OrderPlaced events pending ${seconds(DRAIN_TIMEOUT_MS)} s later.`
          : `the outbox had published every OrderPlaced ${seconds(orders.drainedAfterMs - orders.placedAfterMs)} s later.`),
    );
    const { repeat } = orders;
    print(
      `   - order ${repeat.outcome.orderId} placed again: ` +
        (repeat.outcome.placed
          ? 'ACCEPTED'
          : `refused with ${repeat.outcome.errorType}; ${repeat.unchanged ? 'nothing written or published' : 'but its items CHANGED'}`),
    );

    const customers = new Set(stream.map((m) => m.groupId)).size;
    // One group, two producers: SQS keeps the order of each producer's sends, not between them.
    print(
      `3. ${stream.length} payment, cancellation and receipt events of ${customers} customers, through the client,\n` +
        '   only now that the outbox has nothing pending: each customer’s events must follow its OrderPlaced,\n' +
        '   and a group’s order across two producers holds only if the second waits for the first.',
    );
    const publishStarted = Date.now();
    const firstResults = new Map<string, string>();
    let requests = 0;
    let firstRequest: { messages: OutgoingMessage[]; requestId: string; results: unknown } | undefined;
    for (let i = 0; i < stream.length; i += PUBLISH_CHUNK) {
      const messages = stream.slice(i, i + PUBLISH_CHUNK);
      const response = await send(messages);
      requests++;
      firstRequest ??= { messages, requestId: response.requestId, results: response.results };
      for (const result of response.results)
        if (result.status === 'sent') firstResults.set(result.key, result.messageId);
    }
    print(
      `   published ${firstResults.size} messages in ${requests} requests of up to ${PUBLISH_CHUNK} ` +
        `(${seconds(Date.now() - publishStarted)} s).`,
    );

    print('4. Trouble, on purpose:');
    const replay = firstRequest ? await send(firstRequest.messages, firstRequest.requestId) : undefined;
    const replayed = JSON.stringify(replay?.results) === JSON.stringify(firstRequest?.results);
    print(
      `   - the first request repeated with its requestId: ${replayed ? 'answered from the publisher’s record' : 'NOT replayed'}`,
    );
    const retried = await send(stream.slice(0, 300));
    const stoppedBySqs = retried.results.filter(
      (r) => r.status === 'sent' && firstResults.get(r.key) === r.messageId,
    ).length;
    print(
      `   - a producer retried ${retried.results.length} messages with a new requestId: SQS deduplicated ${stoppedBySqs}`,
    );
    const resent = stream.slice(300, 500).filter((m) => m.type !== 'OrderShipped');
    // A copy of the receipt left in doubt is acknowledged as in doubt (an operator's to resolve), not
    // counted as a duplicate: every other re-sent copy must be.
    const resentDuplicates = resent.filter((m) => `${NOTIFICATIONS_NAMESPACE}#${m.key}` !== hangKey).length;
    await resendAfterDedupWindow(sqs, resources.queueUrl, resent);
    print(
      `   - ${resent.length} messages re-sent as after SQS’s 5-minute window (fresh dedup ids, same keys)`,
    );
    print(
      `   - ${workload.poison.length} poison messages (an unknown type; an order beyond the stock, placed through PlaceOrder)`,
    );
    print(`   - the e-mail gateway is unavailable (503) on the first try of ${flakyKeys.size} receipts`);
    print('   - and hangs on one receipt until the consumer Lambda times out, holding its lease\n');

    let dlqDepth = 0;
    let inDoubtIds: string[] = [];
    let finishedAt = Date.now();
    await waitFor(
      async () => {
        dlqDepth = await queueDepth(resources.dlqUrl);
        const queued = await queueDepth(resources.queueUrl);
        progress(
          `   … ${seconds(Date.now() - started)} s: ${tally.get(CONSUMER_METRICS.processed)} effects applied, ` +
            `${tally.get(CONSUMER_METRICS.duplicate)} duplicates stopped, ${dlqDepth} in the DLQ, ` +
            `${tally.get(CONSUMER_METRICS.inDoubt)} in doubt, ${queued} queued`,
        );
        finishedAt = Date.now();
        // Scanning the tables competes with the consumer for DynamoDB Local: only once the queue is empty.
        if (queued > 0) return false;
        if ((await countPending(dynamodb, outbox)) > 0) return false;
        const ledger = await readLedger(dynamodb, ledgerTableName);
        inDoubtIds = await readInDoubtIds(dynamodb, resources.idempotencyTableName);
        // At-most-once: every receipt ends up sent or in doubt (or both: sent, but not recorded), never twice.
        const receiptsSettled = receipts.every(
          (key) => gateway.accepted.has(key) || inDoubtIds.includes(key),
        );
        return (
          differences(workload.expected.stock, ledger.stock).length === 0 &&
          differences(workload.expected.balances, ledger.balances).length === 0 &&
          receiptsSettled &&
          dlqDepth === workload.poison.length &&
          inDoubtIds.includes(hangKey) &&
          // The consumer's metrics come through its output, which may trail its last batch's
          // acknowledgement: an empty queue is not yet every duplicate counted.
          tally.get(CONSUMER_METRICS.duplicate) >= resentDuplicates
        );
      },
      60_000,
      500,
    ).catch(() => undefined);
    const elapsed = finishedAt - started;

    const ledger = await readLedger(dynamodb, ledgerTableName);
    const wrong = [
      ...differences(workload.expected.stock, ledger.stock),
      ...differences(workload.expected.balances, ledger.balances),
    ];
    const duplicateEmails = [...gateway.accepted].filter(([, n]) => n > 1).map(([key]) => key);
    // In doubt means "may or may not have been sent": an accepted e-mail can be in doubt too.
    const unsettled = receipts.filter((key) => !gateway.accepted.has(key) && !inDoubtIds.includes(key));
    const inDoubtResent = inDoubtIds.filter((key) => (gateway.attempts.get(key) ?? 0) > 1);
    const handled = tally.get(CONSUMER_METRICS.processed) + tally.get(CONSUMER_METRICS.duplicate);
    const sent = await readOutbox(dynamodb, outbox);
    const placedKeys = placed.map((outcome) => orderPlacedKey(outcome.orderId));
    const unsent = placedKeys.filter((key) => sent.statuses.get(key) !== 'SENT');
    print('\nReport');
    const row = (label: string, value: number | string, note = '') =>
      print(`  ${label.padEnd(34)} ${String(value).padStart(7)}  ${note}`);
    row(
      'orders placed through PlaceOrder',
      placed.length,
      `in ${orders.outcomes.length + 1} invocations, the repeated order id refused`,
    );
    row('outbox: written', sent.written, 'OrderPlaced events, each committed with its order');
    row('outbox: relayed', sent.relayed, 'sent by the relay, from the orders table’s stream');
    row('outbox: swept', sent.swept, `sent by the sweeper, run every ${SCHEDULE_INTERVAL_SECONDS} s`);
    row(
      'outbox: stuck',
      sent.stuck,
      `pending over ${outbox.stuckAfterSeconds} s (${sent.pending} pending): \`oncely outbox list --stuck\``,
    );
    row(
      'published through the client',
      firstResults.size + workload.stock.length,
      `in ${requests + 1} requests (+1 replayed, nothing re-sent)`,
    );
    row('duplicates stopped by SQS', stoppedBySqs, 'producer retries inside the 5-minute window');
    row('delivered to the consumer', handled, 'records handled, redeliveries included');
    row(
      'duplicates stopped by the consumer',
      tally.get(CONSUMER_METRICS.duplicate),
      'after the window, or redelivered after a timeout',
    );
    row(
      'effects applied',
      tally.get(CONSUMER_METRICS.processed),
      `ledger transactions and ${gateway.accepted.size} e-mails`,
    );
    row('in the DLQ', dlqDepth, 'sent there at once, their groups went on');
    row(
      'in doubt',
      inDoubtIds.length,
      'cut off by the Lambda timeout, never re-sent: `oncely in-doubt list`',
    );
    row(
      'throughput',
      Math.round(handled / (elapsed / 1000)),
      `records/s over ${seconds(elapsed)} s (incl. placing the orders and a 12 s retry wait)`,
    );

    const checks = [
      {
        name: 'every order was placed, and its OrderPlaced left the outbox once: written = relayed + swept, nothing stuck or pending',
        ok:
          refused.length === 0 &&
          sent.written === placed.length &&
          sent.relayed + sent.swept === sent.written &&
          sent.pending === 0 &&
          unsent.length === 0,
        detail: [...refused, ...unsent].slice(0, 5).join(', '),
      },
      {
        name: 'the repeated order id was refused with OrderAlreadyPlacedError and wrote and published nothing',
        ok:
          !repeat.outcome.placed &&
          repeat.outcome.errorType === 'OrderAlreadyPlacedError' &&
          repeat.unchanged,
      },
      {
        name: 'the ledger equals the totals computed from the distinct events',
        ok: wrong.length === 0,
        detail: wrong.slice(0, 5).join('; '),
      },
      {
        name: 'no e-mail was sent twice; each was sent, or is in doubt for an operator',
        ok: duplicateEmails.length === 0 && unsettled.length === 0,
        detail: [...duplicateEmails, ...unsettled].slice(0, 5).join(', '),
      },
      {
        name: 'the hung e-mail is in doubt, and no in-doubt e-mail reached the gateway twice',
        ok: inDoubtIds.includes(hangKey) && inDoubtResent.length === 0,
        detail: inDoubtResent.join(', '),
      },
      { name: 'both poison messages are in the DLQ', ok: dlqDepth === workload.poison.length },
      { name: 'the repeated request was answered from the publisher’s record', ok: replayed },
      { name: 'SQS deduplicated every retried message', ok: stoppedBySqs === retried.results.length },
      {
        name: 'the consumer stopped every re-sent duplicate',
        ok: tally.get(CONSUMER_METRICS.duplicate) >= resentDuplicates,
      },
    ];
    print('\nChecks');
    for (const check of checks)
      print(`  ${check.ok ? '✔' : '✘'} ${check.name}${check.ok || !check.detail ? '' : `: ${check.detail}`}`);
    print(
      `\nWhere to look: the console (docs/console.md) showed the queues, the DLQ and the receipt in doubt ` +
        `(${hangKey}) while the demo ran, and closes with it; \`npx oncely local\` serves one for your own runs.`,
    );
    return { checks };
  } finally {
    lambda.destroy();
    sqs.destroy();
    dynamodb.destroy();
    await sandbox.stop();
    await gateway.close();
  }
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);
