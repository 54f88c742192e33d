/**
 * The outbox's pending index under a per-key write budget, 1 shard to n, as a fleet runs it (issue 33
 * items 3, 4): producers through `Outbox`, the relay on the table's stream, the sweeper on its
 * schedule, all through `chaos/budget-proxy.ts` in front of DynamoDB Local, which holds every
 * partition-key value (of the table and of the pending index) to `unitsPerSecond` write units a
 * second over time, as AWS holds a partition to 1,000. A message writes its shard twice (its marker's
 * put by the producer, its delete by the relay's SENT mark), so a shard carries `unitsPerSecond ÷ 2`
 * messages a second and n shards n times it. Per shard count, two passes: producers as fast as the
 * outbox lets them (the rate, against the ceiling), then paced at 75 % of the ceiling (throttling
 * and the relay's lag below it); then one re-sharding run, 5 → 20 → 10 shards under load.
 *
 * `npm run bench:outbox` (or `npx tsx bench/outbox-shards.ts [--shards 1,2,5,10,20] [--units 4]
 * [--seconds 25] [--no-write]`) writes bench/OUTBOX-SHARDS.md and bench/outbox-shards.svg, and exits 1
 * when a criterion fails. It needs the machine to itself.
 */

import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { type ResolvedOutboxSettings, resolveOutboxSettings } from '../lib/constructs/outbox-settings.js';
import type { BenchEndpoints } from './clients.js';
import { describeMachine } from './machine.js';
import { type FleetRun, runFleet } from './outbox-fleet.js';
import { evenGroups } from './outbox-fleet-producers.js';
import { failedCriteria, shardsChartSvg, shardsReport } from './outbox-shards-report.js';

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

if (import.meta.url === `file://${process.argv[1]}`) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      shards: { type: 'string', default: '1,2,5,10,20' },
      units: { type: 'string', default: '4' },
      seconds: { type: 'string', default: '25' },
      'groups-per-shard': { type: 'string', default: '5' },
      'unsent-per-group': { type: 'string', default: '1' },
      'sweep-interval': { type: 'string', default: '5' },
      parallelization: { type: 'string', default: '10' },
      'no-write': { type: 'boolean', default: false },
    },
  });
  const { startDynamoDbLocal } = await import('../sandbox/dynamodb-local.js');
  const { startSqsEmulator } = await import('../sandbox/sqs-emulator.js');
  const sqsEmulator = await startSqsEmulator();
  const startedAt = new Date();
  try {
    const options: ShardScalingOptions = {
      // Each pass starts a DynamoDB Local of its own (freshDynamoDb), so none is shared.
      endpoints: { dynamodb: 'http://unused.invalid', sqs: sqsEmulator.endpoint },
      unitsPerSecond: Number(values.units),
      seconds: Number(values.seconds),
      warmSeconds: 3,
      groupsPerShard: Number(values['groups-per-shard']),
      unsentPerGroup: Number(values['unsent-per-group']),
      sweepIntervalMs: Number(values['sweep-interval']) * 1000,
      settings: fleetSettings(Number(values.parallelization)),
      freshDynamoDb: async () => {
        const local = await startDynamoDbLocal();
        return { endpoint: local.endpoint, stop: () => local.stop() };
      },
    };
    const rows = await runShardScaling(String(values.shards).split(',').map(Number), options, {
      paced: true,
    });
    const reshard = await runResharding(options);
    // The paced pass at the most shards again, with the construct's default ParallelizationFactor.
    const most = Math.max(...rows.map((row) => row.shards));
    const defaultRelay = {
      parallelization: fleetSettings().relayParallelization,
      run: await runShards(most, { ...options, settings: fleetSettings() }, PACED_SHARE),
    };
    const machine = describeMachine();
    const result = { startedAt, machine, options, rows, pacedShare: PACED_SHARE, reshard, defaultRelay };
    const report = shardsReport(result);
    console.log(report);
    if (!values['no-write']) {
      writeFileSync(new URL('./OUTBOX-SHARDS.md', import.meta.url), report);
      writeFileSync(new URL('./outbox-shards.svg', import.meta.url), shardsChartSvg(rows));
    }
    if (failedCriteria(result).length > 0) process.exitCode = 1;
  } finally {
    await sqsEmulator.stop();
  }
}
