import type { Machine } from '../harness/machine.js';
import { ratio, type Spread } from '../harness/statistics.js';
import {
  BATCH_CONSUMERS,
  type BatchConsumer,
  type BatchLatency,
  NOTIFICATION_CONSUMERS,
  type NotificationConsumer,
  type NotificationLatency,
} from './batch-latency.js';
import { COST_MODES, type CostMode } from './billed-usage.js';
import { BASELINE_BUNDLE, BUNDLE_FORMATS, BUNDLES, type BundleSize, DEFAULT_FORMAT } from './bundle-size.js';
import type { CostReport, ModeCost } from './cost.js';
import { IN_FLIGHT_SUBJECTS } from './in-flight-duplicates.js';
import type { OwnCpu } from './own-cpu.js';
import { type PublisherCost, SENDERS } from './publisher-calls.js';
import {
  DELIVERY_SCENARIOS,
  type DeliveryScenario,
  IDEMPOTENCY_SUBJECTS,
  type IdempotencySubject,
  type RequestsPerMessage,
} from './requests-per-message.js';
import { DESIGN_ROUND_TRIPS, type RoundTrips, SLOPE_RESAMPLES } from './round-trips.js';
import type { BenchSettings } from './settings.js';
import {
  batchesOf,
  STANDARD_CONSUMERS,
  type StandardConsumer,
  type StandardQueueResults,
} from './standard-batches.js';
import { type ImportTimes, OWN_LAYERS, type StartUp, type StartUpResults } from './start-up.js';
import type { TargetVerdict } from './targets.js';
import {
  BASELINE_PIPELINE,
  ONCELY_PIPELINES,
  PIPELINE_CONSUMERS,
  type PipelineConsumer,
  type Throughput,
} from './throughput.js';
import type { TracingCost } from './tracing/measure.js';
import { tracingSection } from './tracing/report.js';
import { type ValkeySectionInput, valkeySection } from './valkey-report.js';

/** Everything one run measured, and what it ran on. */
export interface BenchResults {
  settings: BenchSettings;
  command: string;
  startedAt: Date;
  seconds: number;
  machine: Machine;
  loadAverageAtEnd: number;
  requests: RequestsPerMessage[];
  latency: BatchLatency[];
  /** (2)'s second workload, an effect without DynamoDB requests, when it was measured. */
  notificationLatency?: NotificationLatency[];
  /** The same at 1 group with no latency added, when it was measured. */
  notificationNoLatency?: NotificationLatency[];
  /** Its sequential round trips at 1 group, from the latency slope, when they were measured. */
  roundTrips?: RoundTrips[];
  publisher: PublisherCost[];
  /** (4): as deployed (the AWS SDK inside), and without the SDK. */
  bundles: BundleSize[];
  bundlesWithoutSdk: BundleSize[];
  throughput: Throughput[];
  /** (5b), when it was measured. */
  ownCpu?: OwnCpu[];
  /** (5c), when it was measured. */
  tracing?: TracingCost;
  startUp: StartUpResults;
  /** (7), when it was measured. */
  cost?: CostReport;
  /** (8), when it was measured. */
  standard?: StandardQueueResults;
  /** (9), when it was measured. */
  valkey?: ValkeySectionInput;
  targets: TargetVerdict[];
}

/** bench/RESULTS.md: every figure of the run with its ratio to the baseline measured beside it. */
export function resultsMarkdown(results: BenchResults, chartFile: string): string {
  return [
    '# Benchmark results',
    '',
    `Written by \`${results.command}\` (${results.settings.mode} run) on ${results.startedAt.toISOString()}, ` +
      `in ${results.seconds.toFixed(0)} s. Every figure comes from this one run on this one machine; a ratio ` +
      'compares it with the baseline measured beside it. Nothing here is typed in by hand: run the command again to ' +
      'check, and expect other absolute figures on another machine.',
    '',
    machineSection(results),
    targetsSection(results.targets),
    requestsSection(results.requests),
    latencySection(results.latency, results.settings, chartFile),
    ...(results.notificationLatency
      ? [
          notificationLatencySection(
            results.notificationLatency,
            results.notificationNoLatency ?? [],
            results.settings,
          ),
        ]
      : []),
    ...(results.roundTrips ? [roundTripSection(results.roundTrips, results.settings)] : []),
    publisherSection(results.publisher, results.settings),
    bundleSection(results.bundles, results.bundlesWithoutSdk),
    throughputSection(results.throughput, results.settings, results.ownCpu),
    ...(results.ownCpu ? [ownCpuSection(results.ownCpu, results.settings)] : []),
    ...(results.tracing ? [tracingSection(results.tracing, results.settings.tracing)] : []),
    startUpSection(results.startUp, results.settings),
    ...(results.cost ? [costSection(results.cost, results.settings)] : []),
    ...(results.standard ? [standardQueuesSection(results.standard, results.settings)] : []),
    ...(results.valkey ? [valkeySection(results.valkey)] : []),
    notesSection(results),
  ].join('\n');
}

function machineSection({ machine, loadAverageAtEnd, settings }: BenchResults): string {
  return [
    '## Machine',
    '',
    table(
      ['', ''],
      [
        ['CPUs (`nproc`)', `${machine.cpus} × ${machine.cpuModel}`],
        ['memory', `${machine.memoryGiB} GiB`],
        ['Node.js', machine.node],
        ['Java (DynamoDB Local)', machine.java],
        ['OS', machine.os],
        [
          'load average (1 min)',
          `${machine.loadAverage.toFixed(1)} at the start, ${loadAverageAtEnd.toFixed(1)} at the end: ` +
            (Math.max(machine.loadAverage, loadAverageAtEnd) > machine.cpus
              ? 'the machine was busy with other work too, which slows and scatters every timing'
              : 'the machine was otherwise mostly idle'),
        ],
        [
          'emulators',
          'DynamoDB Local (in memory, one JVM) and the SQS emulator `local-aws-sqs` (in this process)',
        ],
        ['added latency', `${settings.latencyMs} ms per request where a section says so`],
      ],
    ),
    '',
  ].join('\n');
}

function targetsSection(targets: readonly TargetVerdict[]): string {
  return [
    '## Targets',
    '',
    table(
      ['target', 'measured', 'verdict'],
      targets.map((target) => [
        target.target,
        target.measured,
        target.met === undefined
          ? 'reported: no number to meet'
          : target.met
            ? '**met**'
            : `**missed**: ${target.shortfall}`,
      ]),
    ),
    '',
  ].join('\n');
}

