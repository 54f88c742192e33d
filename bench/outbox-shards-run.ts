/**
 * The passes of `npm run bench:outbox` (bench/outbox-shards.ts): a fleet at 1 shard to n, each as fast
 * as the outbox lets it and paced below its ceiling, and a re-sharding run under load. The command
 * and its report (bench/outbox-shards-report.ts) both build on these.
 */

import { type ResolvedOutboxSettings, resolveOutboxSettings } from '../lib/constructs/outbox-settings.js';
import type { BenchEndpoints } from './clients.js';
import { type FleetRun, runFleet } from './outbox-fleet.js';
import { evenGroups } from './outbox-fleet-producers.js';

/** The paced pass's rate: below the ceiling by a margin, so that the budget is never the limit. */
export const PACED_SHARE = 0.75;
/** The re-sharding run: the shard counts a rolling deploy goes through. */
const RESHARD_STEPS = [5, 20, 10] as const;

export interface ShardScalingOptions {
  endpoints: BenchEndpoints;
  /** Each partition-key value's write budget, a second. */
  unitsPerSecond: number;
  /** How long the producers write, per pass; the first `warmSeconds` are left out of the rate. */
  seconds: number;
  warmSeconds: number;
  /** Groups per shard, each written by its own loop: enough that the shard, not a group, is the limit. */
  groupsPerShard: number;
  /**
   * The closed pass's bound on a group's messages waiting for a send: enough in flight over a
   * shard's groups to keep it full through the relay's lag, few enough that a SENT mark stays small.
   */
  unsentPerGroup: number;
  /** How often the sweeper runs: shorter than the construct's minute, so that it looks often. */
  sweepIntervalMs: number;
  settings: ResolvedOutboxSettings;
  /**
   * Starts a DynamoDB Local of its own for each pass, warmed up first, in place of
   * `endpoints.dynamodb`: one JVM through every pass slows down pass after pass (its tables, streams
   * and heap), and a later pass would measure that, not its shards. Without it, passes share one.
   */
  freshDynamoDb?: () => Promise<{ endpoint: string; stop(): Promise<void> }>;
}

export interface ShardRow {
  shards: number;
  closed: FleetRun;
  paced?: FleetRun;
}

/** The construct's settings as `oncely local` resolves them (sweepAfter 10 s, not AWS's 60 s: stricter). */
export function fleetSettings(relayParallelization?: number): ResolvedOutboxSettings {
  return resolveOutboxSettings({ relayParallelization }, { sandbox: true });
}

/** One fleet run at `shards` shards: producers as fast as the outbox lets them, or paced at `share` of the ceiling. */
export function runShards(shards: number, options: ShardScalingOptions, share?: number): Promise<FleetRun> {
  return onItsOwnDynamoDb(options, (on) => runShardsOn(shards, on, share));
}

/** Runs `run` on a DynamoDB Local of its own, warmed up, when the options ask for one (`freshDynamoDb`). */
async function onItsOwnDynamoDb(
  options: ShardScalingOptions,
  run: (options: ShardScalingOptions) => Promise<FleetRun>,
): Promise<FleetRun> {
  if (!options.freshDynamoDb) return run(options);
  const dynamodb = await options.freshDynamoDb();
  try {
    const on = {
      ...options,
      endpoints: { ...options.endpoints, dynamodb: dynamodb.endpoint },
      freshDynamoDb: undefined,
    };
    // Unmeasured: the new JVM and its first tables warm up.
    await runShardsOn(1, { ...on, seconds: WARM_UP_SECONDS });
    return await run(on);
  } finally {
    await dynamodb.stop();
  }
}

/** The unmeasured run that warms a new DynamoDB Local up. */
const WARM_UP_SECONDS = 5;

function runShardsOn(shards: number, options: ShardScalingOptions, share?: number): Promise<FleetRun> {
  const ceiling = (options.unitsPerSecond / 2) * shards;
  return runFleet({
    ...options,
    groups: evenGroups(`g${shards}${share ? 'p' : 'c'}`, shards, options.groupsPerShard),
    load: share
      ? { kind: 'paced', ratePerSecond: ceiling * share }
      : { kind: 'closed', unsentPerGroup: options.unsentPerGroup },
    shardsOf: () => shards,
    shards,
  });
}

/**
 * 5 → 20 → 10 shards while the producers write, paced at 75 % of the smallest count's ceiling (the
 * budget is never the limit, so a throttle or a sweep would be the change's doing). Each change is
 * a rolling deploy: the even producers take it a fifth of the run before the odd ones.
 */
export function runResharding(options: ShardScalingOptions): Promise<FleetRun> {
  return onItsOwnDynamoDb(options, reshardOn);
}

function reshardOn(options: ShardScalingOptions): Promise<FleetRun> {
  const [first, ...changes] = RESHARD_STEPS;
  const stepMs = (options.seconds * 1000) / (2 * changes.length + 1);
  const shardsOf = (index: number, elapsedMs: number) => {
    // Phases: all at the first count, then per change a half-switched phase and a switched one.
    const phase = Math.floor(elapsedMs / stepMs);
    const switched = Math.floor((phase + (index % 2 === 0 ? 1 : 0)) / 2);
    return switched === 0 ? first : (changes[Math.min(switched, changes.length) - 1] as number);
  };
  const most = Math.max(...RESHARD_STEPS);
  return runFleet({
    ...options,
    // Spread evenly over the most shards is spread evenly over each count that divides it.
    groups: evenGroups('reshard', most, Math.ceil((options.groupsPerShard * first) / most)),
    load: { kind: 'paced', ratePerSecond: (options.unitsPerSecond / 2) * first * PACED_SHARE },
    shardsOf,
    shards: first,
  });
}

export async function runShardScaling(
  shardCounts: readonly number[],
  options: ShardScalingOptions,
  passes: { paced: boolean },
): Promise<ShardRow[]> {
  const rows: ShardRow[] = [];
  for (const shards of shardCounts) {
    const closed = await runShards(shards, options);
    const paced = passes.paced ? await runShards(shards, options, PACED_SHARE) : undefined;
    rows.push({ shards, closed, ...(paced && { paced }) });
    console.error(`[outbox-shards] ${shards} shards: ${JSON.stringify({ closed, paced })}`);
  }
  return rows;
}
