import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { combinePlans } from '../harness/combine-plans.js';
import { startEmailGateway } from '../harness/email-gateway.js';
import { type FaultProxy, startFaultProxy } from '../harness/fault-proxy.js';
import { FAULT_KINDS, type FaultKind, type FaultPlan } from '../harness/faults.js';
import { fnv1a32 } from '../harness/hash.js';
import { readLedger } from '../harness/ledger-snapshot.js';
import { countPending, readOutbox } from '../harness/outbox-snapshot.js';
import { Pacer } from '../harness/pacer.js';
import { drainDeadLetters, readRecords, settle } from '../harness/pipeline-state.js';
import { invokePlaceOrder } from '../harness/place-orders.js';
import { resendAfterDedupWindow } from '../harness/resend-after-window.js';
import { seededFaultPlan } from '../harness/seeded-plan.js';
import { startShopUnderFaults } from '../harness/shop-sandbox.js';
import { targetedFaultPlan } from '../harness/targeted-plan.js';
import { waitFor } from '../harness/wait-for.js';
import { publish } from '../lambdas/client/publish.js';
import { messagesInQueue } from '../lambdas/common/queue-depth.js';
import { orderPlacedKey } from '../lambdas/shop/orders/place-order.js';
import { outboxFromOutputs } from '../lib/constructs/outbox-outputs.js';
import { LEDGER_TABLE_OUTPUT, ORDERS_OUTPUTS } from '../lib/shop/shop-stack.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { ProducerLog, runClientProducer, runOutboxProducer } from './producers.js';
import { type Sample, sampleOf } from './samples.js';
import { checkSoak, type SoakVerdict } from './soak-checks.js';
import { buildSoakWorkload, type SoakWorkloadSize } from './soak-workload.js';

/** The sandbox runs the outbox's sweeper (and the monitor) this often, as the demo does. */
const SCHEDULE_INTERVAL_MS = 3_000;

export interface SoakOptions extends SoakWorkloadSize {
  seed: number;
  /** Messages a second the producers publish between them, at most. */
  ratePerSecond: number;
  /** The producers pause while the queue holds more than this. */
  maxQueued: number;
  /** How often memory, the queue and the outbox are sampled. */
  sampleEveryMs: number;
  /** How long the queue and the outbox may take to empty once the producers are done. */
  settleTimeoutMs: number;
  /** The shop's cloud assembly, synthesised before (a test run's shared one); synthesised anew by default. */
  cloudAssembly?: string;
  print?: (line: string) => void;
}

export interface SoakResult {
  options: SoakOptions;
  verdict: SoakVerdict;
  samples: Sample[];
  /** Seconds from the producers' start: when they were done, and when everything had settled. */
  producingSeconds: number;
  totalSeconds: number;
  /** Distinct keys accepted, the stock load included. */
  accepted: number;
  groups: number;
  /** Per COMPLETED record: when it completed (s since the start) and how long after its first publish (ms). */
  completions: { atSeconds: number; latencyMs: number }[];
  outbox: { written: number; relayed: number; swept: number; pending: number };
  producers: Omit<ProducerLog, 'publishedAt' | 'sent' | 'late' | 'mark'> & { late: number };
  faults: Record<FaultKind, number>;
  /** Function invocations that died: timed out holding a request, or crashed. */
  crashes: number;
  /** The functions' own requests (retries included), by service and operation. */
  requests: { dynamodb: Record<string, number>; sqs: Record<string, number> };
  /** Each function's worker CPU and invocations over the run. */
  functions: Record<string, { cpuMs: number | undefined; invocations: number }>;
}

/**
 * The shop's pipeline in the sandbox under steady load for a long while: the client's services and
 * the orders service (through its outbox) produce at once, with duplicates, re-sends after SQS's
 * window, poison, request faults and a few consumer timeouts; memory and the queue are sampled
 * throughout; at the end every key is checked.
 */