function requestsSection(rows: readonly RequestsPerMessage[]): string {
  const subjects = Object.keys(IDEMPOTENCY_SUBJECTS) as IdempotencySubject[];
  const row = (subject: IdempotencySubject, scenario: DeliveryScenario) =>
    rows.find((candidate) => candidate.subject === subject && candidate.scenario === scenario);
  const cells = (scenario: DeliveryScenario, figure: (row: RequestsPerMessage) => number, detail: boolean) =>
    subjects.map((subject) => {
      const measured = row(subject, scenario);
      const baseline = row('powertools', scenario);
      if (!measured || !baseline) return '–';
      const value = figure(measured);
      const versus = subject === 'powertools' ? '' : ` (${ratio(value, figure(baseline))})`;
      return `${value}${versus}${detail ? `: ${operationList(measured.operations)}` : ''}`;
    });
  const scenarios = Object.keys(DELIVERY_SCENARIOS) as DeliveryScenario[];
  const header = ['', ...subjects.map((subject) => IDEMPOTENCY_SUBJECTS[subject])];
  return [
    '## 1. DynamoDB requests per message',
    '',
    'Requests counted by an SDK middleware on the DynamoDB client each library is given, business write included ' +
      "(the ledger's `takeStock`: stock never below zero). Ratios against Powertools, the baseline.",
    '',
    table(
      header,
      scenarios.map((scenario) => [
        DELIVERY_SCENARIOS[scenario],
        ...cells(scenario, (measured) => measured.requests, true),
      ]),
    ),
    '',
    'Write units: the capacity DynamoDB Local reports for the requests that succeeded — what on-demand mode ' +
      'bills as write request units. An item written in a transaction counts twice. A write refused by its ' +
      'condition reports nothing locally, although AWS bills it as well.',
    '',
    table(
      header,
      scenarios.map((scenario) => [
        DELIVERY_SCENARIOS[scenario],
        ...cells(scenario, (measured) => measured.writeUnits, false),
      ]),
    ),
    '',
  ].join('\n');
}

function latencySection(rows: readonly BatchLatency[], settings: BenchSettings, chartFile: string): string {
  const consumers = Object.keys(BATCH_CONSUMERS) as BatchConsumer[];
  const groupCounts = settings.batchLatency.groupCounts;
  const find = (consumer: BatchConsumer, groups: number) =>
    rows.find((row) => row.consumer === consumer && row.groups === groups);
  const { batches, warmupBatches } = settings.batchLatency;
  return [
    '## 2. FIFO batch latency',
    '',
    `A 10-record batch of first deliveries (StockReceived, one ledger write each) spread over 1 to 10 message ` +
      `groups, each consumer invoked directly with the event Lambda delivers, ${settings.latencyMs} ms added to ` +
      `every DynamoDB request. ${batches} timed batches per cell after ${warmupBatches} untimed ones; the ` +
      'consumers take turns batch after batch. Median and p10–p90 in ms; the ratio is how many times faster than ' +
      'Powertools (the baseline).',
    '',
    latencyTable(consumers, BATCH_CONSUMERS, groupCounts, find),
    '',
    `DynamoDB requests per record, counted during the timed batches: ${consumers
      .map((consumer) => `${consumer} ${find(consumer, groupCounts[0] ?? 1)?.requestsPerRecord.toFixed(2)}`)
      .join(', ')}.`,
    '',
    `![Batch latency by message groups](${chartFile})`,
    '',
  ].join('\n');
}

/**
 * Latency per group count (rows) and consumer (columns), each against Powertools' in its row; per
 * record count (`rowLabel` records) on standard queues.
 */
function latencyTable<C extends string>(
  consumers: readonly C[],
  labels: Record<C, string>,
  groupCounts: readonly number[],
  find: (consumer: C, groups: number) => { latency: Spread } | undefined,
  rowLabel = 'groups',
): string {
  return table(
    [rowLabel, ...consumers.map((consumer) => labels[consumer])],
    groupCounts.map((groups) => {
      const baseline = find('powertools' as C, groups);
      return [
        String(groups),
        ...consumers.map((consumer) => {
          const measured = find(consumer, groups);
          if (!measured || !baseline) return '–';
          return `${spreadText(measured.latency, 'ms')}${againstPowertools(consumer === 'powertools', measured.latency.median, baseline.latency.median)}`;
        }),
      ];
    }),
  );
}

function notificationLatencySection(
  rows: readonly NotificationLatency[],
  noLatency: readonly NotificationLatency[],
  settings: BenchSettings,
): string {
  const consumers = Object.keys(NOTIFICATION_CONSUMERS) as NotificationConsumer[];
  const groupCounts = [...new Set(rows.map((row) => row.groups))];
  const find = (consumer: NotificationConsumer, groups: number) =>
    rows.find((row) => row.consumer === consumer && row.groups === groups);
  return [
    '### An effect without DynamoDB requests',
    '',
    'The same batches of SendNotification instead, whose effect is one POST to a notification gateway on ' +
      `loopback (not delayed): what a batch takes is its idempotency round trips, ${settings.latencyMs} ms each. ` +
      "Lease mode takes a group's leases together; at-least-once writes each completion while the next record " +
      'runs, at-most-once writes it naming the next record, which lets that one start: one round trip between two ' +
      'effects.',
    '',
    latencyTable(consumers, NOTIFICATION_CONSUMERS, groupCounts, find),
    '',
    `Per record at 1 group, DynamoDB requests and write units: ${consumers
      .map((consumer) => {
        const row = find(consumer, 1);
        return `${consumer} ${row?.requestsPerRecord.toFixed(2)} and ${row?.writeUnitsPerRecord.toFixed(2)}`;
      })
      .join(', ')}.`,
    '',
    ...(noLatency.length > 0
      ? [
          `The same 1-group batches with no latency added (median, ms): ${consumers
            .map((consumer) => {
              const row = noLatency.find((candidate) => candidate.consumer === consumer);
              return `${NOTIFICATION_CONSUMERS[consumer]} ${row?.latency.median.toFixed(1)}`;
            })
            .join(', ')}. That is what the batch's work costs this machine — the AWS SDK's client side of ` +
            'each request, the POSTs, DynamoDB Local — on its 2 CPUs, where overlapping round trips saves nothing. ' +
            'At-least-once, with only 2 round trips on its critical path, is bound by it.',
          '',
        ]
      : []),
  ].join('\n');
}

/** The slope of (2): each consumer's median at every added latency, and the round trips the line counts. */
function roundTripSection(rows: readonly RoundTrips[], settings: BenchSettings): string {
  const latencies = rows[0]?.points.map((point) => point.latencyMs) ?? [];
  const { batches, warmupBatches } = settings.roundTrips;
  return [
    '#### Sequential round trips, from the latency slope',
    '',
    `The same 1-group batch with ${latencies.join(', ')} ms added to every DynamoDB request, the latencies ` +
      `and the consumers taking turns batch after batch (${batches} timed rounds after ${warmupBatches} ` +
      "untimed ones). Each millisecond a round trip takes adds a millisecond per round trip on the batch's " +
      'critical path, whatever its CPU costs this machine, so the slope of the median over the round trip ' +
      'counts those round trips. The round trip is measured: the median DynamoDB request at that point, from ' +
      'the added wait to the answer (on an idle machine a request after a longer wait takes a little longer ' +
      'too). Least squares over every point: the middle one weighs too, and one noisy median less than in a ' +
      "difference of the two outer ones. The design's count (docs/design.md §4 and §4.1): 2 at-least-once " +
      `(the leases together, the completions overlapped), n + 1 = ${DESIGN_ROUND_TRIPS.leaseAtMostOnce} ` +
      `at-most-once (the leases, then a completion that starts the next record), ${DESIGN_ROUND_TRIPS.powertools} ` +
      "for Powertools (a lease and a completion per record). The slope's spread: p10–p90 of the same slope " +
      `over ${SLOPE_RESAMPLES} resamples of the timed rounds (a bootstrap, a round drawn whole). The slope ` +
      'counts a wait only where nothing else of the batch runs meanwhile: where the batch has CPU work beside ' +
      'its waits (at-least-once overlaps its completions with the next records) or the CPUs are saturated, it ' +
      "counts fewer than the round trips on the batch's path. Powertools', whose round trips all run in a row, shows " +
      'whether this run passed the added latency through.',
    '',
    table(
      [
        'consumer',
        ...(rows[0]?.points ?? []).map(
          (point) => `+${point.latencyMs} ms (a round trip: ${figure(point.roundTripMs)} ms)`,
        ),
        'round trips (slope)',
        'p10–p90 over resampled rounds',
        "design's count",
      ],
      rows.map((row) => [
        NOTIFICATION_CONSUMERS[row.consumer],
        ...row.points.map((point) => spreadText(point.latency, 'ms')),
        `**${row.roundTrips.toFixed(1)}**`,
        `${row.interval.p10.toFixed(1)}–${row.interval.p90.toFixed(1)}`,
        String(DESIGN_ROUND_TRIPS[row.consumer]),
      ]),
    ),
    '',
  ].join('\n');
}

