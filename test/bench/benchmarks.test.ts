import { beforeAll, describe, expect, it, vi } from 'vitest';
import { measureBatchLatency } from '../../bench/batch-latency.js';
import { COST_MODES, measureBilledUsage } from '../../bench/billed-usage.js';
import { buildBundles, bundleSizes, DEFAULT_FORMAT, WITHOUT_SDK_FORMAT } from '../../bench/bundle-size.js';
import type { BenchEndpoints } from '../../bench/clients.js';
import { costReport } from '../../bench/cost.js';
import { latencyChartSvg } from '../../bench/latency-chart.js';
import { measureOwnCpu, PROFILED_MODES } from '../../bench/own-cpu.js';
import { measurePublisher } from '../../bench/publisher-calls.js';
import { resultsMarkdown } from '../../bench/report.js';
import { measureRequestsPerMessage } from '../../bench/requests-per-message.js';
import { measureRoundTrips } from '../../bench/round-trips.js';
import { QUICK } from '../../bench/settings.js';
import { measureStartUp } from '../../bench/start-up.js';
import { judgeTargets } from '../../bench/targets.js';
import { measureThroughput } from '../../bench/throughput.js';
import { describeMachine } from '../../harness/machine.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

/** The consumer's bundle without the SDK, against Powertools': the 0.25× target (bench/targets.ts), guarded here. */
const CONSUMER_BUNDLE_TARGET = 0.25;

