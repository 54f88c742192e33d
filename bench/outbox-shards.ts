/**
 * The outbox's pending index under a per-key write budget, 1 shard to n, as a fleet runs it (issue 33
 * items 3, 4): producers through `Outbox`, the relay on the table's stream, the sweeper on its
 * schedule, all through `harness/budget-proxy.ts` in front of DynamoDB Local, which holds every
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
import { describeMachine } from '../harness/machine.js';
import { failedCriteria, shardsChartSvg, shardsReport } from './outbox-shards-report.js';
import {
  fleetSettings,
  PACED_SHARE,
  runResharding,
  runShardScaling,
  runShards,
  type ShardScalingOptions,
} from './outbox-shards-run.js';

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
