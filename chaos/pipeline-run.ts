import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LambdaClient } from '@aws-sdk/client-lambda';
import { SQSClient } from '@aws-sdk/client-sqs';
import { startEmailGateway } from '../harness/email-gateway.js';
import { type FaultProxy, startFaultProxy } from '../harness/fault-proxy.js';
import { FAULT_KINDS, type FaultKind } from '../harness/faults.js';
import { readLedger } from '../harness/ledger-snapshot.js';
import { drainDeadLetters, ledgerViolations, readRecords, settle } from '../harness/pipeline-state.js';
import { resendAfterDedupWindow } from '../harness/resend-after-window.js';
import { startShopUnderFaults } from '../harness/shop-sandbox.js';
import { waitFor } from '../harness/wait-for.js';
import { buildWorkload } from '../harness/workload.js';
import { publish } from '../lambdas/client/publish.js';
import type { OutgoingMessage } from '../lambdas/common/envelope.js';
import { LEDGER_NAMESPACE } from '../lambdas/shop/consumer/ledger.js';
import { NOTIFICATIONS_NAMESPACE } from '../lambdas/shop/consumer/notifications.js';
import { LEDGER_TABLE_OUTPUT } from '../lib/shop/shop-stack.js';
import { localAwsConfig } from '../sandbox/local-aws-config.js';
import { type DeadLetterCauses, deadLetterCauses } from './dead-letter-causes.js';
import { gatewayAnswer, pipelineDynamoDbPlan, pipelineSqsPlan } from './pipeline-faults.js';

export interface PipelineChaosOptions {
  seed: number;
  customers: number;
  ordersPerCustomer: number;
  /** How long the stock load may take to apply, and the queue to empty after the last publish; 120 s by default. */
  settleTimeoutMs?: number;
  /** The shop's cloud assembly, synthesised before (a test run's shared one); synthesised anew by default. */
  cloudAssembly?: string;
  print?: (line: string) => void;
}

export interface PipelineChaosReport {
  seed: number;
  published: number;
  keysChecked: number;
  violations: string[];
  inDoubt: number;
  /** IN_DOUBT notifications the gateway never received. */
  needlessInDoubt: number;
  deadLettered: number;
  /** DLQ copies by reason (`ErrorName`; SQS's own moves after maxReceiveCount carry none). */
  deadLetterReasons: Record<string, number>;
  /** DLQ copies by cause: the intended poison, and the unexpected ones that fail the run. */
  deadLetterCauses: DeadLetterCauses;
  faults: Record<FaultKind, number>;
  /** Seeded faults drawn that no request met: 0, or the faults of one seed differ between runs. */
  faultsNotMet: number;
  /**
   * The faults of a second run of the same seed, when `npm run chaos` ran one: equal to `faults`,
   * as one seed gives one set of counts (docs/faults.md).
   */
  rerunFaults?: Record<FaultKind, number>;
  /** Invocations that died: timed out holding a request, or crashed. */
  crashes: number;
  durationMs: number;
}

/**
 * The whole pipeline in the sandbox — publisher, consumer and the example shop's operations, run
 * from the stack as synthesised — with the functions' DynamoDB and SQS requests going through
 * fault proxies, a few of them hanging until the Lambda times out (the worker is terminated, as a
 * crash), and an e-mail gateway that answers 503 or sends and then hangs. Then DESIGN §11's checks.
 */
