import { percentile } from '../harness/statistics.js';
import type { SoakResult } from './soak-run.js';

/** One time bucket of the run: what completed in it, and how long those messages took. */
export interface Bucket {
  /** The bucket's start, in seconds since the producers started. */
  fromSeconds: number;
  completedPerSecond: number;
  /** End-to-end latency of the messages completed in it (first publish to COMPLETED), in ms. */
  p50Ms: number;
  p99Ms: number;
}

/** The run cut into `bucketSeconds` slices of completions: the chart's throughput and latency. */
export function completionBuckets(result: SoakResult, bucketSeconds: number): Bucket[] {
  const slices = new Map<number, number[]>();
  for (const { atSeconds, latencyMs } of result.completions) {
    if (atSeconds < 0) continue;
    const index = Math.floor(atSeconds / bucketSeconds);
    const slice = slices.get(index) ?? [];
    slice.push(latencyMs);
    slices.set(index, slice);
  }
  const last = Math.max(-1, ...slices.keys());
  return Array.from({ length: last + 1 }, (_, index) => {
    const latencies = (slices.get(index) ?? []).sort((a, b) => a - b);
    const empty = latencies.length === 0;
    return {
      fromSeconds: index * bucketSeconds,
      completedPerSecond: latencies.length / bucketSeconds,
      p50Ms: empty ? 0 : percentile(latencies, 50),
      p99Ms: empty ? 0 : percentile(latencies, 99),
    };
  });
}

/** A bucket length that gives the chart about a hundred points. */
export function bucketSecondsFor(result: SoakResult): number {
  return Math.max(5, Math.round(result.totalSeconds / 100 / 5) * 5);
}
