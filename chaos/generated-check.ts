import fc from 'fast-check';
import type { FaultProxy } from '../harness/fault-proxy.js';
import { FAULT_KINDS, type FaultKind } from '../harness/faults.js';

/** What every family of generated schedules is run with. */
export interface GeneratedCheckOptions {
  /** Schedules in all, split between the workers. */
  schedules: number;
  /** fast-check's seed: the same seed generates the same schedules. Random by default. */
  seed?: number;
  /** With `seed` and one worker: replays the counterexample fast-check reported at this path. */
  path?: string;
  /** Schedules run side by side, each worker with its own proxies and tables; 2 by default. */
  workers?: number;
  onProgress?: (done: number) => void;
}

/** A worker's own fault proxies (and whatever else it runs schedules with). */
export interface ProxiedWorld {
  readonly dynamodbProxy: FaultProxy;
  readonly sqsProxy: FaultProxy;
  close(): Promise<void>;
}

/** A schedule that broke an invariant, shrunk by fast-check, and how to run it again. */
export interface GeneratedCounterexample<S, V> {
  seed: number;
  path?: string;
  schedule: S;
  violations: V[];
}

export interface GeneratedCheck<S, V> {
  seed: number;
  /** Schedules run and tallied (those of a shrinking are not). */
  done: number;
  faults: Record<FaultKind, number>;
  /** Requests the proxies received, SDK retries included. */
  requests: number;
  durationMs: number;
  counterexample?: GeneratedCounterexample<S, V>;
}

/**
 * Runs generated schedules with fast-check, split between workers that each open their own world.
 * `run` runs one schedule, tallies its figures when told to (not while a failure is being shrunk),
 * and returns what it broke. A failure is shrunk and reported with its seed, path and violations.
 */
export async function checkGenerated<W extends ProxiedWorld, S, V>(
  options: GeneratedCheckOptions & {
    openWorld: () => Promise<W>;
    arbitrary: fc.Arbitrary<S>;
    run: (world: W, schedule: S, tally: boolean) => Promise<V[]>;
  },
): Promise<GeneratedCheck<S, V>> {
  const started = Date.now();
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const workers = Math.max(1, Math.min(options.workers ?? 2, options.schedules));
  const worlds: W[] = [];
  let done = 0;
  let counterexample: GeneratedCounterexample<S, V> | undefined;
  try {
    for (let i = 0; i < workers && options.schedules > 0; i++) worlds.push(await options.openWorld());
    await Promise.all(
      worlds.map(async (world, worker) => {
        const numRuns =
          Math.floor(options.schedules / workers) + (worker < options.schedules % workers ? 1 : 0);
        const workerSeed = seed + worker;
        /** What the last failing run broke: the shrunk schedule's, once fast-check is done. */
        let lastViolations: V[] = [];
        const result = await fc.check(
          fc.asyncProperty(options.arbitrary, async (schedule) => {
            const tally = !counterexample;
            const violations = await options.run(world, schedule, tally);
            if (violations.length > 0) lastViolations = violations;
            if (tally) {
              done++;
              options.onProgress?.(done);
            }
            return violations.length === 0;
          }),
          { numRuns, seed: workerSeed, endOnFailure: false, ...(options.path ? { path: options.path } : {}) },
        );
        if (result.failed && result.counterexample && !counterexample) {
          const [schedule] = result.counterexample;
          counterexample = {
            seed: workerSeed,
            path: result.counterexamplePath ?? undefined,
            schedule,
            violations: lastViolations,
          };
        }
        if (result.failed && !result.counterexample) throw result.errorInstance;
      }),
    );
  } finally {
    await Promise.all(worlds.map((world) => world.close()));
  }
  const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
  let requests = 0;
  for (const world of worlds) {
    for (const proxy of [world.dynamodbProxy, world.sqsProxy]) {
      const stats = proxy.stats();
      for (const kind of FAULT_KINDS) faults[kind] += stats.faults[kind];
      requests += Object.values(stats.requests).reduce((sum, n) => sum + n, 0);
    }
  }
  return { seed, done, faults, requests, durationMs: Date.now() - started, counterexample };
}
