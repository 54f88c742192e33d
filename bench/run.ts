/**
 * `npm run bench [-- --quick] [-- --only standard|tracing|valkey]`: measures Oncely against AWS Lambda
 * Powertools and a naive pipeline, all in one run on DynamoDB Local and the SQS emulator, then
 * writes bench/RESULTS.md and the latency chart and prints the tables (a quick run writes them to
 * .oncely/bench-quick/ instead, so that it never replaces the committed full results; `--only`
 * runs section 8, standard queues, or 5c, the cost of tracing, alone and prints it, writing
 * nothing). `--only valkey` runs section 9, the Valkey store against DynamoDB's, on a redis-server
 * of its own, and writes it into bench/RESULTS.md in place of its last run: the section says where
 * and when it was measured, apart from the rest (a quick run only prints it). Figures are printed,
 * never asserted: test/bench checks that it runs.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { currentLoad, describeMachine } from '../harness/machine.js';
import { startValkey, type ValkeyServer } from '../harness/valkey-server.js';
import { resolveSettings } from '../lib/constructs/pipeline-settings.js';
import { startDynamoDbLocal } from '../sandbox/dynamodb-local.js';
import { startSqsEmulator } from '../sandbox/sqs-emulator.js';
import {
  measureBatchLatency,
  measureNotificationLatency,
  NOTIFICATION_GROUP_COUNTS,
} from './batch-latency.js';
import { measureBilledUsage } from './billed-usage.js';
import {
  BUNDLE_FORMATS,
  type BundleFormat,
  buildBundles,
  bundleSizes,
  DEFAULT_FORMAT,
  WITHOUT_SDK_FORMAT,
} from './bundle-size.js';
import type { BenchEndpoints } from './clients.js';
import { costReport } from './cost.js';
import { measureInFlightDuplicates } from './in-flight-duplicates.js';
import { latencyChartSvg } from './latency-chart.js';
import { measureOwnCpu } from './own-cpu.js';
import { measurePublisher } from './publisher-calls.js';
import { type BenchResults, resultsMarkdown, standardQueuesSection } from './report.js';
import { measureRequestsPerMessage } from './requests-per-message.js';
import { measureRoundTrips } from './round-trips.js';
import { FULL, QUICK } from './settings.js';
import { measureStandardBatches, type StandardQueueResults } from './standard-batches.js';
import { measureStartUp } from './start-up.js';
import { judgeTargets } from './targets.js';
import { measureThroughput } from './throughput.js';
import { BEFORE_TRACING_COMMIT, measureTracingCost } from './tracing/measure.js';
import { tracingSection } from './tracing/report.js';
import { spliceSection, type ValkeySectionInput, valkeySection } from './valkey-report.js';
import { measureValkeyAgainstDynamoDb } from './valkey-vs-dynamodb.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
// The consumers' Powertools Metrics would print their EMF to stdout, in between the report.
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const PROJECT_ROOT = join(BENCH_DIR, '..');
const CHART_FILE = 'batch-latency.svg';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
});
if (values.only !== undefined && !['standard', 'tracing', 'valkey'].includes(values.only)) {
  throw new Error(
    '--only takes "standard" (section 8, standard queues), "tracing" (5c) or "valkey" (9), ' +
      `not ${JSON.stringify(values.only)}`,
  );
}
const settings = values.quick ? QUICK : FULL;
const command = values.quick ? 'npm run bench -- --quick' : 'npm run bench';
const OUTPUT_DIR = values.quick ? join(PROJECT_ROOT, '.oncely', 'bench-quick') : BENCH_DIR;
const startedAt = new Date();
const machine = describeMachine();
const progress = (line: string) => console.log(`   ${line}`);

console.log(`Oncely benchmarks, ${settings.mode} run: ${machine.cpus} CPUs, Node ${machine.node}\n`);
const [dynamodb, sqs] = await Promise.all([startDynamoDbLocal(), startSqsEmulator()]);
let valkey: ValkeyServer | undefined;
try {
  const endpoints: BenchEndpoints = { dynamodb: dynamodb.endpoint, sqs: sqs.endpoint };
  const step = async <T>(title: string, measure: () => Promise<T>): Promise<T> => {
    console.log(title);
    const started = performance.now();
    const result = await measure();
    progress(`done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    return result;
  };

  const standardQueues = async (): Promise<StandardQueueResults> => ({
    batches: await step(
      `8. Standard queues: batches of ${settings.standard.recordCounts.join(', ')} records`,
      () =>
        measureStandardBatches(endpoints, {
          ...settings.standard,
          latencyMs: settings.latencyMs,
          onProgress: progress,
        }),
    ),
    inFlight: await step(
      '8b. Standard queues: a duplicate that arrives while its original is in flight',
      () => measureInFlightDuplicates(endpoints, settings.standard.inFlight),
    ),
  });

  const tracing = () =>
    step('5c. The cost of tracing', () =>
      measureTracingCost(endpoints, {
        ...settings.tracing,
        projectRoot: PROJECT_ROOT,
        earlierCommit: BEFORE_TRACING_COMMIT,
        onProgress: progress,
      }),
    );

  // (9) on a redis-server of its own, started for it and stopped below.
  const valkeyComparison = async (): Promise<ValkeySectionInput> => {
    valkey = await startValkey();
    const server = valkey;
    const comparison = await step('9. Lease records in Valkey against DynamoDB', () =>
      measureValkeyAgainstDynamoDb(endpoints, server, { ...settings.valkey, onProgress: progress }),
    );
    return {
      comparison,
      options: settings.valkey,
      assumptions: {
        recordHours: resolveSettings().idempotencyTtl.toHours(),
        lambdaMemoryMiB: resolveSettings().consumerMemoryMiB,
      },
    };
  };

  // One section alone is printed, never written: RESULTS.md comes from whole runs. Section 9 says
  // where and when it was measured, so that a run of it alone can replace its last one.
  if (values.only === 'valkey') {
    const section = valkeySection({
      ...(await valkeyComparison()),
      provenance: {
        command: values.quick ? 'npm run bench -- --quick --only valkey' : 'npm run bench -- --only valkey',
        startedAt,
        seconds: (Date.now() - startedAt.getTime()) / 1000,
        machine,
        loadAverageAtEnd: currentLoad(),
      },
    });
    console.log(section);
    if (!values.quick) {
      const file = join(BENCH_DIR, 'RESULTS.md');
      await writeFile(file, spliceSection(await readFile(file, 'utf8'), section));
      console.log(`Written: section 9 of ${relative(PROJECT_ROOT, file)}`);
    }
  } else if (values.only === 'standard') {
    console.log(standardQueuesSection(await standardQueues(), settings));
  } else if (values.only === 'tracing') {
    console.log(tracingSection(await tracing(), settings.tracing));
  } else {
    const requests = await step('1. DynamoDB requests per message', () =>
      measureRequestsPerMessage(endpoints),
    );
    const latency = await step('2. FIFO batch latency', () =>
      measureBatchLatency(endpoints, {
        ...settings.batchLatency,
        latencyMs: settings.latencyMs,
        onProgress: progress,
      }),
    );
    const notificationLatency = await step(
      '2b. FIFO batch latency, an effect without DynamoDB requests',
      () =>
        measureNotificationLatency(endpoints, {
          ...settings.batchLatency,
          groupCounts: NOTIFICATION_GROUP_COUNTS,
          latencyMs: settings.latencyMs,
          onProgress: progress,
        }),
    );
    // The same 1-group batches with no latency added: what their requests cost this machine's CPUs.
    const notificationNoLatency = await step('2c. The same, 1 group, no latency added', () =>
      measureNotificationLatency(endpoints, { ...settings.batchLatency, groupCounts: [1], latencyMs: 0 }),
    );
    const roundTrips = await step('2d. Sequential round trips of the same batch: the latency slope', () =>
      measureRoundTrips(endpoints, { ...settings.roundTrips, onProgress: progress }),
    );
    const publisher = await step('3. Publisher', () =>
      measurePublisher(endpoints, { ...settings.publisher, latencyMs: settings.latencyMs }),
    );
    // Every Lambda in every format (6) compares; (4) reports the default's and the SDK-less bytes.
    const built = await step('4. Bundle size', async () => {
      const all = [];
      for (const format of Object.keys(BUNDLE_FORMATS) as BundleFormat[]) {
        all.push(...(await buildBundles(PROJECT_ROOT, format)));
      }
      return all;
    });
    const bundles = bundleSizes(built.filter((bundle) => bundle.format === DEFAULT_FORMAT));
    const bundlesWithoutSdk = bundleSizes(built.filter((bundle) => bundle.format === WITHOUT_SDK_FORMAT));
    const throughput = await step("5. Throughput: the consumer's CPU per message, and end to end", () =>
      measureThroughput(endpoints, {
        ...settings.throughput,
        projectRoot: PROJECT_ROOT,
        dynamodbPid: dynamodb.pid,
        onProgress: progress,
      }),
    );
    const ownCpu = await step("5b. Oncely's own CPU per message: each mode profiled", () =>
      measureOwnCpu(endpoints, { ...settings.ownCpu, projectRoot: PROJECT_ROOT }),
    );
    const tracingCost = await tracing();
    // The bundles of (4), imported: the bytes (4) measured are the bytes that start.
    const startUp = await step('6. Module start-up', () =>
      measureStartUp(built, { ...settings.startUp, projectRoot: PROJECT_ROOT }),
    );
    const usage = await step('7. What a million messages cost', () =>
      measureBilledUsage(endpoints, { ...settings.cost, latencyMs: settings.latencyMs }),
    );
    const cost = costReport({
      usage,
      publisher,
      eventSources: throughput.map((row) => row.eventSource),
      lambdaMemoryMiB: resolveSettings().consumerMemoryMiB,
    });
    const standard = await standardQueues();
    const valkeyFigures = await valkeyComparison();

    const figures = {
      requests,
      latency,
      notificationLatency,
      notificationNoLatency,
      roundTrips,
      publisher,
      bundles,
      bundlesWithoutSdk,
      throughput,
      ownCpu,
      tracing: tracingCost,
      startUp,
      cost,
      standard,
    };
    const results: BenchResults = {
      settings,
      command,
      startedAt,
      seconds: (Date.now() - startedAt.getTime()) / 1000,
      machine,
      loadAverageAtEnd: currentLoad(),
      ...figures,
      valkey: valkeyFigures,
      targets: judgeTargets(figures),
    };
    const markdown = resultsMarkdown(results, CHART_FILE);
    await mkdir(OUTPUT_DIR, { recursive: true });
    await writeFile(join(OUTPUT_DIR, 'RESULTS.md'), markdown);
    await writeFile(join(OUTPUT_DIR, CHART_FILE), latencyChartSvg(latency, settings.latencyMs));
    console.log(markdown);
    console.log(
      `Written: ${relative(PROJECT_ROOT, join(OUTPUT_DIR, 'RESULTS.md'))} and ${CHART_FILE} beside it`,
    );
  }
} finally {
  await valkey?.stop();
  await sqs.stop();
  await dynamodb.stop();
}