function publisherSection(rows: readonly PublisherCost[], settings: BenchSettings): string {
  const find = (sender: PublisherCost['sender'], latency: number) =>
    rows.find((row) => row.sender === sender && row.addedLatencyMs === latency);
  const latencies = [0, settings.latencyMs];
  const { messages, groups, rounds } = settings.publisher;
  return [
    '## 3. Publisher',
    '',
    `${messages} messages over ${groups} groups to a FIFO queue of the SQS emulator: through the publisher handler ` +
      '(validation, request idempotency, `SendMessageBatch` in group order; requests of 500 messages, the most one ' +
      'may carry) against one `SendMessage` after another (the naive baseline). Wall time as the emulators answer, ' +
      `and with ${settings.latencyMs} ms added to every SQS and DynamoDB request; median of ${rounds} run(s), ` +
      'p10–p90 in brackets. Calls against the naive baseline, and how many times faster than it.',
    '',
    table(
      [
        '',
        'SQS calls',
        'per message',
        'DynamoDB requests',
        'wall time (emulators)',
        `wall time (+${settings.latencyMs} ms)`,
      ],
      (Object.keys(SENDERS) as PublisherCost['sender'][]).map((sender) => {
        const [raw, slow] = latencies.map((latency) => find(sender, latency));
        const [naiveRaw, naiveSlow] = latencies.map((latency) => find('naive', latency));
        const versus = (value: number, baseline: number) =>
          sender === 'naive' ? '' : ` (${ratio(value, baseline)})`;
        const faster = (value: number, baseline: number) =>
          sender === 'naive' ? '' : `, ${ratio(baseline, value)} faster`;
        if (!raw || !slow || !naiveRaw || !naiveSlow) return [SENDERS[sender], '–', '–', '–', '–', '–'];
        return [
          SENDERS[sender],
          `${raw.sqsCalls}${versus(raw.sqsCalls, naiveRaw.sqsCalls)}`,
          (raw.sqsCalls / raw.messages).toFixed(3),
          String(raw.dynamodbRequests),
          `${rangeText(raw.wallMs, 'ms')}${faster(raw.wallMs.median, naiveRaw.wallMs.median)}`,
          `${rangeText(slow.wallMs, 'ms')}${faster(slow.wallMs.median, naiveSlow.wallMs.median)}`,
        ];
      }),
    ),
    '',
  ].join('\n');
}

/** The validation library, which each bundle may carry in its own build (zod's full one, or zod/mini). */
const VALIDATION_LIBRARY = 'zod';

