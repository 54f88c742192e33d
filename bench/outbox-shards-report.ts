import type { Machine } from '../harness/machine.js';
import { axisTicks } from './latency-chart.js';
import type { FleetRun } from './outbox-fleet.js';
import type { ShardRow, ShardScalingOptions } from './outbox-shards-run.js';

/** How far n shards may carry from n times one shard. */
const LINEAR_TOLERANCE = 0.15;

export interface ShardScalingResult {
  startedAt: Date;
  machine: Machine;
  options: ShardScalingOptions;
  rows: ShardRow[];
  /** The paced passes' rate, a share of the ceiling. */
  pacedShare: number;
  reshard: FleetRun;
  /** The paced pass at the most shards with the construct's default relayParallelization. */
  defaultRelay: { parallelization: number; run: FleetRun };
}

/** n shards' rate as a multiple of one shard's, and how far that is from n. */
function scaling(rows: readonly ShardRow[], row: ShardRow): { times: number; deviation: number } {
  const one = rows[0];
  const perShard = one ? one.closed.perSecond / one.shards : 0;
  const times = perShard > 0 ? row.closed.perSecond / perShard : 0;
  return { times, deviation: Math.abs(times / row.shards - 1) };
}

const allRuns = (result: ShardScalingResult): FleetRun[] => [
  ...result.rows.flatMap((row) => (row.paced ? [row.closed, row.paced] : [row.closed])),
  result.reshard,
];

const mostShards = (rows: readonly ShardRow[]) => Math.max(...rows.map((row) => row.shards));

/** Each criterion with whether it held and the figures behind it. */
export function criteria(result: ShardScalingResult): { name: string; ok: boolean; detail: string }[] {
  const runs = allRuns(result);
  // The relay at the construct's default ParallelizationFactor may lag at the fleet rate, and the
  // sweeper then rightly sends: that run counts for loss and order, not for the sweeper's silence.
  const everyRun = [...runs, result.defaultRelay.run];
  const worst = Math.max(...result.rows.map((row) => scaling(result.rows, row).deviation));
  const most = mostShards(result.rows);
  const sum = (pick: (run: FleetRun) => number, of = runs) => of.reduce((total, run) => total + pick(run), 0);
  return [
    {
      name: `linear within ${LINEAR_TOLERANCE * 100} % to ${most} shards`,
      ok: worst <= LINEAR_TOLERANCE,
      detail: `worst deviation ${(worst * 100).toFixed(1)} %`,
    },
    {
      name: '0 lost',
      ok: sum((run) => run.lost, everyRun) === 0,
      detail: `${sum((run) => run.lost, everyRun)} lost, every run`,
    },
    {
      name: 'every group in order',
      ok: sum((run) => run.outOfOrderGroups, everyRun) === 0,
      detail: `${sum((run) => run.outOfOrderGroups, everyRun)} groups out of order, every run`,
    },
    {
      name: 'the sweeper sent nothing',
      ok: sum((run) => run.swept) === 0,
      detail: `${sum((run) => run.swept)} messages swept, every run but the default ParallelizationFactor's`,
    },
  ];
}

export function failedCriteria(result: ShardScalingResult): string[] {
  return criteria(result)
    .filter((criterion) => !criterion.ok)
    .map((criterion) => criterion.name);
}

const lag = (run: FleetRun) =>
  `${(run.relayLagP50Ms / 1000).toFixed(2)} / ${(run.relayLagP99Ms / 1000).toFixed(2)}`;