export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const print = options.print ?? (() => undefined);
  const workload = buildSoakWorkload(options);
  const clientGroups = workload.groups.flatMap((g) => (g.producer === 'client' ? [g] : []));
  const outboxGroups = workload.groups.flatMap((g) => (g.producer === 'outbox' ? [g] : []));
  const gateway = await startEmailGateway((key) => {
    const draw = fnv1a32(`${options.seed}:${key}`) % 1000;
    return draw < 20 ? 'unavailable' : draw < 23 ? 'send-then-hang' : 'accept';
  });
  const proxies: { dynamodb?: FaultProxy; sqs?: FaultProxy } = {};
  let crashes = 0;
  const sandbox = await startShopUnderFaults({
    gatewayUrl: gateway.url,
    cloudAssembly: options.cloudAssembly,
    scheduleIntervalMs: SCHEDULE_INTERVAL_MS,
    onCrash: () => crashes++,
    routeFunctions: async (emulators) => {
      proxies.dynamodb = await startFaultProxy({
        service: 'dynamodb',
        upstream: emulators.dynamodb,
        plan: dynamodbFaults(options.seed, clientGroups[Math.floor(clientGroups.length / 2)]?.messages ?? []),
      });
      proxies.sqs = await startFaultProxy({
        service: 'sqs',
        upstream: emulators.sqs,
        plan: seededFaultPlan({ seed: options.seed + 1, rates: SQS_RATES }),
      });
      return { dynamodb: proxies.dynamodb.endpoint, sqs: proxies.sqs.endpoint };
    },
  }).catch(async (error: unknown) => {
    await gateway.close();
    throw error;
  });
  const { endpoints, outputs, region } = sandbox.description;
  const lambda = new LambdaClient({ ...localAwsConfig(endpoints.lambda), region, maxAttempts: 1 });
  const sqs = new SQSClient(localAwsConfig(endpoints.sqs));
  const dynamodb = new DynamoDBClient(localAwsConfig(endpoints.dynamodb));
  let sampling: Promise<void> | undefined;
  let stopSampling = false;
  try {
    const resources = sandbox.pipelineResources();
    const ledgerTableName = outputs[LEDGER_TABLE_OUTPUT];
    const placeOrderFunction = outputs[ORDERS_OUTPUTS.placeOrderFunctionName];
    if (!ledgerTableName || !placeOrderFunction)
      throw new Error('The shop stack lacks its ledger or orders outputs.');
    const outbox = outboxFromOutputs('the soak sandbox', outputs);
    const log = new ProducerLog();
    const send = (messages: Parameters<typeof publish>[0]) =>
      publish(messages, {
        functionName: resources.publisherFunctionName,
        lambda,
        retry: { maxAttempts: 8, baseDelayMs: 50, maxDelayMs: 1_000 },
      });

    print(`  the stock load: ${workload.stock.length} StockReceived …`);
    const stock = await send(workload.stock);
    for (const result of stock.results) if (result.status === 'sent') log.sent.add(result.key);
    await waitFor(
      async () => (await readLedger(dynamodb, ledgerTableName)).stock.size === workload.stock.length,
      60_000,
    );

    const started = Date.now();
    const seconds = () => (Date.now() - started) / 1000;
    const pacer = new Pacer({ ratePerSecond: options.ratePerSecond, maxQueued: options.maxQueued });
    const samples: Sample[] = [];
    sampling = (async () => {
      let lastPrint = 0;
      while (!stopSampling) {
        const [queued, pending] = await Promise.all([
          messagesInQueue(sqs, resources.queueUrl),
          countPending(dynamodb, outbox),
        ]);
        pacer.queued = queued;
        samples.push(
          sampleOf(
            { atSeconds: seconds(), published: log.publishedAt.size, queued, outboxPending: pending },
            sandbox.usage(),
          ),
        );
        if (Date.now() - lastPrint >= 30_000) {
          lastPrint = Date.now();
          print(
            `  ${Math.round(seconds())} s: ${log.publishedAt.size} published, ${queued} queued, ${pending} in the outbox`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, options.sampleEveryMs));
      }
    })();

    print(
      `  producing ${workload.groups.reduce((n, group) => n + group.messages.length, 0)} messages over ${workload.groups.length} groups ` +
        `(${outboxGroups.length} through the outbox) at up to ${options.ratePerSecond}/s …`,
    );
    await Promise.all([
      runClientProducer({
        groups: clientGroups,
        publish: send,
        resendLate: (messages) => resendAfterDedupWindow(sqs, resources.queueUrl, messages),
        pacer,
        log,
        activeGroups: 400,
        chunk: 100,
        republishEvery: 20,
        lateEvery: 100,
      }),
      runOutboxProducer({
        customers: outboxGroups,
        placeOrder: (order) => invokePlaceOrder(lambda, placeOrderFunction, order),
        eventKey: orderPlacedKey,
        pacer,
        log,
        concurrency: 8,
        repeatEvery: 50,
      }),
    ]);
    const producingSeconds = seconds();
    print(`  produced in ${Math.round(producingSeconds)} s; waiting for the outbox and the queue to empty …`);
    await waitFor(async () => (await countPending(dynamodb, outbox)) === 0, options.settleTimeoutMs, 1_000);
    await settle(sqs, resources.queueUrl, options.settleTimeoutMs);
    const totalSeconds = seconds();
    stopSampling = true;
    await sampling;

    const snapshot = await readOutbox(dynamodb, outbox);
    const records = await readRecords(dynamodb, resources.idempotencyTableName);
    const { copies: deadLetters } = await drainDeadLetters(sqs, resources.dlqUrl);
    const ledger = await readLedger(dynamodb, ledgerTableName);
    const accepted = new Set([...log.sent, ...snapshot.statuses.keys()]);
    const verdict = checkSoak({
      groups: workload.groups,
      stock: workload.stock,
      poison: workload.poison,
      accepted,
      late: log.late,
      state: { records, deadLetters, ledger, gateway },
    });
    for (const orderId of log.repeatsAccepted) verdict.violations.push(`${orderId}: placed a second time`);

    const completions: SoakResult['completions'] = [];
    for (const record of records.values()) {
      if (record.status !== 'COMPLETED' || record.updatedAt === undefined) continue;
      const key = record.id.slice(record.id.indexOf('#') + 1);
      const publishedAt = log.publishedAt.get(key);
      if (publishedAt === undefined) continue;
      completions.push({
        atSeconds: (record.updatedAt - started) / 1000,
        latencyMs: record.updatedAt - publishedAt,
      });
    }
    const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
    for (const proxy of [proxies.dynamodb, proxies.sqs]) {
      for (const kind of FAULT_KINDS) faults[kind] += proxy?.stats().faults[kind] ?? 0;
    }
    const { publishedAt: _, sent: __, late, ...producers } = log;
    return {
      options,
      verdict,
      samples,
      producingSeconds,
      totalSeconds,
      accepted: accepted.size,
      groups: workload.groups.length,
      completions,
      outbox: {
        written: snapshot.written,
        relayed: snapshot.relayed,
        swept: snapshot.swept,
        pending: snapshot.pending,
      },
      producers: { ...producers, late: late.size },
      faults,
      crashes,
      requests: {
        dynamodb: proxies.dynamodb?.stats().requests ?? {},
        sqs: proxies.sqs?.stats().requests ?? {},
      },
      functions: Object.fromEntries(
        Object.entries(sandbox.usage().functions).map(([name, usage]) => [
          name,
          { cpuMs: usage.cpuMs, invocations: usage.invocations },
        ]),
      ),
    };
  } finally {
    stopSampling = true;
    await sampling?.catch(() => undefined);
    lambda.destroy();
    sqs.destroy();
    dynamodb.destroy();
    await sandbox.stop();
    await Promise.all([proxies.dynamodb?.close(), proxies.sqs?.close()]);
    await gateway.close();
  }
}