function bundleSection(deployed: readonly BundleSize[], withoutSdk: readonly BundleSize[]): string {
  const baselineOf = (bundles: readonly BundleSize[]) =>
    bundles.find((bundle) => bundle.lambda === BASELINE_BUNDLE);
  const withoutValidation = (bundle: BundleSize) =>
    bundle.bytes - (bundle.parts.find((part) => part.origin === VALIDATION_LIBRARY)?.bytes ?? 0);
  const sized = (bundle: BundleSize, baseline: BundleSize | undefined, bytes: (of: BundleSize) => number) =>
    `${kib(bytes(bundle))}${baseline && bundle.lambda !== BASELINE_BUNDLE ? ` (${ratio(bytes(bundle), bytes(baseline))})` : ''}`;
  const origins = [...new Set(withoutSdk.flatMap((bundle) => bundle.parts.map((part) => part.origin)))];
  const sdkBytes = (bundle: BundleSize) =>
    bundle.parts
      .filter((part) => /^@(aws-sdk|smithy|aws-crypto)\//.test(part.origin))
      .reduce((sum, part) => sum + part.bytes, 0);
  return [
    '## 4. Bundle size',
    '',
    `Each Lambda bundled as \`lib/constructs/bundling.ts\` bundles it for NodejsFunction (${BUNDLE_FORMATS[DEFAULT_FORMAT].label}: ` +
      'esbuild, minified with names kept, node24): the example consumer and the publisher, against the same ' +
      'consumer built on Powertools batch + idempotency + logger + metrics (`bench/consumers/powertools-consumer.ts`), ' +
      'built the same way. Ratios against Powertools. As deployed, each bundle carries the AWS SDK clients it uses, ' +
      'tree-shaken (the AWS SDK column: `@aws-sdk`, `@smithy`, `@aws-crypto`); the second table leaves the SDK to the ' +
      "runtime, which shows the libraries' own bytes. Built as a project that does not install the optional peer " +
      "`@opentelemetry/api` (the default); what it adds when installed is (5c)'s.",
    '',
    table(
      ['as deployed', 'minified', 'gzipped', 'of which the AWS SDK'],
      deployed.map((bundle) => [
        `${BUNDLES[bundle.lambda].label} (\`${bundle.entry}\`)`,
        sized(bundle, baselineOf(deployed), (of) => of.bytes),
        sized(bundle, baselineOf(deployed), (of) => of.gzipBytes),
        kib(sdkBytes(bundle)),
      ]),
    ),
    '',
    table(
      ['without the AWS SDK', 'minified', 'gzipped', `minified, without ${VALIDATION_LIBRARY}`],
      withoutSdk.map((bundle) => {
        const baseline = baselineOf(withoutSdk);
        return [
          BUNDLES[bundle.lambda].label,
          sized(bundle, baseline, (of) => of.bytes),
          sized(bundle, baseline, (of) => of.gzipBytes),
          sized(bundle, baseline, withoutValidation),
        ];
      }),
    ),
    '',
    'Where the minified bytes without the SDK come from (esbuild metafile):',
    '',
    table(
      ['origin', ...withoutSdk.map((bundle) => BUNDLES[bundle.lambda].label)],
      origins.map((origin) => [
        `\`${origin}\``,
        ...withoutSdk.map((bundle) => {
          const bytes = bundle.parts.find((part) => part.origin === origin)?.bytes;
          return bytes ? kib(bytes) : '–';
        }),
      ]),
    ),
    '',
  ].join('\n');
}

function throughputSection(
  rows: readonly Throughput[],
  settings: BenchSettings,
  ownCpu: readonly OwnCpu[] = [],
): string {
  const { messages, rounds, groups, maxConcurrency } = settings.throughput;
  const pipelineCpu = (row: Throughput) => {
    const cpu = row.cpuMsPerMessage;
    if (!cpu) return '–';
    const part = (ms: number | undefined) => (ms === undefined ? '–' : ms.toFixed(2));
    return `${part(cpu.mainThread)} / ${part(cpu.otherThreads)} / ${part(cpu.functions)} / ${part(cpu.watched)} ms`;
  };
  const records = ({ eventSource }: Throughput) =>
    eventSource.batches > 0 ? (eventSource.messages / eventSource.batches).toFixed(1) : '–';
  const heap = ({ consumerHeapBytes }: Throughput) =>
    consumerHeapBytes.length === 0
      ? '–'
      : `${[...consumerHeapBytes]
          .sort((a, b) => a - b)
          .map((bytes) => (bytes / 2 ** 20).toFixed(1))
          .join(', ')} MiB`;
  return [
    "## 5. Throughput: the consumer's CPU per message",
    '',
    `${messages} StockReceived messages over ${groups} groups per round, ${rounds} round(s) per consumer, the ` +
      'pipelines taking turns: the publisher Lambda and the consumer Lambda, bundled as the stack bundles them, in ' +
      'containers as the sandbox runs them (`sandbox/function-runtime.ts`: each a child process on the Node.js ' +
      `major of its runtime, one invocation at a time, frozen in between), the consumer fed by the sandbox's ` +
      `event source poller (batches of 10, ${maxConcurrency} pollers), timed from the first publish to the last ` +
      'record acknowledged. Every consumer makes one ledger write per message; Oncely in each of its modes: ' +
      'transactional (the example consumer) and lease mode, at-least-once and at-most-once ' +
      '(`bench/consumers/lease-consumer.ts`).',
    '',
    "**The consumer's CPU per message** is what Lambda bills of the consumer's time, reported beside (5b)'s " +
      "judged share of it that is Oncely's own code: the CPU " +
      "time of the main threads of the consumer function's containers over the timed rounds, divided by the " +
      "messages. Each container reads its main thread's from Linux's /proc (`/proc/thread-self/schedstat`, in " +
      'nanoseconds) and sends it with every answer (`LocalFunctionRuntime.usage().cpuMs`). It leaves out the ' +
      "emulators, the event source poller, the publisher, and the container's other threads (V8's helpers, its " +
      "concurrent GC's among them), which the pipeline's CPU below counts. Median (p10–p90) over the rounds; " +
      "the ratio divides each round's figure by " +
      "the consumer without idempotency's in the same round. **Messages per second** end to end are " +
      "information: here they follow DynamoDB Local's CPU as much as the consumer's. Records per invocation: " +
      "how full the poller's batches were, over which an invocation's fixed cost spreads. Heap: V8's heap in " +
      "use in each of the consumer's containers after the last round. **The whole pipeline's CPU per message**, " +
      "in four parts over the timed rounds: the benchmark's process's main thread (the SQS emulator, the event " +
      'source pollers, the function runtime passing events and answers to and from the containers) / its other ' +
      "threads (V8's helpers, its GC's among them, and libuv's thread pool), both read from Linux's /proc in " +
      "clock ticks / the function containers, the publisher's and the consumer's, each counted as a whole " +
      "process, every thread of it (V8's helpers included), as `process.cpuUsage()` counts it in the container " +
      "and sends it with every answer (`LocalFunctionRuntime.processCpuMs()`; the other pipelines' containers " +
      "are frozen meanwhile) / DynamoDB Local's JVM, its process's from /proc. Their sum is what the pipeline " +
      'cost this machine per message.',
    '',
    table(
      [
        'consumer',
        "consumer's CPU per message",
        'ratio',
        'messages/s',
        'ratio',
        'records per invocation',
        'heap per container',
        'pipeline CPU per message: main thread / other threads / functions / DynamoDB Local',
      ],
      rows.map((row) => [
        PIPELINE_CONSUMERS[row.consumer].label,
        row.consumerCpuMsPerMessage ? msSpread(row.consumerCpuMsPerMessage) : '–',
        row.consumer === BASELINE_PIPELINE
          ? 'baseline'
          : row.consumerCpuRatio
            ? ratioSpread(row.consumerCpuRatio)
            : '–',
        rangeText(row.messagesPerSecond, 'msg/s'),
        row.pairedRatio ? ratioSpread(row.pairedRatio) : 'baseline',
        records(row),
        heap(row),
        pipelineCpu(row),
      ]),
    ),
    '',
    whereTheTimeGoes(rows, ownCpu),
    '',
  ].join('\n');
}

/** (5b): Oncely's own CPU per message in each mode, from a profile of each consumer. */
function ownCpuSection(rows: readonly OwnCpu[], settings: BenchSettings): string {
  const { messages, warmupMessages, groups } = settings.ownCpu;
  const ms = (value: number) => `${value.toFixed(3)} ms`;
  const total = (row: OwnCpu) => Object.values(row.msPerMessage).reduce((sum, value) => sum + value, 0);
  const withProc = rows.every((row) => row.threadCpuMsPerMessage !== undefined);
  return [
    "## 5b. Oncely's own CPU per message: each mode profiled",
    '',
    `${2 * messages} first deliveries per mode (StockReceived, in batches of 10 over ${groups} groups) after ` +
      `${warmupMessages} unprofiled ones, each consumer run in the benchmark's process on one thread, invoked with ` +
      'the event Lambda delivers, against DynamoDB Local with no latency added. Half of the batches run under ' +
      "V8's sampling profiler (`node:inspector`, a sample every 200 µs); each sample counts for the script of the " +
      "function it caught running (its self time). **Oncely's own code** is the package's compiled modules " +
      "(`dist/lambdas/`), the example shop's (`lambdas/shop/`) left out as business code; **the AWS SDK** is " +
      "`@aws-sdk/*`, `@smithy/*` and `@aws-crypto/*`, `@aws-sdk/util-dynamodb`'s marshalling of Oncely's records " +
      "included; **Node.js and V8** are Node's own modules, V8's built-ins (`JSON`, promises), its garbage " +
      'collector and the native code between them (HTTP parsing, the sockets). A function V8 inlined into its ' +
      'caller counts as the caller’s. The modules are profiled unbundled: each function keeps its own script, so ' +
      'no source map has to place it; the deployed bundle runs the same functions. ' +
      (withProc
        ? "The other half, in turns with the first, runs unprofiled and gives the thread's CPU time per message " +
          "(Linux's /proc), free of the profiler's own cost: each origin's figure is its share of the samples times " +
          'that.'
        : "Without Linux's /proc the figures are shares of the profiled half's busy wall time, which the " +
          "profiler's own cost and a busy machine's descheduling inflate."),
    '',
    table(
      [
        'consumer',
        'DynamoDB requests per message',
        'CPU per message',
        "Oncely's own code",
        'AWS SDK',
        'other libraries (Powertools, Middy, zod)',
        'Node.js and V8',
        "business and benchmark's code",
      ],
      rows.map((row) => [
        PIPELINE_CONSUMERS[row.consumer].label,
        row.requestsPerMessage.toFixed(2),
        ms(total(row)),
        `**${ms(row.msPerMessage.oncely)}** (${((row.msPerMessage.oncely / total(row)) * 100).toFixed(1)} %)`,
        ms(row.msPerMessage.sdk),
        ms(row.msPerMessage.libraries),
        ms(row.msPerMessage.node),
        ms(row.msPerMessage.application),
      ]),
    ),
    '',
    requestFloor(rows),
    '',
    "Oncely's functions with the most self time, in µs per message:",
    '',
    ...rows.map(
      (row) =>
        `- ${PIPELINE_CONSUMERS[row.consumer].short}: ${row.topOncelyFunctions
          .map(({ name, location, ms: self }) => `\`${name}\` (${location}) ${(self * 1000).toFixed(1)}`)
          .join(', ')}`,
    ),
    '',
  ].join('\n');
}

/** Issue 20: what idempotency costs the consumer's own CPU in each mode, and what it costs the pipeline. */
function whereTheTimeGoes(rows: readonly Throughput[], ownCpu: readonly OwnCpu[]): string {
  const row = (consumer: PipelineConsumer) => rows.find((candidate) => candidate.consumer === consumer);
  const own = (consumer: PipelineConsumer) => row(consumer)?.consumerCpuMsPerMessage?.median;
  const baselineOwn = own(BASELINE_PIPELINE);
  if (baselineOwn === undefined) {
    return "**Where the time goes.** Not measured on this machine: it needs Linux's /proc.";
  }
  const more = (consumer: PipelineConsumer) => {
    const extra = (own(consumer) ?? Number.NaN) - baselineOwn;
    return `${PIPELINE_CONSUMERS[consumer].short} ${extra < 0 ? '−' : '+'}${Math.abs(extra).toFixed(2)} ms`;
  };
  const ownText =
    `**Where the time goes.** The consumer without idempotency used ${baselineOwn.toFixed(2)} ms of its own ` +
    `CPU per message (median); against it, ${[...ONCELY_PIPELINES, 'powertools' as const].map(more).join(', ')}. ` +
    "Each consumer's CPU follows the DynamoDB requests it sends per message (1): one for the consumer without " +
    'idempotency (an UpdateItem) and for transactional mode (one TransactWriteItems of the record and the write), ' +
    'three for lease mode (the lease, the write, the completion) and for Powertools. ' +
    profiledShares(ownCpu);
  const pipeline = (consumer: PipelineConsumer) => row(consumer)?.cpuMsPerMessage;
  const [transactional, baseline] = [pipeline('transactional'), pipeline(BASELINE_PIPELINE)];
  if (transactional?.watched === undefined || baseline?.watched === undefined) return ownText;
  const total = (cpu: NonNullable<Throughput['cpuMsPerMessage']>) =>
    cpu.mainThread + cpu.otherThreads + (cpu.functions ?? 0) + (cpu.watched ?? 0);
  return (
    ownText +
    `End to end, the transactional pipeline used ${(total(transactional) - total(baseline)).toFixed(2)} ms more ` +
    `CPU per message than the one without idempotency, ${(transactional.watched - baseline.watched).toFixed(2)} ms ` +
    'of it in DynamoDB Local: it spends several times the CPU on a TransactWriteItems of two items as on an ' +
    'UpdateItem (profiled once with Java Flight Recorder, outside these runs: it builds a new JSON object mapper ' +
    "and a request signature for every TransactWriteItems). That is the sandbox's cost, not Lambda's: DynamoDB " +
    "bills the transaction in write units (7), not in the function's time. On these CPUs, saturated, messages " +
    "per second follow the whole pipeline's CPU per message."
  );
}

/**
 * How close each mode is to its floor: the AWS SDK's and Node's cost per DynamoDB request, times the
 * design's minimum of requests, is what a consumer costs whatever Oncely's code does.
 */
function requestFloor(rows: readonly OwnCpu[]): string {
  const perRequest = rows.map((row) => {
    const { sdk, node } = row.msPerMessage;
    return `${PIPELINE_CONSUMERS[row.consumer].short} ${((sdk + node) / row.requestsPerMessage).toFixed(2)} ms`;
  });
  return (
    'The AWS SDK and Node.js cost, per DynamoDB request: ' +
    `${perRequest.join(', ')}. At the design's minimum of requests per first delivery (1), that is the floor of ` +
    "a consumer's CPU per message; Oncely's own code is what it adds to that floor."
  );
}