// `npm run bench` in a tiny configuration, so that a broken benchmark fails here rather than on the
// day someone runs it. Timings are only checked to be there: they are the benchmark's to report.
describe('the benchmarks, in miniature', () => {
  let endpoints: BenchEndpoints;
  beforeAll(() => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    endpoints = { dynamodb: emulatorEndpoint('dynamodbEndpoint'), sqs: emulatorEndpoint('sqsEndpoint') };
  });

  it('measure every figure and report them with the targets judged', { timeout: 240_000 }, async () => {
    const requests = await measureRequestsPerMessage(endpoints);
    const latency = await measureBatchLatency(endpoints, {
      groupCounts: [1, 10],
      batches: 1,
      warmupBatches: 0,
      latencyMs: 0,
    });
    const roundTrips = await measureRoundTrips(endpoints, {
      latenciesMs: [1, 2, 3],
      batches: 2,
      warmupBatches: 0,
    });
    // Over 10 groups, as the bench publishes: one message of a group per call still fills each call.
    const publisher = await measurePublisher(endpoints, {
      messages: 25,
      groups: 10,
      rounds: 1,
      latencyMs: 1,
    });
    const built = await buildBundles(process.cwd());
    const builtWithoutSdk = await buildBundles(process.cwd(), WITHOUT_SDK_FORMAT);
    const bundles = bundleSizes(built);
    const bundlesWithoutSdk = bundleSizes(builtWithoutSdk);
    const throughput = await measureThroughput(endpoints, {
      messages: 10,
      rounds: 1,
      groups: 5,
      maxConcurrency: 1,
      // One message warms the pipelines at once: their containers start in parallel.
      warmupMessages: 1,
      projectRoot: process.cwd(),
    });
    const ownCpu = await measureOwnCpu(endpoints, {
      messages: 20,
      warmupMessages: 10,
      groups: 10,
      projectRoot: process.cwd(),
    });
    const startUp = await measureStartUp([...built, ...builtWithoutSdk], {
      runs: 2,
      warmupRuns: 0,
      projectRoot: process.cwd(),
    });
    const usage = await measureBilledUsage(endpoints, {
      groupCounts: [1, 10],
      batches: 1,
      warmupBatches: 0,
      latencyMs: 0,
    });
    const cost = costReport({
      usage,
      publisher,
      eventSources: throughput.map((row) => row.eventSource),
      lambdaMemoryMiB: 512,
    });

    const firstDelivery = (subject: string) =>
      requests.find((row) => row.subject === subject && row.scenario === 'first');
    expect(requests).toHaveLength(16);
    expect(firstDelivery('transactional')).toMatchObject({
      requests: 1,
      operations: { TransactWriteItems: 1 },
    });
    expect(firstDelivery('powertools')).toMatchObject({ requests: 3, writeUnits: 3 });
    // The design's minimum per first delivery; a duplicate costs one request, none when the cache answers.
    const counts = (scenario: string) =>
      ['transactional', 'lease', 'leaseAtMostOnce'].map(
        (subject) => requests.find((row) => row.subject === subject && row.scenario === scenario)?.requests,
      );
    expect(counts('first')).toEqual([1, 3, 3]);
    expect(counts('duplicate')).toEqual([1, 1, 1]);
    expect(counts('cachedDuplicate')).toEqual([0, 0, 0]);
    // The same minimum in the consumers' own batches, each mode profiled with every origin accounted for.
    expect(
      ownCpu.map(({ consumer, messages, requestsPerMessage }) => [consumer, messages, requestsPerMessage]),
    ).toEqual(PROFILED_MODES.map((mode, index) => [mode, 20, [1, 3, 3][index]]));
    for (const { msPerMessage, sampledMsPerMessage } of ownCpu) {
      expect(sampledMsPerMessage).toBeGreaterThan(0);
      expect(Object.values(msPerMessage).every((ms) => ms >= 0)).toBe(true);
    }
    expect(
      latency.map(({ consumer, groups, requestsPerRecord }) => [consumer, groups, requestsPerRecord]),
    ).toEqual([
      ['transactional', 1, 1],
      ['lease', 1, 3],
      ['powertools', 1, 3],
      ['transactional', 10, 1],
      ['lease', 10, 3],
      ['powertools', 10, 3],
    ]);
    expect(latency.every(({ latency: { median } }) => median > 0)).toBe(true);
    // The latency slope's figures are there; their values are the benchmark's to judge.
    expect(
      roundTrips.map(({ consumer, points }) => [consumer, points.map(({ latencyMs }) => latencyMs)]),
    ).toEqual([
      ['leaseAtLeastOnce', [1, 2, 3]],
      ['leaseAtMostOnce', [1, 2, 3]],
      ['powertools', [1, 2, 3]],
    ]);
    for (const { roundTrips: slope, interval, points } of roundTrips) {
      expect(
        [slope, interval.p10, interval.p90, ...points.map(({ roundTripMs }) => roundTripMs)].every(
          Number.isFinite,
        ),
      ).toBe(true);
    }
    expect(
      publisher.map(({ sender, sqsCalls, dynamodbRequests }) => [sender, sqsCalls, dynamodbRequests]),
    ).toEqual([
      ['publisher', 3, 2],
      ['naive', 25, 0],
      ['publisher', 3, 2],
      ['naive', 25, 0],
    ]);
    expect(bundles.map(({ lambda }) => lambda)).toEqual(['oncely', 'publisher', 'powertools']);
    for (const bundle of bundles) {
      expect(bundle.parts.reduce((sum, part) => sum + part.bytes, 0)).toBeLessThanOrEqual(bundle.bytes);
    }
    // The example consumer validates with zod/mini, Powertools' with zod; the publisher with neither.
    const origins = (lambda: string) =>
      bundlesWithoutSdk.find((bundle) => bundle.lambda === lambda)?.parts.map(({ origin }) => origin);
    // As deployed, the SDK is inside; without it, not a byte of it.
    const sdkOrigins = (sizes: typeof bundles) =>
      sizes
        .flatMap(({ parts }) => parts.map(({ origin }) => origin))
        .filter((origin) => origin.startsWith('@aws-sdk/'));
    expect(sdkOrigins(bundles)).toContain('@aws-sdk/client-dynamodb');
    expect(sdkOrigins(bundlesWithoutSdk)).toEqual([]);
    expect(origins('oncely')).toContain('zod');
    expect(origins('powertools')).toContain('zod');
    expect(origins('publisher')).not.toContain('zod');
    expect(
      startUp.bundles.map(({ lambda, format, pairedRatio }) => [lambda, format, pairedRatio !== undefined]),
    ).toEqual([
      ['oncely', DEFAULT_FORMAT, true],
      ['publisher', DEFAULT_FORMAT, true],
      ['powertools', DEFAULT_FORMAT, false],
      ['oncely', WITHOUT_SDK_FORMAT, true],
      ['publisher', WITHOUT_SDK_FORMAT, true],
      ['powertools', WITHOUT_SDK_FORMAT, false],
    ]);
    for (const { bundle, sdkFloor, aboveFloor, sdkPackages } of startUp.bundles) {
      expect(bundle.wallMs.samples).toBe(2);
      expect(bundle.cpuMs.median).toBeGreaterThan(0);
      expect(sdkFloor.cpuMs.median).toBeGreaterThan(0);
      expect(aboveFloor.cpuMs.samples).toBe(2);
      expect(sdkPackages).toContain('@aws-sdk/client-dynamodb');
    }
    // Imported on the first dead-lettered record, not at start.
    expect(startUp.bundles.find(({ lambda }) => lambda === 'oncely')?.sdkPackages).not.toContain(
      '@aws-sdk/client-sqs',
    );
    // Oncely's own layer: each entry point alone, above the SDK it loads (the client's is Lambda's).
    const DYNAMODB_PACKAGES = ['@aws-sdk/client-dynamodb', '@aws-sdk/lib-dynamodb', '@aws-sdk/util-dynamodb'];
    expect(startUp.ownLayers.map(({ layer, sdkPackages }) => [layer, sdkPackages])).toEqual([
      ['consumer', DYNAMODB_PACKAGES],
      ['consumerTelemetry', DYNAMODB_PACKAGES],
      ['client', ['@aws-sdk/client-lambda']],
    ]);
    for (const { module, aboveFloor } of startUp.ownLayers) {
      expect(module.cpuMs.samples).toBe(2);
      expect(aboveFloor.cpuMs.samples).toBe(2);
    }
    expect(startUp.telemetryCostCpuMs.samples).toBe(2);
    expect(throughput.map(({ consumer }) => consumer)).toEqual([
      'idempotencyFree',
      'transactional',
      'leaseAtLeastOnce',
      'leaseAtMostOnce',
      'powertools',
    ]);
    expect(throughput.every(({ messagesPerSecond }) => messagesPerSecond.median > 0)).toBe(true);
    expect(throughput.map(({ pairedRatio }) => pairedRatio !== undefined)).toEqual([
      false,
      true,
      true,
      true,
      true,
    ]);
    // The consumer's own CPU (Linux's /proc), and its containers' heaps.
    for (const { consumerCpuMsPerMessage, consumerHeapBytes } of throughput) {
      expect(consumerCpuMsPerMessage === undefined || consumerCpuMsPerMessage.median >= 0).toBe(true);
      expect(consumerHeapBytes.length).toBeGreaterThan(0);
    }
    // The whole pipeline's CPU counts the function containers, other processes than this one.
    for (const { cpuMsPerMessage } of throughput) {
      if (cpuMsPerMessage) expect(cpuMsPerMessage.functions).toBeGreaterThan(0);
    }
    // Every message is received once and deleted in the batch it came in.
    for (const { eventSource } of throughput) {
      expect(eventSource.messages).toBe(10);
      expect(eventSource.deleteBatches).toBe(eventSource.batches);
    }
    // The quantities the bill is made of, counted: the record's writes are what idempotency adds.
    const firstUsage = (mode: string) => usage.find((row) => row.mode === mode && row.groups === 10);
    expect(usage).toHaveLength(2 * Object.keys(COST_MODES).length);
    expect(firstUsage('transactional')).toMatchObject({
      dynamodbRequestsPerRecord: 1,
      writeUnitsPerRecord: 4,
    });
    expect(firstUsage('powertools')).toMatchObject({ dynamodbRequestsPerRecord: 3, writeUnitsPerRecord: 3 });
    expect(firstUsage('idempotencyFree')).toMatchObject({
      dynamodbRequestsPerRecord: 1,
      writeUnitsPerRecord: 1,
    });
    expect(cost.sqsCalls.sendMessageBatch).toBeCloseTo(3 / 25);
    expect(cost.modes.every((row) => row.cost.total > 0)).toBe(true);

    const targets = judgeTargets({
      requests,
      latency,
      roundTrips,
      publisher,
      bundles,
      bundlesWithoutSdk,
      startUp,
      throughput,
      ownCpu,
      cost,
    });
    expect(targets.map((target) => target.met)).toEqual([
      // Requests per first delivery and per duplicate: exact counts.
      true,
      true,
      expect.any(Boolean),
      // The sequential round trips at-least-once and at-most-once.
      expect.any(Boolean),
      expect.any(Boolean),
      false,
      // The bundles without the SDK (guarded below); then Oncely's own start-up, its telemetry's cost
      // (reported), the example against Powertools, and the format chosen.
      expect.any(Boolean),
      expect.any(Boolean),
      undefined,
      expect.any(Boolean),
      expect.any(Boolean),
      // Oncely's own CPU per message is judged; the end-to-end throughput and the cost are reported.
      expect.any(Boolean),
      undefined,
      undefined,
    ]);
    // The example consumer's bundle without the SDK stays within the 0.25× target: it carries what a
    // DynamoDB consumer runs, not what only a Valkey store, or only LeaseIdempotency.run, needs.
    const withoutSdk = (lambda: string) =>
      bundlesWithoutSdk.find((bundle) => bundle.lambda === lambda)?.bytes ?? 0;
    expect(withoutSdk('oncely') / withoutSdk('powertools')).toBeLessThanOrEqual(CONSUMER_BUNDLE_TARGET);
    const results = {
      settings: QUICK,
      command: 'test',
      startedAt: new Date(),
      seconds: 1,
      machine: describeMachine(),
      loadAverageAtEnd: 0,
      requests,
      latency,
      roundTrips,
      publisher,
      bundles,
      bundlesWithoutSdk,
      throughput,
      ownCpu,
      startUp,
      cost,
      targets,
    };
    const markdown = resultsMarkdown(results, 'chart.svg');
    expect(markdown).toContain('#### Sequential round trips, from the latency slope');
    expect(markdown).toContain("## 5. Throughput: the consumer's CPU per message");
    expect(markdown).toContain("## 5b. Oncely's own CPU per message: each mode profiled");
    expect(markdown).toContain('## 6. Module start-up');
    expect(markdown).toContain('## 7. What a million messages cost');
    expect(latencyChartSvg(latency, 0)).toMatch(/^<svg[\s\S]*<\/svg>\n$/);
  });
});