const DYNAMODB_RATES = { 'fail-before': 0.003, 'lose-answer': 0.003, throttle: 0.002 };
const SQS_RATES = { 'fail-before': 0.002, 'lose-answer': 0.002, throttle: 0.002 };

/**
 * A low rate of seeded faults on every DynamoDB request, and a few consumer timeouts: requests of
 * one customer halfway through the run hang until the consumer times out (its worker is
 * terminated) — its ledger transaction (after it applied), a receipt's lease, a reminder's completion.
 */
function dynamodbFaults(seed: number, customer: readonly { type: string; key: string }[]): FaultPlan {
  const body = (request: { body: unknown }) => JSON.stringify(request.body);
  const hangOn = (operation: string, text: string, marker?: string) =>
    targetedFaultPlan({
      match: (r) =>
        r.operation === operation &&
        body(r).includes(text) &&
        (marker === undefined || body(r).includes(marker)),
      times: 1,
      fault: { kind: 'hang' },
    });
  const first = (type: string) => customer.find((message) => message.type === type)?.key ?? '(none)';
  return combinePlans(
    hangOn('TransactWriteItems', `ledger#${first('OrderPlaced')}"`),
    hangOn('UpdateItem', `notifications#${first('SendNotification')}"`, ':inProgress'),
    hangOn('UpdateItem', `reminders#${first('SendReminder')}"`, '"COMPLETED"'),
    seededFaultPlan({ seed, rates: DYNAMODB_RATES }),
  );
}
