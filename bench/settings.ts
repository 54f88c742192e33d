import type { InFlightOptions } from './in-flight-duplicates.js';
import { TYPICAL_LATENCY } from './valkey-latency.js';
import type { ValkeyComparisonOptions } from './valkey-vs-dynamodb.js';

/** How much of everything a run measures. */
export interface BenchSettings {
  mode: 'full' | 'quick';
  /** Added to every DynamoDB request in (2), and to every request in (3)'s second measurement. */
  latencyMs: number;
  batchLatency: { groupCounts: number[]; batches: number; warmupBatches: number };
  /** (2): the 1-group batch's sequential round trips, from its latency at each of `latenciesMs`. */
  roundTrips: { latenciesMs: number[]; batches: number; warmupBatches: number };
  publisher: { messages: number; groups: number; rounds: number };
  throughput: {
    messages: number;
    rounds: number;
    groups: number;
    maxConcurrency: number;
    warmupMessages: number;
  };
  /**
   * (5b): first deliveries profiled per mode, as many again timed unprofiled, after warm-up ones; in
   * batches of 10 over `groups` groups.
   */
  ownCpu: { messages: number; warmupMessages: number; groups: number };
  /** (6): fresh Node processes importing each bundle, and the AWS SDK it imports alone. */
  startUp: { runs: number; warmupRuns: number };
  /**
   * (5c): rounds of a fresh process per tracing variant, the messages each times (as many again
   * profiled), and the loads of each of the consumer's two bundles.
   */
  tracing: { rounds: number; messages: number; startUpRuns: number };
  /** (7): batches of first deliveries per way of consuming, whose units and durations are billed. */
  cost: { groupCounts: number[]; batches: number; warmupBatches: number };
  /** (8): standard queues' batches of each size, and the in-flight duplicates (in-flight-duplicates.ts). */
  standard: {
    recordCounts: number[];
    batches: number;
    warmupBatches: number;
    /** At most this many timed records per cell: fewer batches of 1,000 (standard-batches.ts, `batchesOf`). */
    maxTimedRecords?: number;
    inFlight: InFlightOptions;
  };
  /** (9): the Valkey store against the DynamoDB store (valkey-vs-dynamodb.ts). */
  valkey: Omit<ValkeyComparisonOptions, 'onProgress'>;
}

const GROUP_COUNTS = [1, 2, 5, 10];
const LATENCY_MS = 5;
/** (2)'s slope: points around an AWS round trip within a region, far enough apart for a steady slope. */
const ROUND_TRIP_LATENCIES_MS = [2, 5, 10];
const STANDARD_RECORD_COUNTS = [10, 100, 1_000];
/** (8): the original's effect takes this long, and the waiting consumer may wait this long for it. */
const IN_FLIGHT_HOLD_MS = 1_000;
const IN_FLIGHT_WAIT_MS = 5_000;
/** (9): the same latencies on both stores, far enough apart for a steady slope; then each its typical one. */
const VALKEY_SAME_LATENCIES_MS = [0, 2, 5, 10];
const TYPICAL_LATENCY_MS = { valkey: TYPICAL_LATENCY.valkey.ms, dynamodb: TYPICAL_LATENCY.dynamodb.ms };

export const FULL: BenchSettings = {
  mode: 'full',
  latencyMs: LATENCY_MS,
  batchLatency: { groupCounts: GROUP_COUNTS, batches: 100, warmupBatches: 20 },
  // About 1 s a round (the 10 ms point the most): 70 s on 2 idle CPUs, 90 s shared with other work.
  roundTrips: { latenciesMs: ROUND_TRIP_LATENCIES_MS, batches: 60, warmupBatches: 10 },
  publisher: { messages: 1_000, groups: 10, rounds: 3 },
  // maxConcurrency 10 is the stack's default for the consumer's event source, as the sandbox runs it.
  throughput: { messages: 600, rounds: 5, groups: 50, maxConcurrency: 10, warmupMessages: 200 },
  // About 10 s per mode on 2 CPUs; 0.15 ms of 600 messages is some 450 samples.
  ownCpu: { messages: 600, warmupMessages: 200, groups: 10 },
  startUp: { runs: 30, warmupRuns: 2 },
  // About 16 s a process on 2 CPUs: 4 variants × 7 rounds, some 8 minutes.
  tracing: { rounds: 7, messages: 1_500, startUpRuns: 30 },
  // The extremes of (2): one group, whose records run in turn, and ten, which run at once.
  cost: { groupCounts: [1, 10], batches: 30, warmupBatches: 5 },
  // The event source's default batch and ones of 100 and 1,000 (a batching window; 5 timed batches
  // of it, 5,000 records): about 5 minutes on 2 idle CPUs, far longer shared. Powertools' copy waits for the construct's visibility timeout of a standard pipeline
  // (6 × 30 s), the three consumers' pairs all at once: about 3 minutes.
  standard: {
    recordCounts: STANDARD_RECORD_COUNTS,
    batches: 30,
    warmupBatches: 5,
    maxTimedRecords: 5_000,
    inFlight: { pairs: 10, holdMs: IN_FLIGHT_HOLD_MS, inFlightWaitMs: IN_FLIGHT_WAIT_MS },
  },
  // About 1 s a round (DynamoDB's 10 ms group the most) and 40 s of CPU rounds: 3 minutes on 2 CPUs.
  valkey: {
    sameLatenciesMs: VALKEY_SAME_LATENCIES_MS,
    typicalLatencyMs: TYPICAL_LATENCY_MS,
    batches: 100,
    warmupBatches: 10,
    cpu: { rounds: 10, batchesPerRound: 20, warmupBatches: 10 },
  },
};

/** A small version that finishes in well under a minute: indicative figures, the same code paths. */
export const QUICK: BenchSettings = {
  mode: 'quick',
  latencyMs: LATENCY_MS,
  batchLatency: { groupCounts: GROUP_COUNTS, batches: 5, warmupBatches: 3 },
  roundTrips: { latenciesMs: ROUND_TRIP_LATENCIES_MS, batches: 3, warmupBatches: 1 },
  publisher: { messages: 200, groups: 10, rounds: 1 },
  // Enough messages that the pipeline's CPU read in 10 ms clock ticks (this process's, DynamoDB
  // Local's) comes to 0.05 ms per message.
  throughput: { messages: 200, rounds: 2, groups: 50, maxConcurrency: 2, warmupMessages: 30 },
  ownCpu: { messages: 100, warmupMessages: 50, groups: 10 },
  startUp: { runs: 8, warmupRuns: 1 },
  tracing: { rounds: 2, messages: 300, startUpRuns: 6 },
  cost: { groupCounts: [1, 10], batches: 3, warmupBatches: 1 },
  // A 3 s visibility timeout, not the construct's 180 s, so that Powertools' copy is back in seconds.
  standard: {
    recordCounts: STANDARD_RECORD_COUNTS,
    batches: 2,
    warmupBatches: 1,
    inFlight: {
      pairs: 3,
      holdMs: IN_FLIGHT_HOLD_MS,
      inFlightWaitMs: IN_FLIGHT_WAIT_MS,
      visibilityTimeoutSeconds: 3,
    },
  },
  valkey: {
    sameLatenciesMs: VALKEY_SAME_LATENCIES_MS,
    typicalLatencyMs: TYPICAL_LATENCY_MS,
    batches: 5,
    warmupBatches: 2,
    cpu: { rounds: 2, batchesPerRound: 3, warmupBatches: 2 },
  },
};