/** What (5b)'s profiles found of the consumers' CPU: most of it per request, little of it Oncely's. */
function profiledShares(rows: readonly OwnCpu[]): string {
  if (rows.length === 0) return '';
  const share = (row: OwnCpu, origin: keyof OwnCpu['msPerMessage']) => {
    const total = Object.values(row.msPerMessage).reduce((sum, ms) => sum + ms, 0);
    return `${((row.msPerMessage[origin] / total) * 100).toFixed(0)} %`;
  };
  const list = (origin: keyof OwnCpu['msPerMessage']) =>
    rows.map((row) => `${PIPELINE_CONSUMERS[row.consumer].short} ${share(row, origin)}`).join(', ');
  return (
    `The profile of each mode in this run (5b) found the AWS SDK's client side of the requests (${list('sdk')}) ` +
    `and Node.js and V8 (${list('node')}, its HTTP and sockets among them) where Oncely's own code took ` +
    `${list('oncely')}: a mode that sends three requests per message pays about three requests' CPU. `
  );
}

function msSpread(spread: Spread): string {
  const ms = (value: number) => value.toFixed(2);
  return spread.samples > 1
    ? `${ms(spread.median)} ms (${ms(spread.p10)}–${ms(spread.p90)})`
    : `${ms(spread.median)} ms`;
}

function startUpSection(results: StartUpResults, settings: BenchSettings): string {
  const { bundles: rows } = results;
  const { runs, warmupRuns } = settings.startUp;
  const times = ({ wallMs, cpuMs }: ImportTimes) =>
    `${figure(cpuMs.median)} ms (wall ${spreadText(wallMs, 'ms')})`;
  const formats = [...new Set(rows.map((row) => row.format))];
  return [
    '## 6. Module start-up',
    '',
    "Each bundle loaded in a fresh Node process as Lambda's init phase loads the handler (`import()` of an " +
      '`index.mjs`, `require()` of an `index.js`, `--enable-source-maps` only where the format has source maps): ' +
      'the CPU time from the load to the module evaluated (steadier than wall time on a shared machine; wall time ' +
      'beside it). Every Lambda in every format, alike: the default and the choices it was made against. Beside ' +
      "each, its **SDK floor**: a module importing only the AWS SDK names the bundle's code imports (statically, " +
      'or with `import()` where the code does), built the same way — loaded from the runtime where the format ' +
      'leaves the SDK to it, bundled and tree-shaken where it bundles it. **Above the floor** is the median of ' +
      "each round's difference between the two: what the rest of the bundle costs at start. The ratio divides " +
      "each round's time by Powertools' consumer's in the same format, median (p10–p90) of those. " +
      `${runs} rounds after ${warmupRuns} untimed ones; a round loads every module once, in a rotating order.`,
    '',
    ...formats.flatMap((format) => [
      `**${BUNDLE_FORMATS[format].label}**`,
      '',
      table(
        [
          '',
          'start-up (CPU)',
          'SDK floor (CPU)',
          'above the floor (CPU)',
          'ratio to Powertools (CPU)',
          'SDK packages',
        ],
        rows
          .filter((row) => row.format === format)
          .map((row) => [
            BUNDLES[row.lambda].label,
            times(row.bundle),
            times(row.sdkFloor),
            spreadText(row.aboveFloor.cpuMs, 'ms'),
            row.pairedRatio ? ratioSpread(row.pairedRatio.cpu) : 'baseline',
            row.sdkPackages.map((name) => `\`${name}\``).join(', ') || 'none',
          ]),
      ),
      '',
    ]),
    ownLayersText(results),
    '',
    layersText(rows),
    '',
  ].join('\n');
}

