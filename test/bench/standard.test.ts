import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { BenchEndpoints } from '../../bench/clients.js';
import { IN_FLIGHT_SUBJECTS, measureInFlightDuplicates } from '../../bench/in-flight-duplicates.js';
import { standardQueuesSection } from '../../bench/report.js';
import { QUICK } from '../../bench/settings.js';
import { measureStandardBatches, STANDARD_CONSUMERS } from '../../bench/standard-batches.js';
import { standardTargets } from '../../bench/targets.js';
import { emulatorEndpoint } from '../support/emulator-endpoint.js';

// Section 8 of `npm run bench` in miniature: it runs, and counts what it reports. Its timings are
// the benchmark's to report; only their presence is checked.
describe('the standard-queue benchmarks, in miniature', () => {
  let endpoints: BenchEndpoints;
  beforeAll(() => {
    vi.stubEnv('POWERTOOLS_METRICS_DISABLED', 'true');
    endpoints = { dynamodb: emulatorEndpoint('dynamodbEndpoint'), sqs: emulatorEndpoint('sqsEndpoint') };
  });

  it('times batches of each size, with their requests, units, CPU and cost per record', {
    timeout: 240_000,
  }, async () => {
    const rows = await measureStandardBatches(endpoints, {
      recordCounts: [10, 20],
      batches: 1,
      warmupBatches: 0,
      latencyMs: 0,
    });
    // The design's minimum per first delivery (1 in transactional mode, 3 in lease mode), as on FIFO;
    // Powertools' record, write and completion; a transaction bills its two items twice.
    expect(
      rows.map(({ consumer, records, dynamodbRequestsPerRecord, writeUnitsPerRecord }) => [
        consumer,
        records,
        dynamodbRequestsPerRecord,
        writeUnitsPerRecord,
      ]),
    ).toEqual(
      [10, 20].flatMap((records) => [
        ['transactional', records, 1, 4],
        ['leaseAtLeastOnce', records, 3, 3],
        ['leaseAtMostOnce', records, 3, 3],
        ['powertools', records, 3, 3],
      ]),
    );
    // The request count is judged against the design's minimum; the rest is reported, not judged.
    const [requests, ...reported] = standardTargets({ batches: rows, inFlight: [] });
    expect(requests?.met).toBe(true);
    expect(reported.map(({ met }) => met)).toEqual([undefined, undefined, undefined]);
    for (const { latency, cpuMsPerRecord, cost } of rows) {
      expect(latency.median).toBeGreaterThan(0);
      expect(cpuMsPerRecord).toBeGreaterThanOrEqual(0);
      expect(cost.total).toBeGreaterThan(cost.dynamodbWrites);
    }
  });

  it('settles every in-flight copy, each original applied once, and reports the visibility timeout used', {
    timeout: 240_000,
  }, async () => {
    const inFlight = await measureInFlightDuplicates(endpoints, {
      pairs: 2,
      holdMs: 300,
      inFlightWaitMs: 2_000,
      visibilityTimeoutSeconds: 1,
    });
    expect(
      inFlight.map(({ subject, settle, visibilityTimeoutSeconds }) => [
        subject,
        settle.samples,
        visibilityTimeoutSeconds,
      ]),
    ).toEqual(Object.keys(IN_FLIGHT_SUBJECTS).map((subject) => [subject, 2, 1]));
    const section = standardQueuesSection(
      { batches: [], inFlight },
      {
        ...QUICK,
        standard: {
          ...QUICK.standard,
          inFlight: { ...QUICK.standard.inFlight, visibilityTimeoutSeconds: 1 },
        },
      },
    );
    expect(section).toContain('## 8. Standard queues');
    expect(section).toContain("The queue's visibility timeout: 1 s, set short for this quick run");
    for (const label of [...Object.values(IN_FLIGHT_SUBJECTS), ...Object.values(STANDARD_CONSUMERS)]) {
      expect(section).toContain(label);
    }
  });
});
