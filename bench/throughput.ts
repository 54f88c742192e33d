import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ReceiveMessageResult, SQSClient } from '@aws-sdk/client-sqs';
import { build } from 'esbuild';
import { type Spread, spreadOf } from '../harness/statistics.js';
import { MAX_MESSAGES_PER_REQUEST, type PublishResponse } from '../lambdas/publisher/contract.js';
import {
  lambdaBuildOptions,
  lambdaBundleFile,
  writeLambdaAssetPackageJson,
} from '../lib/constructs/bundling.js';
import { type BatchReport, startEventSourcePoller } from '../sandbox/event-source-poller.js';
import { type FunctionUsage, LocalFunctionRuntime } from '../sandbox/function-runtime.js';
import { LOCAL_REGION, localFunctionArn } from '../sandbox/local-aws-config.js';
import { provideRuntimeModules } from '../sandbox/runtime-modules.js';
import { awsEnvironment, type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { LEASE_MODE_VARIABLE } from './consumers/lease-consumer.js';
import { type CpuTimes, cpuSince, cpuTimes } from './cpu-time.js';
import {
  createQueueWithDlq,
  deleteQueues,
  newIdempotencyTable,
  newLedgerTable,
  sumOfAttribute,
  uniqueName,
} from './resources.js';
import { rotate } from './rotate.js';
import { stockMessages } from './stock-events.js';

/** A consumer Lambda of (5): its entry, bundled as the stack bundles it, and its own variables. */
export interface PipelineConsumerSpec {
  label: string;
  /** Its name in the targets' lines. */
  short: string;
  entry: string;
  variables?: Readonly<Record<string, string>>;
  /** Set on Oncely's consumers, one per mode: each reported against the one without idempotency. */
  judged?: true;
}

const LEASE_ENTRY = 'bench/consumers/lease-consumer.ts';

export const PIPELINE_CONSUMERS = {
  idempotencyFree: {
    label: 'no idempotency: the same writes and FIFO rules, nothing recorded',
    short: 'no idempotency',
    entry: 'bench/consumers/idempotency-free-consumer.ts',
  },
  transactional: {
    label: 'Oncely transactional: the example consumer',
    short: 'transactional',
    entry: 'lambdas/shop/consumer/handler.ts',
    judged: true,
  },
  leaseAtLeastOnce: {
    label: 'Oncely lease, at-least-once',
    short: 'lease at-least-once',
    entry: LEASE_ENTRY,
    variables: { [LEASE_MODE_VARIABLE]: 'at-least-once' },
    judged: true,
  },
  leaseAtMostOnce: {
    label: 'Oncely lease, at-most-once',
    short: 'lease at-most-once',
    entry: LEASE_ENTRY,
    variables: { [LEASE_MODE_VARIABLE]: 'at-most-once' },
    judged: true,
  },
  powertools: {
    label: 'Powertools consumer',
    short: 'Powertools',
    entry: 'bench/consumers/powertools-consumer.ts',
  },
} as const satisfies Record<string, PipelineConsumerSpec>;
export type PipelineConsumer = keyof typeof PIPELINE_CONSUMERS;

/** Oncely's consumers, one per mode: (5b) profiles the same modes. */
export const ONCELY_PIPELINES = (Object.keys(PIPELINE_CONSUMERS) as PipelineConsumer[]).filter(
  (consumer) => (PIPELINE_CONSUMERS[consumer] as PipelineConsumerSpec).judged,
);
const PUBLISHER_ENTRY = 'lambdas/publisher/handler.ts';

export interface ThroughputOptions {
  /** Messages per timed round. */
  messages: number;
  /** Timed rounds per consumer; the pipelines take turns. */
  rounds: number;
  groups: number;
  /** Pollers of the event source, so at most this many consumer invocations at once. */
  maxConcurrency: number;
  /** Sent and consumed before the clock starts: every container then has its modules loaded and warm. */
  warmupMessages: number;
  projectRoot: string;
  /** DynamoDB Local's process, whose CPU time is then counted per pipeline beside this process's. */
  dynamodbPid?: number;
  onProgress?: (line: string) => void;
}

export interface Throughput {
  consumer: PipelineConsumer;
  messagesPerRound: number;
  /** Messages per second, one sample per round. */
  messagesPerSecond: Spread;
  /** Each round's messages per second over the baseline's in the same round; none for the baseline. */
  pairedRatio?: Spread;
  /**
   * The consumer function's own CPU time per message, in ms, one sample per round (Linux only): its
   * containers' main threads' (`LocalFunctionRuntime.usage().cpuMs`), without the emulators, the
   * poller, the publisher, or V8's helper threads in the containers.
   */
  consumerCpuMsPerMessage?: Spread;
  /** Each round's consumer CPU per message over the baseline's in the same round; none for the baseline. */
  consumerCpuRatio?: Spread;
  /** The V8 heap in use of each of the consumer's containers after the last round, in bytes. */
  consumerHeapBytes: number[];
  /**
   * Where the whole pipeline's CPU went, in ms per message over the timed rounds (Linux only): this
   * process's main thread and other threads, the publisher's and the consumer's containers
   * (`functions`, whole processes), and DynamoDB Local's JVM (`watched`).
   */
  cpuMsPerMessage?: CpuTimes;
  /** The event source's SQS calls over the timed rounds. */
  eventSource: EventSourceCalls;
}

/** What the event source poller asked of SQS. */
export interface EventSourceCalls {
  /** ReceiveMessage calls that brought messages: one consumer invocation each. */
  batches: number;
  /** ReceiveMessage calls that came back empty (long polls of an idle queue). */
  emptyReceives: number;
  deleteBatches: number;
  messages: number;
}

/** The pipeline the others are compared with. */
export const BASELINE_PIPELINE: PipelineConsumer = 'idempotencyFree';

const BATCH_SIZE = 10;
const TIMEOUT_SECONDS = 30;
/** Lambda's `Handler` for a NodejsFunction asset: its bundle file's `handler` export. */
const HANDLER = lambdaBundleFile().replace(/\.[cm]?js$/, '.handler');
/** How long the last message may take to be consumed before the run counts as stuck. */
const DRAIN_TIMEOUT_MS = 120_000;

/**
 * (5) The pipeline as the sandbox runs it: the publisher Lambda and a consumer Lambda bundled as the
 * stack bundles them, run in containers as the sandbox runs them (`sandbox/function-runtime.ts`:
 * child processes on the runtime's Node.js major, one invocation at a time per container as in
 * Lambda, frozen in between), the consumer fed by the sandbox's event source poller with the stack's
 * batch size. A round runs from the first publish to the last record acknowledged. Only the consumer
 * differs between the pipelines, which take turns round after round; at the end each ledger must
 * hold exactly one unit per message. Per round: the consumer function's own CPU time (its
 * containers' main threads', what Lambda would bill), the messages per second, the whole
 * pipeline's CPU (this process's, the pipeline's function containers', DynamoDB Local's), and the
 * event source's SQS calls, which (7) bills.
 */
export async function measureThroughput(
  endpoints: BenchEndpoints,
  options: ThroughputOptions,
): Promise<Throughput[]> {
  const consumers = Object.keys(PIPELINE_CONSUMERS) as PipelineConsumer[];
  const bundles = await bundleFunctions(options.projectRoot, [
    PUBLISHER_ENTRY,
    ...new Set(consumers.map((consumer) => PIPELINE_CONSUMERS[consumer].entry)),
  ]);
  const pipelines: Pipeline[] = [];
  try {
    for (const consumer of consumers)
      pipelines.push(await startPipeline(endpoints, consumer, options, bundles));
    await Promise.all(pipelines.map((pipeline) => pipeline.warmUp()));
    const rates = new Map<PipelineConsumer, number[]>(consumers.map((consumer) => [consumer, []]));
    const consumerCpu = new Map<PipelineConsumer, (number | undefined)[]>(
      consumers.map((consumer) => [consumer, []]),
    );
    const usage = Object.fromEntries(consumers.map((consumer) => [consumer, new PipelineUsage()])) as Record<
      PipelineConsumer,
      PipelineUsage
    >;
    for (let round = 0; round < options.rounds; round++) {
      for (const pipeline of rotate(pipelines, round)) {
        // The other pipelines' containers are frozen meanwhile: only this one's functions run.
        const before = {
          cpu: cpuTimes(options.dynamodbPid, pipeline.functionsCpuMs()),
          calls: pipeline.eventSourceCalls(),
          consumer: pipeline.consumerUsage(),
        };
        const seconds = await pipeline.deliver(options.messages);
        const after = {
          cpu: cpuTimes(options.dynamodbPid, pipeline.functionsCpuMs()),
          calls: pipeline.eventSourceCalls(),
          consumer: pipeline.consumerUsage(),
        };
        usage[pipeline.consumer].add(
          before.cpu && after.cpu ? cpuSince(before.cpu, after.cpu) : undefined,
          before.calls,
          after.calls,
        );
        rates.get(pipeline.consumer)?.push(options.messages / seconds);
        consumerCpu
          .get(pipeline.consumer)
          ?.push(
            before.consumer.cpuMs === undefined || after.consumer.cpuMs === undefined
              ? undefined
              : (after.consumer.cpuMs - before.consumer.cpuMs) / options.messages,
          );
      }
      options.onProgress?.(
        `round ${round + 1}: ${consumers
          .map((consumer) => {
            const cpu = consumerCpu.get(consumer)?.at(-1);
            return `${consumer} ${rates.get(consumer)?.at(-1)?.toFixed(0)}/s${cpu === undefined ? '' : ` ${cpu.toFixed(2)} ms`}`;
          })
          .join(', ')}`,
      );
    }
    for (const pipeline of pipelines) await pipeline.checkLedger();
    const pairedWithBaseline = (samples: Map<PipelineConsumer, number[]>, consumer: PipelineConsumer) => {
      const baseline = samples.get(BASELINE_PIPELINE) ?? [];
      return consumer === BASELINE_PIPELINE
        ? undefined
        : spreadOf(
            (samples.get(consumer) ?? []).map((value, round) => value / (baseline[round] ?? Number.NaN)),
          );
    };
    // One round without a figure (no /proc) leaves none for the whole run.
    const cpuSamples = new Map<PipelineConsumer, number[]>();
    for (const [consumer, samples] of consumerCpu) {
      if (samples.every((sample) => sample !== undefined)) cpuSamples.set(consumer, samples as number[]);
    }
    return consumers.map((consumer) => {
      const cpu = cpuSamples.get(consumer);
      return {
        consumer,
        messagesPerRound: options.messages,
        messagesPerSecond: spreadOf(rates.get(consumer) ?? []),
        pairedRatio: pairedWithBaseline(rates, consumer),
        consumerCpuMsPerMessage: cpu && spreadOf(cpu),
        consumerCpuRatio:
          cpu && cpuSamples.has(BASELINE_PIPELINE) ? pairedWithBaseline(cpuSamples, consumer) : undefined,
        consumerHeapBytes:
          pipelines.find((pipeline) => pipeline.consumer === consumer)?.consumerUsage().heapUsedBytes ?? [],
        ...usage[consumer].perMessage(options.messages * options.rounds),
      };
    });
  } finally {
    for (const pipeline of pipelines) await pipeline.stop();
    await bundles.remove();
  }
}

interface Bundles {
  /** The folder of an entry's bundle, as Lambda unpacks its asset. */
  codeDirectory(entry: string): string;
  remove(): Promise<void>;
}

/**
 * Each entry bundled as the stack's NodejsFunction bundles it (`lib/constructs/bundling.ts`), each in a
 * folder of its own as the assets of a cloud assembly, with the AWS SDK that Lambda's runtime
 * provides resolvable beside them, as the sandbox runs them.
 */
async function bundleFunctions(projectRoot: string, entries: readonly string[]): Promise<Bundles> {
  const directory = await mkdtemp(join(tmpdir(), 'oncely-bench-'));
  const codeDirectory = (entry: string) => join(directory, entry.replace(/\W+/g, '-'));
  const remove = () => rm(directory, { recursive: true, force: true });
  try {
    await Promise.all(
      entries.map(async (entry) => {
        await build({
          ...lambdaBuildOptions({ projectRoot, entry, outdir: codeDirectory(entry) }),
          logLevel: 'error',
        });
        await writeLambdaAssetPackageJson(codeDirectory(entry));
      }),
    );
    provideRuntimeModules(directory, [projectRoot]);
    return { codeDirectory, remove };
  } catch (error) {
    await remove();
    throw error;
  }
}

interface Pipeline {
  consumer: PipelineConsumer;
  warmUp(): Promise<void>;
  /** Publishes `count` new messages and waits until all are acknowledged; returns the seconds it took. */
  deliver(count: number): Promise<number>;
  /** The poller's SQS calls so far. */
  eventSourceCalls(): EventSourceCalls;
  /** What the consumer function's containers have used so far. */
  consumerUsage(): FunctionUsage;
  /** The CPU time of the publisher's and the consumer's containers so far, whole processes, in ms. */
  functionsCpuMs(): number;
  /**
   * Throws if a message was lost, or applied twice by a consumer with idempotency. The one without
   * may apply a redelivered message again (an event source's receive whose answer was lost, on a
   * saturated machine): that is what idempotency is for, so it must only lose none.
   */
  checkLedger(): Promise<void>;
  stop(): Promise<void>;
}

async function startPipeline(
  endpoints: BenchEndpoints,
  consumer: PipelineConsumer,
  options: ThroughputOptions,
  bundles: Bundles,
): Promise<Pipeline> {
  const sqs = sqsClient(endpoints);
  const dynamodb = dynamoDbClient(endpoints);
  const { queue, dlq } = await createQueueWithDlq(sqs);
  const [idempotencyTable, ledgerTable, publisherTable] = await Promise.all([
    newIdempotencyTable(dynamodb),
    newLedgerTable(dynamodb),
    newIdempotencyTable(dynamodb, 'publisher'),
  ]);
  const runtime = (name: string, entry: string, variables: Record<string, string>) =>
    new LocalFunctionRuntime({
      name,
      arn: localFunctionArn(name),
      codeDirectory: bundles.codeDirectory(entry),
      handler: HANDLER,
      timeoutSeconds: TIMEOUT_SECONDS,
      environment: {
        ...awsEnvironment(endpoints),
        POWERTOOLS_SERVICE_NAME: 'bench',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        POWERTOOLS_METRICS_DISABLED: 'true',
        ...variables,
      },
    });
  const publisher = runtime(`bench-publisher-${consumer}`, PUBLISHER_ENTRY, {
    QUEUE_URL: queue.url,
    IDEMPOTENCY_TABLE_NAME: publisherTable,
  });
  const spec: PipelineConsumerSpec = PIPELINE_CONSUMERS[consumer];
  const consumerFunction = runtime(`bench-${consumer}`, spec.entry, {
    ...spec.variables,
    IDEMPOTENCY_TABLE_NAME: idempotencyTable,
    LEDGER_TABLE_NAME: ledgerTable,
    DLQ_URL: dlq.url,
    // The workload has no notifications: nothing is posted.
    NOTIFICATION_URL: 'http://127.0.0.1:9/unused',
  });
  const acknowledged = new AcknowledgedRecords();
  const eventSourceCalls = countEventSourceCalls(sqs);
  const poller = startEventSourcePoller({
    sqs,
    region: LOCAL_REGION,
    source: {
      logicalId: 'BenchEventSource',
      queue,
      functionName: `bench-${consumer}`,
      batchSize: BATCH_SIZE,
      maximumBatchingWindowInSeconds: 0,
      reportBatchItemFailures: true,
      maxConcurrency: options.maxConcurrency,
      maxConcurrencySet: true,
      filterPatterns: [],
      enabled: true,
    },
    invoke: (event) => consumerFunction.invoke(event),
    onBatch: (report) => acknowledged.add(report),
  });
  let sent = 0;

  const deliver = async (count: number): Promise<number> => {
    const started = performance.now();
    const messages = stockMessages(count, options.groups);
    for (let start = 0; start < messages.length; start += MAX_MESSAGES_PER_REQUEST) {
      const request = {
        requestId: uniqueName('request'),
        messages: messages.slice(start, start + MAX_MESSAGES_PER_REQUEST),
      };
      const outcome = await publisher.invoke(request);
      if (!outcome.ok) throw new Error(`${consumer}: the publisher failed: ${outcome.error.errorMessage}`);
      const unsent = (outcome.result as PublishResponse).results.filter(({ status }) => status !== 'sent');
      if (unsent.length > 0)
        throw new Error(`${consumer}: the publisher did not send ${unsent.length} messages`);
    }
    sent += count;
    await acknowledged.waitFor(sent, `${consumer}'s consumer`);
    return (performance.now() - started) / 1000;
  };

  return {
    consumer,
    // Containers start (Lambda's init phase) and warm up on the first messages, before the clock runs.
    warmUp: async () => {
      await deliver(options.warmupMessages);
    },
    deliver,
    eventSourceCalls: () => ({ ...eventSourceCalls }),
    consumerUsage: () => consumerFunction.usage(),
    functionsCpuMs: () => publisher.processCpuMs() + consumerFunction.processCpuMs(),
    checkLedger: async () => {
      const applied = await sumOfAttribute(dynamodb, ledgerTable, 'available');
      const mayRepeat = consumer === BASELINE_PIPELINE;
      if (mayRepeat ? applied < sent : applied !== sent) {
        throw new Error(`${consumer}: the ledger holds ${applied} units after ${sent} messages of one unit`);
      }
    },
    stop: async () => {
      await poller.stop();
      await Promise.all([publisher.stop(), consumerFunction.stop()]);
      await deleteQueues(sqs, [queue, dlq]);
      sqs.destroy();
      dynamodb.destroy();
    },
  };
}

/**
 * Counts what a poller acknowledged. A failed record or batch would only come back after the
 * visibility timeout, so the first one ends the run with its reason instead of a stall.
 */
class AcknowledgedRecords {
  #count = 0;
  #failure: string | undefined;

  add(report: BatchReport): void {
    this.#count += report.deleted;
    if (report.retained > 0)
      this.#failure ??= report.functionError ?? `${report.retained} records of a batch failed`;
  }

  async waitFor(count: number, what: string): Promise<void> {
    const deadline = Date.now() + DRAIN_TIMEOUT_MS;
    while (this.#count < count) {
      if (this.#failure) throw new Error(`${what} failed: ${this.#failure}`);
      if (Date.now() > deadline) {
        throw new Error(
          `${what} left ${count - this.#count} messages unconsumed after ${DRAIN_TIMEOUT_MS} ms`,
        );
      }
      await sleep(5);
    }
  }
}

/** Counts what the event source poller asks of SQS on its client (nothing else uses it during a round). */
function countEventSourceCalls(sqs: SQSClient): EventSourceCalls {
  const calls: EventSourceCalls = { batches: 0, emptyReceives: 0, deleteBatches: 0, messages: 0 };
  sqs.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'ReceiveMessageCommand') {
        const received = (result.output as ReceiveMessageResult).Messages?.length ?? 0;
        if (received > 0) calls.batches++;
        else calls.emptyReceives++;
        calls.messages += received;
      } else if (context.commandName === 'DeleteMessageBatchCommand') {
        calls.deleteBatches++;
      }
      return result;
    },
    { step: 'initialize', name: 'benchEventSourceCalls' },
  );
  return calls;
}