export function shardsReport(result: ShardScalingResult): string {
  const { machine, options, rows, reshard } = result;
  const failed = failedCriteria(result);
  const settings = options.settings;
  return [
    `# The outbox past one hot key: 1 → ${mostShards(rows)} shards of the pending index, as a fleet runs it`,
    '',
    `\`npm run bench:outbox\` on ${result.startedAt.toISOString().slice(0, 10)}: ${machine.cpus} CPUs (${machine.cpuModel}), ` +
      `${machine.memoryGiB} GiB, Node ${machine.node}, ${machine.java}; load average ${machine.loadAverage.toFixed(1)} at the end.`,
    '',
    failed.length === 0 ? '**Passed.**' : `**Failed:** ${failed.join('; ')}.`,
    '',
    '| criterion | result | |',
    '| --- | --- | --- |',
    ...criteria(result).map(
      (criterion) => `| ${criterion.name} | ${criterion.ok ? 'ok' : 'FAILED'} | ${criterion.detail} |`,
    ),
    '',
    '![messages a second through the outbox, by shards of the pending index](outbox-shards.svg)',
    '',
    `## Producers as fast as the outbox lets them`,
    '',
    '| shards | msg/s through | ceiling | × one shard | linear deviation | relay lag p50 / p99 (s) | producer transactions throttled | writes given up | swept by the sweeper | lost | groups out of order | committed |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.map((row) => {
      const { times, deviation } = scaling(rows, row);
      const run = row.closed;
      return `| ${row.shards} | ${run.perSecond.toFixed(1)} | ${run.ceiling} | ${times.toFixed(2)} | ${(deviation * 100).toFixed(1)} % | ${lag(run)} | ${run.throttled} | ${run.gaveUp} | ${run.swept} | ${run.lost} | ${run.outOfOrderGroups} | ${run.committed} |`;
    }),
    '',
    ...machineBound(rows),
    `## Producers paced at ${result.pacedShare * 100} % of the ceiling`,
    '',
    '| shards | offered msg/s | msg/s through | producer transactions throttled | writes given up | relay lag p50 / p99 (s) | swept by the sweeper | lost | groups out of order | committed |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...rows.flatMap((row) => {
      const run = row.paced;
      if (!run) return [];
      return [
        `| ${row.shards} | ${(run.ceiling * result.pacedShare).toFixed(1)} | ${run.perSecond.toFixed(1)} | ${run.throttled} | ${run.gaveUp} | ${lag(run)} | ${run.swept} | ${run.lost} | ${run.outOfOrderGroups} | ${run.committed} |`,
      ];
    }),
    '',
    'A throttled transaction here is one whose shard took more than its budget in some second although the average is 75 % of it: the paced writes land on the shards at random and the relay marks SENT in batches, and with ' +
      `${options.unitsPerSecond} units a second a key has little room for a burst (AWS's 1,000 have a hundred times more). The outbox sends each such transaction again (writes given up: 0 means every one committed).`,
    '',
    '## Re-sharding under load: 5 → 20 → 10 shards, a rolling deploy',
    '',
    '| offered msg/s | producer transactions throttled | relay lag p50 / p99 (s) | swept by the sweeper | lost | groups out of order | committed |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    `| ${(reshard.ceiling * result.pacedShare).toFixed(1)} | ${reshard.throttled} | ${lag(reshard)} | ${reshard.swept} | ${reshard.lost} | ${reshard.outOfOrderGroups} | ${reshard.committed} |`,
    '',
    `## The relay's ParallelizationFactor at ${mostShards(rows)} shards, paced`,
    '',
    '| relayParallelization | msg/s through | relay lag p50 / p99 (s) | swept by the sweeper | lost | groups out of order |',
    '| --- | --- | --- | --- | --- | --- |',
    ...[
      {
        parallelization: settings.relayParallelization,
        run: rows.find((row) => row.shards === mostShards(rows))?.paced,
      },
      result.defaultRelay,
    ].flatMap(({ parallelization, run }) =>
      run
        ? [
            `| ${parallelization} | ${run.perSecond.toFixed(1)} | ${lag(run)} | ${run.swept} | ${run.lost} | ${run.outOfOrderGroups} |`,
          ]
        : [],
    ),
    '',
    '## What it ran',
    '',
    `- A fresh outbox table (with its NEW_IMAGE stream) and FIFO queue per run, on DynamoDB Local and the SQS emulator. Every DynamoDB write of the producers, the relay and the sweeper goes through \`harness/budget-proxy.ts\`, which holds each partition-key value of the table and of the pending index to **${options.unitsPerSecond} write units a second** (a bucket of one second's units, refilled at that rate; a request admitted while its key has units left takes them all and owes the rest, which the key pays back before it takes more: over time never more than its budget, issue 40) — AWS's 1,000 a partition scaled down 1:${1000 / options.unitsPerSecond}, so that 20 shards' ceiling (${(options.unitsPerSecond / 2) * 20} msg/s) is within this machine; a shard of the model carries ${options.unitsPerSecond / 2} msg/s where AWS's carries about 500. Why not more: every request of the model goes to one DynamoDB Local, about ten a message (the producer's query and transaction, the relay's query, claim and SENT mark, the proxy's read of each item before a write), and in trials on this machine with other work running it took a core at 20–30 msg/s whatever the budget; at 10 units a key 20 shards would need 100. Below about 3 units a key the model's small numbers dominate (a SENT mark's deletes are more than a second's budget, let through only because the proxy admits a request whole while its key has units left, and then owed).`,
    `- Producers: ${options.groupsPerShard} message groups per shard, spread evenly, each its own loop of one-message \`Outbox.write\`s (\`pendingShards\` = the run's n). "As fast as the outbox lets them" (closed loop): a loop writes again once its last write committed, while fewer than ${options.unsentPerGroup} of its group's messages wait for a send (with 1: once the last was sent). Without that bound the producers take every unit a full shard frees, and the relay's SENT marks (a transaction of up to 10 marker deletes: more than a second's budget in this model) wait for a moment with units left while the backlog grows. A transaction canceled for throttling is sent again by the outbox, a write that stays throttled by the producer. Paced: all loops share a pacer at ${result.pacedShare * 100} % of the ceiling, whatever is sent (open loop).`,
    `- The relay: the sandbox's stream poller (\`startStreamPoller\`) on the table's real DynamoDB Local stream, with the construct's mapping — its filter (\`INSERT\` of a \`PENDING\`-prefixed marker), batch size ${settings.relayBatchSize}, no batching window, ${settings.relayRetryAttempts} retries, ParallelizationFactor ${settings.relayParallelization} (\`relayParallelization\`; the construct's default is 1), TRIM_HORIZON — each invocation \`relayBatch\` in this process with a 60 s Lambda clock. Its lag is from the producer's write resolving to the relay's report of the message sent.`,
    `- The sweeper: \`sweep\` every ${options.sweepIntervalMs / 1000} s (the construct's interval is a minute: shorter, to look harder), with \`oncely local\`'s sweepAfter ${settings.sweepAfter.toSeconds()} s and stuckAfter ${settings.stuckAfter.toSeconds()} s (AWS's defaults are 60 s and 5 min: stricter). Any message it sends first counts as swept.`,
    `- Each run: producers write ${options.seconds} s; msg/s through is the messages first sent in the last ${options.seconds - options.warmSeconds} s of it (the first ${options.warmSeconds} s warm up). Then the producers stop, the relay drains until nothing is pending, and the queue is read whole: every committed message must be on it, each group's in commit order. Each run has a DynamoDB Local of its own, warmed up by an unmeasured 1-shard run of 5 s: with one JVM through every run, each run was slower than the one before (20 shards carried 20.6 msg/s after the others, 33.4 after one).`,
    `- Re-sharding: ${reshard.committed} messages over groups spread evenly over 20 shards, paced at ${result.pacedShare * 100} % of 5 shards' ceiling (so the budget is never the limit); producers at 5 shards, then half of them (a rolling deploy) at 20, all at 20, half at 10, all at 10, each phase a fifth of ${options.seconds} s.`,
    '',
  ].join('\n');
}

