import { percentile, type Spread, spreadOf } from '../harness/statistics.js';
import {
  BATCH_SIZE,
  NOTIFICATION_CONSUMERS,
  type NotificationConsumer,
  timeBatch,
  withNotificationConsumers,
} from './batch-latency.js';
import type { BenchEndpoints } from './clients.js';
import { notificationMessages } from './notification-events.js';
import { rotate } from './rotate.js';

/**
 * The sequential DynamoDB round trips of a 1-group batch of `BATCH_SIZE` SendNotification records,
 * as docs/design.md counts them: at-least-once takes the group's leases together and writes each
 * completion while the next record runs, so about 2 (§4, "A group's lease-mode records are
 * pipelined"); at-most-once takes the leases, then one completion each that starts the next
 * record, so n + 1 (§4.1, "`after` and `startedNext`"); Powertools a lease and a completion per
 * record, 2n.
 */
export const DESIGN_ROUND_TRIPS: Record<NotificationConsumer, number> = {
  leaseAtLeastOnce: 2,
  leaseAtMostOnce: BATCH_SIZE + 1,
  powertools: 2 * BATCH_SIZE,
};

export interface RoundTripOptions {
  /** The latencies added to every DynamoDB request, in ms: at least two, the more apart the better. */
  latenciesMs: readonly number[];
  /** Timed rounds; a round times every consumer once at every latency. */
  batches: number;
  /** Untimed rounds first, so that connections, caches and the JIT are warm. */
  warmupBatches: number;
  onProgress?: (line: string) => void;
}

export interface RoundTrips {
  consumer: NotificationConsumer;
  /**
   * At each added latency: the batch's latency, and the round trip as measured (the median DynamoDB
   * request of every consumer at that point, from the added wait to the answer), in ms.
   */
  points: { latencyMs: number; roundTripMs: number; latency: Spread }[];
  /**
   * The least-squares slope of the points' medians over the measured round trip: how many ms the
   * batch grows per ms a round trip takes, that is its sequential round trips.
   */
  roundTrips: number;
  /**
   * How far that slope moves with the rounds drawn: p10 and p90 of the slope over resamples of the
   * timed rounds (a bootstrap), so that a verdict can tell the noise of this run from a miss.
   */
  interval: { p10: number; p90: number };
}

/**
 * (2) The sequential round trips of a 1-group batch, from the slope of its latency over the latency
 * added to each DynamoDB request. On a shared machine a round trip's CPU (the SDK's client side,
 * DynamoDB Local) adds to each added millisecond, and a ratio of wall times mixes the two; the
 * slope does not: only the round trips on the batch's critical path grow with the added latency.
 * Its abscissa is the round trip measured, not the latency added: here a request after a longer
 * wait also takes a little longer to answer (about 1 ms more per 25 ms added).
 * One client per consumer, whose latency is set before each batch; the latencies and the consumers
 * take turns, batch after batch, so that any drift of the machine falls on every point alike.
 */
export async function measureRoundTrips(
  endpoints: BenchEndpoints,
  options: RoundTripOptions,
): Promise<RoundTrips[]> {
  if (options.latenciesMs.length < 2) throw new Error('a slope needs at least two latencies');
  let latencyMs = 0;
  const rounds = options.warmupBatches + options.batches;
  const consumers = Object.keys(NOTIFICATION_CONSUMERS) as NotificationConsumer[];
  // samples[consumer][point][timed round]
  const samples = new Map(
    consumers.map((consumer) => [consumer, options.latenciesMs.map((): number[] => [])]),
  );
  const requests = options.latenciesMs.map((): number[] => []);
  let timing: number[] | undefined;
  await withNotificationConsumers(
    endpoints,
    () => latencyMs,
    rounds * options.latenciesMs.length,
    async (handlers, clients) => {
      for (const client of Object.values(clients)) {
        client.middlewareStack.add(
          (next) => async (args) => {
            const started = performance.now();
            const output = await next(args);
            timing?.push(performance.now() - started);
            return output;
          },
          // High priority: outside the added wait (normal priority), so that the wait is timed too.
          { step: 'deserialize', name: 'benchRoundTrip', priority: 'high' },
        );
      }
      for (let round = 0; round < rounds; round++) {
        for (const point of rotate([...options.latenciesMs.keys()], round)) {
          latencyMs = options.latenciesMs[point] as number;
          timing = round >= options.warmupBatches ? requests[point] : undefined;
          for (const consumer of rotate(consumers, round)) {
            const elapsed = await timeBatch(handlers[consumer], notificationMessages(BATCH_SIZE, 1));
            if (round >= options.warmupBatches) samples.get(consumer)?.[point]?.push(elapsed);
          }
        }
      }
    },
  );
  const roundTripsMs = requests.map((times) => spreadOf(times).median);
  const rows = consumers.map((consumer) =>
    roundTripsOf(consumer, options.latenciesMs, roundTripsMs, samples.get(consumer) ?? []),
  );
  options.onProgress?.(
    rows.map((row) => `${row.consumer} ${row.roundTrips.toFixed(1)} round trips`).join(', '),
  );
  return rows;
}

function roundTripsOf(
  consumer: NotificationConsumer,
  latenciesMs: readonly number[],
  roundTripsMs: readonly number[],
  samples: readonly (readonly number[])[],
): RoundTrips {
  const points = latenciesMs.map((latencyMs, point) => ({
    latencyMs,
    roundTripMs: roundTripsMs[point] as number,
    latency: spreadOf(samples[point] ?? []),
  }));
  const roundTrips = leastSquaresSlope(
    roundTripsMs,
    points.map((point) => point.latency.median),
  );
  return {
    consumer,
    points,
    roundTrips,
    interval: slopeInterval(roundTripsMs, samples),
  };
}

/** Draws of the timed rounds for the slope's spread. */
export const SLOPE_RESAMPLES = 500;

/**
 * The slope of the medians over `SLOPE_RESAMPLES` draws of the timed rounds with replacement, one draw for
 * every point so that a round's batches stay together: p10 and p90. Seeded: the same samples give
 * the same interval.
 */
export function slopeInterval(
  roundTripsMs: readonly number[],
  samples: readonly (readonly number[])[],
): { p10: number; p90: number } {
  const random = seededRandom(28);
  const rounds = samples[0]?.length ?? 0;
  const slopes: number[] = [];
  for (let resample = 0; resample < SLOPE_RESAMPLES; resample++) {
    const drawn = Array.from({ length: rounds }, () => Math.floor(random() * rounds));
    const medians = samples.map((batches) => spreadOf(drawn.map((round) => batches[round] as number)).median);
    slopes.push(leastSquaresSlope(roundTripsMs, medians));
  }
  slopes.sort((a, b) => a - b);
  return { p10: percentile(slopes, 10), p90: percentile(slopes, 90) };
}

/** Mulberry32: a small seeded generator of uniform numbers in [0, 1). */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), state | 1);
    mixed ^= mixed + Math.imul(mixed ^ (mixed >>> 7), mixed | 61);
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The slope of the line through (x, y) of least squares. Over every point rather than the two outer
 * ones: the middle points' time is then not spent for nothing, and one noisy point weighs less.
 */
export function leastSquaresSlope(xs: readonly number[], ys: readonly number[]): number {
  const mean = (values: readonly number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
  const [meanX, meanY] = [mean(xs), mean(ys)];
  let covariance = 0;
  let variance = 0;
  xs.forEach((x, index) => {
    covariance += (x - meanX) * ((ys[index] as number) - meanY);
    variance += (x - meanX) ** 2;
  });
  return covariance / variance;
}
