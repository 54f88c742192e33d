/**
 * One run of the tracing benchmark (`bench/tracing/cost.ts` starts it in a fresh process per
 * variant and round): the lease-mode consumer, as (5b) runs it, on this thread against DynamoDB
 * Local, its CPU per message timed and its samples attributed. Prints its figures as JSON.
 */
import type { Profiler } from 'node:inspector';
import { parseArgs } from 'node:util';
import { BATCH_SIZE, QUEUE_ARN, stockTables, timeEvent } from '../batch-latency.js';
import { dynamoDbClient, sqsClient } from '../clients.js';
import { attributeProfiles, type CodeOrigin, profileWhile } from '../cpu-profile.js';
import { cpuTimes } from '../cpu-time.js';
import { silentTelemetry } from '../invocation.js';
import { createFifoQueue, deleteQueues } from '../resources.js';
import { fifoEvent, stockMessages } from '../stock-events.js';
import { TRACING_VARIANTS, type TracingVariant, type VariantRun } from './variants.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
process.env.POWERTOOLS_METRICS_DISABLED = 'true';

const { values } = parseArgs({
  options: {
    variant: { type: 'string' },
    dynamodb: { type: 'string' },
    sqs: { type: 'string' },
    messages: { type: 'string' },
    'project-root': { type: 'string' },
  },
});
const variant = values.variant as TracingVariant;
if (!TRACING_VARIANTS.includes(variant)) throw new Error(`--variant must be one of ${TRACING_VARIANTS}`);
const messages = Number(values.messages);
const endpoints = { dynamodb: String(values.dynamodb), sqs: String(values.sqs) };
const SAMPLING_INTERVAL_US = 200;

/** Spans the SDK was handed, counted and dropped: what an exporter costs is not Oncely's. */
let spansEnded = 0;
if (variant === 'sdk') {
  const { context, propagation, trace } = await import('@opentelemetry/api');
  const { AsyncLocalStorageContextManager } = await import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = await import('@opentelemetry/core');
  const { BasicTracerProvider, BatchSpanProcessor } = await import('@opentelemetry/sdk-trace-base');
  const exporter = {
    export: (spans: unknown[], done: (result: { code: number }) => void) => {
      spansEnded += spans.length;
      done({ code: 0 });
    },
    shutdown: async () => undefined,
  };
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(
    new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(exporter)] }),
  );
}
// After the SDK: the consumer's first batch loads the API, as a function's init does after the layer's.
const { createLeaseConsumerHandler } = await import('../consumers/lease-consumer.js');

const client = dynamoDbClient(endpoints);
const sqs = sqsClient(endpoints);
const dlq = await createFifoQueue(sqs, {});
try {
  const tables = await stockTables(client);
  const handler = createLeaseConsumerHandler({
    ...tables,
    mode: 'at-least-once',
    dynamodb: client,
    sqs,
    dlqUrl: dlq.url,
    ...silentTelemetry(),
  });
  const batches = (count: number) =>
    Array.from({ length: Math.ceil(count / BATCH_SIZE) }, () =>
      fifoEvent(stockMessages(BATCH_SIZE, BATCH_SIZE), QUEUE_ARN),
    );
  const deliver = async (events: ReturnType<typeof batches>) => {
    for (const event of events) await timeEvent(handler, event);
  };
  await deliver(batches(200));
  const [timed, profiled] = [batches(messages), batches(messages)];
  const before = cpuTimes()?.mainThread;
  await deliver(timed);
  const after = cpuTimes()?.mainThread;
  const profiles: Profiler.Profile[] = [
    (await profileWhile(SAMPLING_INTERVAL_US, () => deliver(profiled))).profile,
  ];
  const delivered = timed.length * BATCH_SIZE;
  const { samples, busyMs } = attributeProfiles(profiles, String(values['project-root']), 'oncely', 0);
  const busySamples = Object.values(samples).reduce((sum, count) => sum + count, 0);
  const cpuMsPerMessage =
    before === undefined || after === undefined ? busyMs / delivered : (after - before) / delivered;
  const share = (origin: CodeOrigin) => (samples[origin] / busySamples) * cpuMsPerMessage;
  if (variant === 'sdk') {
    const { trace } = await import('@opentelemetry/api');
    await (trace.getTracerProvider() as unknown as { getDelegate(): { forceFlush(): Promise<void> } })
      .getDelegate()
      .forceFlush();
  }
  const result: VariantRun = {
    variant,
    messages: delivered,
    cpuMsPerMessage,
    ownMsPerMessage: share('oncely'),
    librariesMsPerMessage: share('libraries'),
    spansPerMessage: spansEnded / ((200 / BATCH_SIZE + timed.length + profiled.length) * BATCH_SIZE),
  };
  process.stdout.write(JSON.stringify(result));
} finally {
  await deleteQueues(sqs, [dlq]);
  sqs.destroy();
  client.destroy();
}