/** Issue 28: Oncely's own layer, each entry point alone above its own SDK floor (default format). */
function ownLayersText({ ownLayers, telemetryCostCpuMs }: StartUpResults): string {
  const times = ({ wallMs, cpuMs }: ImportTimes) =>
    `${figure(cpuMs.median)} ms (wall ${spreadText(wallMs, 'ms')})`;
  return [
    `**Oncely's own layer** (${BUNDLE_FORMATS[DEFAULT_FORMAT].label}): each entry point alone in a handler ` +
      'module (`bench/layers/`), bundled as the stack bundles its Lambdas, beside its own SDK floor, in the same ' +
      'rounds. The consumer is `fifoBatch` with one lease-mode operation, made at load; Middy, validation and ' +
      "business code are the user's, left out. With telemetry on, `fifoBatch()` imports Powertools' Logger and " +
      'Metrics, which the bundle evaluates before the init ends; with it off, their bytes are in the bundle but ' +
      'never run.',
    '',
    table(
      ['', 'start-up (CPU)', 'SDK floor (CPU)', 'above the floor (CPU)', 'SDK packages'],
      ownLayers.map((row) => [
        OWN_LAYERS[row.layer].label,
        times(row.module),
        times(row.sdkFloor),
        spreadText(row.aboveFloor.cpuMs, 'ms'),
        row.sdkPackages.map((name) => `\`${name}\``).join(', ') || 'none',
      ]),
    ),
    '',
    `Turning the consumer's Powertools telemetry on costs ${spreadText(telemetryCostCpuMs, 'ms')} of CPU at ` +
      "start (each round's difference between the two consumers). A consumer made on its first invocation " +
      '(`processFifoBatch`, or the example, which builds its handler then) pays it in that invocation instead.',
  ].join('\n');
}

/** What the example consumer's start-up above its floor is made of, layer by layer (default format). */
function layersText(rows: readonly StartUp[]): string {
  const row = rows.find((candidate) => candidate.layers);
  if (!row?.layers) return '';
  const whole = row.aboveFloor.cpuMs.median;
  const steps = row.layers.map(
    ({ label, aboveFloorCpuMs }) => `${label}: ${figure(aboveFloorCpuMs.median)} ms above the floor`,
  );
  const last = row.layers.at(-1)?.aboveFloorCpuMs.median ?? Number.NaN;
  return (
    `**What the example consumer's ${figure(whole)} ms above its floor are made of** (${BUNDLE_FORMATS[row.format].label}; ` +
    'the floor plus one more of its imports at a time, built the same way, CPU medians of paired differences): ' +
    `${steps.join('; ')}; the rest, ${figure(whole - last)} ms, is the example's own: Middy, its zod/mini ` +
    'schemas and its business code.'
  );
}

function costSection(report: CostReport, settings: BenchSettings): string {
  const { prices, sqsCalls } = report;
  const groupCounts = [...new Set(report.modes.map((row) => row.groups))];
  const recordsPerBatch = Math.round(1 / sqsCalls.receiveMessage);
  return [
    '## 7. What a million messages cost',
    '',
    `A million StockReceived messages, each applied once, at ${prices.region} on-demand prices as the AWS pricing ` +
      `pages published them as of ${prices.asOf} (${prices.sources.join(', ')}; not re-checked on the day of this ` +
      `run): Lambda on Arm $${prices.lambdaArmPerGbSecond} per GB-second and $${prices.lambdaPerMillionRequests} per ` +
      `million requests, DynamoDB on-demand $${prices.dynamodbPerMillionWriteUnits} per million write units and ` +
      `$${prices.dynamodbPerMillionReadUnits} per million read units, SQS FIFO $${prices.sqsFifoPerMillionRequests} ` +
      'per million requests of up to 64 KB. Every quantity comes from this run: the write and read units DynamoDB ' +
      `Local reports for 10-record batches of first deliveries run as (2) runs them (${settings.latencyMs} ms added to each ` +
      "DynamoDB request), whose median duration Lambda bills, rounded up to the millisecond, at the construct's " +
      `default consumer memory of ${report.lambdaMemoryMiB} MiB; per message, ` +
      `${sqsCalls.sendMessageBatch.toFixed(3)} SendMessageBatch calls of the publisher in (3), and ` +
      `${sqsCalls.receiveMessage.toFixed(3)} ReceiveMessage and ${sqsCalls.deleteMessageBatch.toFixed(3)} ` +
      `DeleteMessageBatch calls of the event source in (5) (batches of ${recordsPerBatch}), one invocation per ` +
      'receive. Ratios against Powertools and against no idempotency.',
    '',
    ...groupCounts.flatMap((groups) => [
      `${groups} message group${groups === 1 ? '' : 's'} per batch:`,
      '',
      costTable(report.modes.filter((row) => row.groups === groups)),
      '',
      ...costComparison(report.modes.filter((row) => row.groups === groups)).map((line) => `- ${line}`),
      '',
    ]),
    'Left out, alike for every mode: the publisher Lambda and its request records, the empty receives of an ' +
      'idle queue, CloudWatch logs and metrics. Left out, for Oncely and Powertools only: storing each ' +
      'idempotency record until TTL deletes it (TTL deletes are free), at $0.25 per GB-month.',
    '',
  ].join('\n');
}

function costTable(rows: readonly ModeCost[]): string {
  const baselines = {
    powertools: rows.find((row) => row.mode === 'powertools')?.cost.total ?? Number.NaN,
    none: rows.find((row) => row.mode === 'idempotencyFree')?.cost.total ?? Number.NaN,
  };
  return table(
    [
      '',
      'DynamoDB writes',
      'DynamoDB reads',
      'SQS',
      'Lambda requests',
      'Lambda duration',
      'total',
      'vs Powertools',
      'vs no idempotency',
    ],
    rows.map(({ mode, usage, cost }) => [
      COST_MODES[mode].label,
      `${money(cost.dynamodbWrites)} (${usage.dynamodbWriteUnits.toFixed(1)} WRU)`,
      `${money(cost.dynamodbReads)} (${usage.dynamodbReadUnits.toFixed(1)} RRU)`,
      `${money(cost.sqs)} (${usage.sqsRequests.toFixed(2)} requests)`,
      `${money(cost.lambdaRequests)} (${usage.lambdaInvocations.toFixed(2)} invocations)`,
      `${money(cost.lambdaDuration)} (${usage.lambdaBilledMsPerInvocation} ms each)`,
      `**${money(cost.total)}**`,
      mode === 'powertools' ? 'baseline' : ratio(cost.total, baselines.powertools),
      mode === 'idempotencyFree' ? 'baseline' : ratio(cost.total, baselines.none),
    ]),
  );
}