export async function runPipelineChaos(options: PipelineChaosOptions): Promise<PipelineChaosReport> {
  const started = Date.now();
  const print = options.print ?? (() => undefined);
  const workload = buildWorkload({
    customers: options.customers,
    ordersPerCustomer: options.ordersPerCustomer,
    skus: 5,
  });
  const gateway = await startEmailGateway((key) => gatewayAnswer(options.seed, key));
  const proxies: FaultProxy[] = [];
  const plans = {
    dynamodb: pipelineDynamoDbPlan(options.seed, workload.notificationKeys),
    sqs: pipelineSqsPlan(options.seed),
  };
  let crashes = 0;
  const sandbox = await startShopUnderFaults({
    gatewayUrl: gateway.url,
    cloudAssembly: options.cloudAssembly,
    onCrash: () => crashes++,
    routeFunctions: async (emulators) => {
      const [dynamodb, sqs] = await Promise.all([
        startFaultProxy({ service: 'dynamodb', upstream: emulators.dynamodb, plan: plans.dynamodb }),
        startFaultProxy({ service: 'sqs', upstream: emulators.sqs, plan: plans.sqs }),
      ]);
      proxies.push(dynamodb, sqs);
      return { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint };
    },
  });
  const { endpoints, outputs, region } = sandbox.description;
  const lambda = new LambdaClient({ ...localAwsConfig(endpoints.lambda), region, maxAttempts: 1 });
  const sqs = new SQSClient(localAwsConfig(endpoints.sqs));
  const dynamodb = new DynamoDBClient(localAwsConfig(endpoints.dynamodb));
  const violations: string[] = [];
  try {
    const resources = sandbox.pipelineResources();
    const ledgerTableName = outputs[LEDGER_TABLE_OUTPUT];
    if (!ledgerTableName) throw new Error(`The shop's stack has no ${LEDGER_TABLE_OUTPUT} output.`);
    const sent = new Set<string>();
    const send = async (messages: OutgoingMessage[]) => {
      for (let i = 0; i < messages.length; i += 100) {
        const { results } = await publish(messages.slice(i, i + 100), {
          functionName: resources.publisherFunctionName,
          lambda,
          retry: { maxAttempts: 8, baseDelayMs: 50, maxDelayMs: 1_000 },
        });
        for (const result of results) if (result.status === 'sent') sent.add(result.key);
      }
    };
    print(
      `  publishing ${workload.stock.length + workload.stream.length + workload.poison.length} messages …`,
    );
    await send(workload.stock);
    // The stock load applied before any order, as the demo and the soak do: across groups FIFO
    // keeps no order, and an order ahead of its SKU's stock breaks the stock rule unmeant.
    await waitFor(
      async () => (await readLedger(dynamodb, ledgerTableName)).stock.size === workload.stock.length,
      options.settleTimeoutMs ?? 120_000,
    );
    await send([...workload.stream, ...workload.poison]);
    const late = workload.stream.filter((_, index) => index % 15 === 0);
    await resendAfterDedupWindow(sqs, resources.queueUrl, late);
    print(
      `  ${sent.size} published, ${late.length} re-sent as after SQS's window; waiting for the queue to empty …`,
    );
    let lastPrint = 0;
    await settle(sqs, resources.queueUrl, options.settleTimeoutMs ?? 120_000, (depth) => {
      if (Date.now() - lastPrint < 5_000) return;
      lastPrint = Date.now();
      print(`  … ${depth} messages queued or in flight`);
    });

    const records = await readRecords(dynamodb, resources.idempotencyTableName);
    const {
      copies: deadLetters,
      reasons: deadLetterReasons,
      entries: deadLetterEntries,
    } = await drainDeadLetters(sqs, resources.dlqUrl);
    const ledger = await readLedger(dynamodb, ledgerTableName);
    const all = [...workload.stock, ...workload.stream, ...workload.poison];

    // Every accepted message ends COMPLETED, IN_DOUBT or in the DLQ.
    let keysChecked = 0;
    for (const message of all) {
      const key = message.key as string;
      const namespace = message.type === 'SendNotification' ? NOTIFICATIONS_NAMESPACE : LEDGER_NAMESPACE;
      const record = records.get(`${namespace}#${key}`);
      const accepted = sent.has(key) || record !== undefined || deadLetters.has(key);
      if (!accepted) continue;
      keysChecked++;
      const settled = record?.status === 'COMPLETED' || record?.status === 'IN_DOUBT' || deadLetters.has(key);
      if (!settled) violations.push(`${key}: record ${record?.status ?? 'absent'} and not in the DLQ (lost)`);
      if ((deadLetters.get(key) ?? 0) > 1 && !late.includes(message)) {
        violations.push(`${key}: ${deadLetters.get(key)} copies in the DLQ`);
      }
    }
    violations.push(...ledgerViolations(all, records, ledger));
    // At-most-once e-mails: never two; a completed one was sent.
    for (const [key, count] of gateway.accepted)
      if (count > 1) violations.push(`${key}: e-mail sent ${count} times`);
    let inDoubt = 0;
    let needlessInDoubt = 0;
    for (const [id, record] of records) {
      if (!id.startsWith(`${NOTIFICATIONS_NAMESPACE}#`)) continue;
      if (record.status === 'COMPLETED' && !gateway.accepted.has(id))
        violations.push(`${id}: COMPLETED, never sent`);
      if (record.status !== 'IN_DOUBT') continue;
      inDoubt++;
      if (!gateway.attempts.has(id)) needlessInDoubt++;
    }
    const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
    for (const proxy of proxies) for (const kind of FAULT_KINDS) faults[kind] += proxy.stats().faults[kind];
    return {
      seed: options.seed,
      published: sent.size,
      keysChecked,
      violations,
      inDoubt,
      needlessInDoubt,
      deadLettered: [...deadLetters.values()].reduce((sum, n) => sum + n, 0),
      deadLetterReasons,
      deadLetterCauses: deadLetterCauses(deadLetterEntries, workload.poisonReasons),
      faults,
      faultsNotMet: plans.dynamodb.pending() + plans.sqs.pending(),
      crashes,
      durationMs: Date.now() - started,
    };
  } finally {
    lambda.destroy();
    sqs.destroy();
    dynamodb.destroy();
    await sandbox.stop();
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await gateway.close();
  }
}