/**
 * A closed pass in which no producer transaction was throttled never filled its shards: what held
 * it back was the machine (the relay's and producers' round trips), not the budget.
 */
function machineBound(rows: readonly ShardRow[]): string[] {
  const bound = rows.filter((row) => row.closed.throttled === 0).map((row) => row.shards);
  if (bound.length === 0) return [];
  return [
    `At ${bound.join(', ')} shards no producer transaction was throttled: the shards were never full, so the machine, not the budget, was the limit there.`,
    '',
  ];
}

const WIDTH = 640;
const HEIGHT = 400;
const PLOT = { left: 60, right: 150, top: 50, bottom: 50 };

/**
 * msg/s through against shards (producers as fast as the outbox lets them), with n times one shard
 * (linear) and the budget's ceiling: an SVG written by hand, as the other charts of bench/.
 */
export function shardsChartSvg(rows: readonly ShardRow[]): string {
  const one = rows[0];
  const perShard = one ? one.closed.perSecond / one.shards : 0;
  const maxShards = Math.max(...rows.map((row) => row.shards));
  const ticks = axisTicks(Math.max(...rows.map((row) => Math.max(row.closed.ceiling, row.closed.perSecond))));
  const top = ticks.at(-1) ?? 1;
  const plotWidth = WIDTH - PLOT.left - PLOT.right;
  const plotHeight = HEIGHT - PLOT.top - PLOT.bottom;
  const x = (shards: number) => PLOT.left + (shards / maxShards) * plotWidth;
  const y = (rate: number) => PLOT.top + plotHeight - (rate / top) * plotHeight;
  const line = (label: string, colour: string, rate: (row: ShardRow) => number, index: number, dash = '') =>
    `<polyline fill="none" stroke="${colour}" stroke-width="2"${dash} points="${rows.map((row) => `${x(row.shards).toFixed(1)},${y(rate(row)).toFixed(1)}`).join(' ')}"/>` +
    `<rect x="${WIDTH - PLOT.right + 12}" y="${PLOT.top + index * 18}" width="12" height="3" fill="${colour}"/>` +
    `<text x="${WIDTH - PLOT.right + 30}" y="${PLOT.top + index * 18 + 5}">${label}</text>`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" role="img" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12" fill="#222">`,
    '<title>Messages a second through one outbox, by shards of its pending index</title>',
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="#fff"/>`,
    `<text x="${PLOT.left}" y="24" font-size="15" font-weight="bold">Messages a second through one outbox, by shards</text>`,
    ...ticks.map(
      (rate) =>
        `<line x1="${PLOT.left}" x2="${PLOT.left + plotWidth}" y1="${y(rate)}" y2="${y(rate)}" stroke="#ddd"/>` +
        `<text x="${PLOT.left - 6}" y="${y(rate) + 4}" text-anchor="end">${rate}</text>`,
    ),
    ...rows.map(
      (row) =>
        `<text x="${x(row.shards)}" y="${PLOT.top + plotHeight + 18}" text-anchor="middle">${row.shards}</text>`,
    ),
    `<text x="${PLOT.left + plotWidth / 2}" y="${HEIGHT - 10}" text-anchor="middle">shards of the pending index</text>`,
    line('ceiling', '#c0392b', (row) => row.closed.ceiling, 0, ' stroke-dasharray="6 4"'),
    line('n × one shard', '#7f8c8d', (row) => perShard * row.shards, 1, ' stroke-dasharray="2 3"'),
    line('msg/s through', '#2f7d4a', (row) => row.closed.perSecond, 2),
    ...rows.map(
      (row) => `<circle cx="${x(row.shards)}" cy="${y(row.closed.perSecond)}" r="3.5" fill="#2f7d4a"/>`,
    ),
    '</svg>',
    '',
  ].join('\n');
}