/** Why a write costs Oncely more units than Powertools' three single writes, where it does. */
const EXTRA_WRITE_UNITS: Partial<Record<CostMode, string>> = {
  transactional:
    'its record commits with the ledger write in one transaction, which bills each of the two items twice, ' +
    'where Powertools writes three items once each (record, write, completion)',
};

/** Issue 13 §3: where Oncely costs more than Powertools, and why; and what idempotency costs at all. */
function costComparison(rows: readonly ModeCost[]): string[] {
  const powertools = rows.find((row) => row.mode === 'powertools');
  const none = rows.find((row) => row.mode === 'idempotencyFree');
  if (!powertools || !none) return [];
  const oncely = rows.filter((row) => row.mode !== 'powertools' && row.mode !== 'idempotencyFree');
  const lines = oncely.map((row) => {
    const writes = row.cost.dynamodbWrites - powertools.cost.dynamodbWrites;
    const duration = row.cost.lambdaDuration - powertools.cost.lambdaDuration;
    const difference = row.cost.total - powertools.cost.total;
    const why =
      `write units ${signedMoney(writes)} (${row.usage.dynamodbWriteUnits.toFixed(1)} per message against ` +
      `${powertools.usage.dynamodbWriteUnits.toFixed(1)}` +
      `${writes > 0 && EXTRA_WRITE_UNITS[row.mode] ? `: ${EXTRA_WRITE_UNITS[row.mode]}` : ''}), Lambda time ` +
      `${signedMoney(duration)} (${row.usage.lambdaBilledMsPerInvocation} ms per batch against ` +
      `${powertools.usage.lambdaBilledMsPerInvocation})`;
    const name = COST_MODES[row.mode].label;
    return difference > 0
      ? `**${name} costs more than Powertools**, ${signedMoney(difference)} per million messages: ${why}.`
      : `${name} costs less than Powertools, ${signedMoney(difference)}: ${why}.`;
  });
  const extraUnits = (row: ModeCost) => row.usage.dynamodbWriteUnits - none.usage.dynamodbWriteUnits;
  return [
    ...lines,
    'Against no idempotency, every mode pays for its records in write units: ' +
      `${[...oncely, powertools]
        .map((row) => `${COST_MODES[row.mode].short} ${extraUnits(row).toFixed(1)}`)
        .join(', ')} WRU more per message.`,
  ];
}

/** "10, 100 and 1000": a list of counts in words. */
function listed(counts: readonly number[]): string {
  return counts.length < 2 ? counts.join('') : `${counts.slice(0, -1).join(', ')} and ${counts.at(-1)}`;
}

/** (8), "Standard queues": the section `npm run bench -- --only standard` prints alone. */
export function standardQueuesSection(results: StandardQueueResults, settings: BenchSettings): string {
  const consumers = Object.keys(STANDARD_CONSUMERS) as StandardConsumer[];
  const { recordCounts, batches, warmupBatches, inFlight } = settings.standard;
  const fewer = recordCounts
    .map((records) => ({ records, ...batchesOf(records, settings.standard) }))
    .filter((cell) => cell.batches !== batches)
    .map((cell) => `${cell.batches} after ${cell.warmupBatches} at ${cell.records} records`);
  const find = (consumer: StandardConsumer, records: number) =>
    results.batches.find((row) => row.consumer === consumer && row.records === records);
  const visibility = results.inFlight[0]?.visibilityTimeoutSeconds;
  return [
    '## 8. Standard queues',
    '',
    `Batches of ${listed(recordCounts)} StockReceived first deliveries (one ledger write each, one SKU per ` +
      "record), each consumer invoked directly with the event a standard queue's event source delivers, " +
      `${settings.latencyMs} ms added to every DynamoDB request. ${batches} timed batches per cell after ` +
      `${warmupBatches} untimed ones${fewer.length > 0 ? ` (${fewer.join(', ')})` : ''}; the consumers take turns batch after batch. Oncely: \`standardBatch\` with its ` +
      'defaults (as many records at once as the batch has, up to 100). Powertools 2.35: its documented standard-queue pattern, ' +
      '`processPartialResponse` with `BatchProcessor(EventType.SQS)` and `makeIdempotent` on the record handler, ' +
      'with its default `processInParallel: true`: every record of the batch at once (`Promise.all`, unbounded). ' +
      "That default is the fair comparison: it is what Powertools' users get, and its fastest setting " +
      '(`processInParallel: false` runs the records one after another). Median and p10–p90 in ms; the ratio is ' +
      'how many times faster (or slower) than Powertools.',
    '',
    latencyTable(consumers, STANDARD_CONSUMERS, recordCounts, find, 'records'),
    '',
    'Per record, over the timed batches: the DynamoDB requests and the units DynamoDB Local reported; the CPU ' +
      'of this process while the consumer ran (the consumers run in it, one batch at a time; DynamoDB Local is ' +
      "a process of its own); and a million records' cost at the prices of (7), SQS standard " +
      'at $0.40 per million requests (the same calls for every consumer: a `SendMessageBatch` per 10, a receive ' +
      "and a `DeleteMessageBatch` per batch), Lambda billed for the batch's median at the construct's memory.",
    '',
    table(
      [
        '',
        'records',
        'DynamoDB requests',
        'WRU',
        'RRU',
        'CPU ms',
        'CPU vs Powertools',
        'cost per million',
        'vs Powertools',
      ],
      recordCounts.flatMap((records) =>
        consumers.map((consumer) => {
          const row = find(consumer, records);
          const baseline = find('powertools', records);
          if (!row || !baseline)
            return [STANDARD_CONSUMERS[consumer], String(records), '–', '–', '–', '–', '–', '–', '–'];
          const cpu = row.cpuMsPerRecord;
          return [
            STANDARD_CONSUMERS[consumer],
            String(records),
            row.dynamodbRequestsPerRecord.toFixed(2),
            row.writeUnitsPerRecord.toFixed(1),
            row.readUnitsPerRecord.toFixed(1),
            cpu === undefined ? 'n/a' : cpu.toFixed(3),
            cpu === undefined || baseline.cpuMsPerRecord === undefined
              ? 'n/a'
              : ratio(cpu, baseline.cpuMsPerRecord),
            money(row.cost.total),
            consumer === 'powertools' ? 'baseline' : ratio(row.cost.total, baseline.cost.total),
          ];
        }),
      ),
    ),
    '',
    '### A duplicate that arrives while its original is in flight',
    '',
    `${inFlight.pairs} originals sent to a standard queue at once, each consumer on its own queue, polled by the ` +
      "sandbox's event source poller (Lambda's rules) into the consumer in this process. Each original's effect, " +
      'once its claim is written, sends its copy (the same envelope, as SQS delivers a message twice) and is held ' +
      `${inFlight.holdMs} ms before its write; the copy reaches a second invocation meanwhile. Timed from the ` +
      "copy's first delivery to the end of the invocation that acknowledged it (the poller deletes it then). The " +
      `queue's visibility timeout: ${visibility} s, ${
        inFlight.visibilityTimeoutSeconds === undefined
          ? "the construct's default for a standard pipeline (6 × the 30 s consumer timeout)"
          : "set short for this quick run (the construct's default is 180 s)"
      }. Oncely with \`inFlightWaitMs: ${inFlight.inFlightWaitMs}\` waits in the copy's invocation.`,
    '',
    table(
      ['', 'settles in', 'deliveries of a copy, at most'],
      results.inFlight.map((row) => [
        IN_FLIGHT_SUBJECTS[row.subject],
        spreadText(row.settle, 'ms'),
        String(row.maxDeliveries),
      ]),
    ),
    '',
  ].join('\n');
}

