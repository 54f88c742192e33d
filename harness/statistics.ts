/** Median and spread of repeated timings, in the samples' unit. */
export interface Spread {
  samples: number;
  median: number;
  p10: number;
  p90: number;
}

export function spreadOf(samples: readonly number[]): Spread {
  if (samples.length === 0) throw new Error('no samples to summarise');
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    median: percentile(sorted, 50),
    p10: percentile(sorted, 10),
    p90: percentile(sorted, 90),
  };
}

/** Linear interpolation between closest ranks, on sorted samples. */
export function percentile(sorted: readonly number[], p: number): number {
  const rank = (p / 100) * (sorted.length - 1);
  const below = Math.floor(rank);
  const lower = sorted[below] as number;
  const upper = sorted[Math.min(below + 1, sorted.length - 1)] as number;
  return lower + (upper - lower) * (rank - below);
}

/** How many times `value` is smaller or larger than `baseline`, as a report shows it: `0.33×`, `4.2×`. */
export function ratio(value: number, baseline: number): string {
  if (baseline === 0) return value === 0 ? '=' : 'n/a';
  const times = value / baseline;
  return `${times >= 10 ? times.toFixed(0) : times >= 1 ? times.toFixed(1) : times.toFixed(2)}×`;
}