/** A pipeline's CPU time and SQS calls, added up over its timed rounds. */
class PipelineUsage {
  #cpu: CpuTimes | undefined = { mainThread: 0, otherThreads: 0, functions: 0, watched: 0 };
  readonly #calls: EventSourceCalls = { batches: 0, emptyReceives: 0, deleteBatches: 0, messages: 0 };

  add(cpu: CpuTimes | undefined, before: EventSourceCalls, after: EventSourceCalls): void {
    // One round without figures (no /proc) leaves none for the whole run.
    const sum = (total: CpuTimes, part: 'functions' | 'watched') => {
      const [sofar, more] = [total[part], cpu?.[part]];
      return sofar === undefined || more === undefined ? undefined : sofar + more;
    };
    this.#cpu =
      this.#cpu && cpu
        ? {
            mainThread: this.#cpu.mainThread + cpu.mainThread,
            otherThreads: this.#cpu.otherThreads + cpu.otherThreads,
            functions: sum(this.#cpu, 'functions'),
            watched: sum(this.#cpu, 'watched'),
          }
        : undefined;
    for (const key of Object.keys(this.#calls) as (keyof EventSourceCalls)[]) {
      this.#calls[key] += after[key] - before[key];
    }
  }

  perMessage(messages: number): Pick<Throughput, 'cpuMsPerMessage' | 'eventSource'> {
    const cpu = this.#cpu;
    return {
      cpuMsPerMessage: cpu && {
        mainThread: cpu.mainThread / messages,
        otherThreads: cpu.otherThreads / messages,
        functions: cpu.functions === undefined ? undefined : cpu.functions / messages,
        watched: cpu.watched === undefined ? undefined : cpu.watched / messages,
      },
      eventSource: { ...this.#calls },
    };
  }
}