function money(dollars: number): string {
  return `$${dollars.toFixed(dollars >= 1 ? 2 : 3)}`;
}

function signedMoney(dollars: number): string {
  return `${dollars < 0 ? '−' : '+'}${money(Math.abs(dollars))}`;
}

/** How many times faster than Powertools, or slower: never "0.8× faster". */
function againstPowertools(isPowertools: boolean, median: number, baselineMedian: number): string {
  if (isPowertools) return '';
  return median <= baselineMedian
    ? `, ${ratio(baselineMedian, median)} faster`
    : `, ${ratio(median, baselineMedian)} slower`;
}

function ratioSpread(spread: Spread): string {
  return `${spread.median.toFixed(2)}× (${spread.p10.toFixed(2)}–${spread.p90.toFixed(2)})`;
}

function notesSection(results: BenchResults): string {
  const firstUnits = (subject: IdempotencySubject) =>
    results.requests.find((row) => row.subject === subject && row.scenario === 'first')?.writeUnits;
  return [
    '## How to read these figures',
    '',
    `- **Requests are not the bill.** A first delivery in transactional mode is one request but ` +
      `${firstUnits('transactional')} write units (two items, each counted twice in a transaction), against ` +
      `${firstUnits('powertools')} for Powertools plus a separate write. With several business writes that must ` +
      'apply together, Powertools needs a transaction too, and the units come out even; the saving is in ' +
      'round trips (latency) and in having no window between the effect and its record.',
    '- **Latency is modelled.** The emulators answer on loopback in a millisecond or two, so (2) adds a fixed delay ' +
      'to every DynamoDB request, as an AWS round trip would take. Requests sent at once all go to one DynamoDB ' +
      `Local process on ${results.machine.cpus} CPUs and wait there for one another, as they would not on ` +
      'DynamoDB: that weighs on the consumers that run groups at once, not on the one that runs records in turn.',
    "- **(5) reports the consumer's own CPU, not messages per second, and (5b) judges Oncely's part of it.** " +
      'There DynamoDB Local, the SQS emulator ' +
      `and the function containers share ${results.machine.cpus} CPUs, so messages per second follow how much ` +
      "work DynamoDB Local does per message, which Lambda does not bill. The consumer's CPU per message is its " +
      "containers' main threads' alone. Both are figures of this machine's CPUs: the ratios mean more than the " +
      'absolute numbers.',
    '- **(5) swaps only the consumer.** `startSandbox()` runs the functions the synthesised stack names, so its ' +
      "consumer cannot be swapped; (5) builds the same pipeline from the sandbox's parts (the function runtime " +
      'and its containers, the event source poller, the publisher Lambda) with one consumer per pipeline.',
    '- **Powertools versions.** `@aws-lambda-powertools/idempotency` and `batch` are 2.35.0, the newest on the ' +
      'registry, beside logger and metrics 2.36.0. Their second copy of `@aws-lambda-powertools/commons` is ' +
      'bundled once, as a project on a single version would bundle it.',
    '- **Same business logic.** The Powertools and idempotency-free consumers send the ledger writes of ' +
      '`lambdas/shop/consumer/ledger-writes.ts` themselves (`bench/consumers/shop-events.ts`); the Powertools one follows ' +
      'its documentation for FIFO batches: `SqsFifoPartialProcessorAsync`, `processPartialResponse`, ' +
      "`makeIdempotent` per record, keyed by the envelope's key, validated against its type and payload.",
    validationNote(results.bundles),
    startUpNote(results.startUp.bundles),
    '',
  ].join('\n');
}

function validationNote(bundles: readonly BundleSize[]): string {
  const zodOf = (lambda: BundleSize['lambda']) =>
    bundles
      .find((bundle) => bundle.lambda === lambda)
      ?.parts.find((part) => part.origin === VALIDATION_LIBRARY)?.bytes ?? 0;
  return (
    '- **Validation, and how it is imported.** Both consumers check the same payload rules. The example ' +
    `consumer builds them with \`zod/mini\` (\`import * as z\`, and zod's English messages): ${kib(zodOf('oncely'))}. ` +
    "The Powertools one uses zod's full build imported as Powertools' parser documentation imports it " +
    `(\`import { z } from 'zod'\`), which esbuild cannot tree-shake: ${kib(zodOf('powertools'))}. The publisher ` +
    `checks requests with its own code. The column without ${VALIDATION_LIBRARY} compares the rest.`
  );
}

function startUpNote(rows: readonly StartUp[]): string {
  const part = (lambda: StartUp['lambda']) => {
    const row = rows.find((candidate) => candidate.lambda === lambda && candidate.format === DEFAULT_FORMAT);
    return row
      ? `${figure(row.sdkFloor.cpuMs.median)} of ${figure(row.bundle.cpuMs.median)} ms of CPU`
      : 'not measured';
  };
  return (
    '- **Start-up is mostly the AWS SDK.** Every record needs DynamoDB, so every consumer loads its client at ' +
    `start. In the default format, the SDK floor takes ${part('oncely')} for the example consumer, ` +
    `${part('publisher')} for the publisher, ${part('powertools')} for Powertools'. Above the floor, what a ` +
    'bundle costs grows with its size: V8 compiles (lazily, but it still scans) every byte of an ES module at ' +
    "load, whether or not a batch runs it. An ES module that imports the runtime's SDK pays for Node's analysis " +
    'of its CommonJS entry files; source maps cost their decoding at every load.'
  );
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

function operationList(operations: Record<string, number>): string {
  const entries = Object.entries(operations);
  if (entries.length === 0) return 'none';
  return entries.map(([operation, count]) => (count === 1 ? operation : `${operation} ×${count}`)).join(', ');
}

function spreadText(spread: Spread, unit: string): string {
  return `${figure(spread.median)} ${unit} (${figure(spread.p10)}–${figure(spread.p90)})`;
}

function rangeText(spread: Spread, unit: string): string {
  return spread.samples > 1 ? spreadText(spread, unit) : `${figure(spread.median)} ${unit}`;
}

function figure(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}
