import type { Machine } from '../harness/machine.js';
import type { Spread } from '../harness/statistics.js';
import { PRICES } from './cost.js';
import {
  breakEven,
  type CostAssumptions,
  type DynamoDbUsage,
  dynamodbMonthlyCost,
  ecpusPerScript,
  longestBreakEvenRecordHours,
  type MonthlyCost,
  VALKEY_DEPLOYMENT,
  VALKEY_PRICES,
  type ValkeyUsage,
  valkeyMonthlyCost,
} from './valkey-cost.js';
import { TYPICAL_LATENCY } from './valkey-latency.js';
import {
  BASELINE_VALUE_BYTES,
  DESIGN_REQUESTS_PER_MESSAGE,
  STORES,
  type StoreKind,
  type StoreWorkload,
  type ValkeyComparison,
  type ValkeyComparisonOptions,
  WORKLOADS,
  type Workload,
} from './valkey-vs-dynamodb.js';

/** The section's heading: a run of it alone replaces the section of this name in bench/RESULTS.md. */
export const VALKEY_HEADING = '## 9. Lease records in Valkey against DynamoDB';

/** Where a section of its own was measured, when it was not measured with the whole run. */
export interface SectionProvenance {
  command: string;
  startedAt: Date;
  seconds: number;
  machine: Machine;
  loadAverageAtEnd: number;
}

export interface ValkeySectionInput {
  comparison: ValkeyComparison;
  options: Omit<ValkeyComparisonOptions, 'onProgress'>;
  /** The record lifetime storage is billed for, and the consumer's memory: the construct's defaults. */
  assumptions: CostAssumptions;
  /** A run of this section alone says where and when; in a whole run the top of the file does. */
  provenance?: SectionProvenance;
}

/** Messages a month at which the cost table is shown. */
const RATES = [1e6, 1e7, 1e8] as const;

/** (9): the Valkey store against the DynamoDB store, measured side by side in one run. */
export function valkeySection(input: ValkeySectionInput): string {
  const { comparison, options, assumptions, provenance } = input;
  const row = (store: StoreKind, workload: Workload) =>
    comparison.rows.find((r) => r.store === store && r.workload === workload) as StoreWorkload;
  const workloads = Object.keys(WORKLOADS) as Workload[];
  const stores = Object.keys(STORES) as StoreKind[];
  const typical = options.typicalLatencyMs;
  const same = [...options.sameLatenciesMs].sort((a, b) => a - b);
  const usage = workloads.map((workload) => ({
    workload,
    ...storeUsage(row('valkey', workload), row('dynamodb', workload), comparison, typical),
  }));
  const lines = [
    VALKEY_HEADING,
    '',
    ...(provenance ? [provenanceLine(provenance, comparison.serverVersion), ''] : []),
    'The lease-mode consumer (`fifoBatch`, `bench/consumers/lease-consumer.ts`) with its records in Valkey ' +
      `(\`ValkeyIdempotencyStore\` on an \`iovalkey\` client of a local redis-server ${comparison.serverVersion}, ` +
      'docs/design.md §3.1) and in DynamoDB (`DynamoDBIdempotencyStore` on DynamoDB Local), invoked directly with ' +
      'the event Lambda delivers, in the same run. Two batches of 10 SendNotification first deliveries, whose ' +
      'effect is one POST to a loopback gateway (no store request), so that a batch takes its records’ round ' +
      `trips: ${workloads.map((w) => `**${WORKLOADS[w].title}**`).join(' and ')}. Every store request waits a ` +
      "fixed latency before it is sent, in this process: the DynamoDB client's by (2)'s SDK middleware " +
      "(`addLatency`, bench/clients.ts), the Valkey client's by a wrapper that waits the same way before each " +
      '`EVALSHA` or `EVAL` (`scriptTraffic`, bench/valkey-vs-dynamodb.ts). Both stores get the same added ' +
      `latencies (${same.map((ms) => `${ms} ms`).join(', ')}), then each its typical one. ` +
      `${options.batches} timed rounds after ${options.warmupBatches} untimed ones; a round times every consumer ` +
      'once at every latency, the latencies and the consumers taking turns batch after batch. Median and p95 ' +
      'in ms.',
    '',
    '### Store requests per message',
    '',
    `Counted on each consumer's client over the timed batches; the server's own count of scripts over the ` +
      `same batches (\`INFO commandstats\`): ${comparison.serverScripts.server} against the clients' ` +
      `${comparison.serverScripts.client}. The design's count: ${DESIGN_REQUESTS_PER_MESSAGE} per first delivery ` +
      'on either store, the acquire and the completion, each one request (§3: a conditional PutItem, then an ' +
      'UpdateItem; §3.1: one script each); at-most-once, the completion also starts the next record (§4.1).',
    '',
    table(
      ['batch', 'store', 'per message', 'per batch', 'design'],
      workloads.flatMap((workload) =>
        stores.map((store) => {
          const measured = row(store, workload);
          return [
            WORKLOADS[workload].title,
            STORES[store],
            `${measured.requestsPerMessage.toFixed(2)}: ${operations(measured.operationsPerMessage)}`,
            (measured.requestsPerMessage * 10).toFixed(1),
            String(DESIGN_REQUESTS_PER_MESSAGE),
          ];
        }),
      ),
    ),
    '',
    '### Batch latency at the same added latency',
    '',
    "Each added millisecond adds a millisecond per round trip on the batch's critical path, so the slope of " +
      "the median over the added latency counts them, whatever the emulator's speed (p10–p90 of the slope over " +
      'resampled rounds, as (2d)). Beside it, the slope over the request as measured, from the added wait to ' +
      "the answer ((2d)'s abscissa, the table below): on a busy machine a longer wait also ends later than asked " +
      '(a timer fires late), which the measured request holds and the added latency does not; for DynamoDB it ' +
      'also holds DynamoDB Local answering the requests sent together one after another. The ratio divides ' +
      'Valkey’s median by DynamoDB’s at the same latency. At 0 ms the batch is what its work costs this ' +
      'machine: the clients, the emulator or the server, the POSTs.',
    '',
    table(
      [
        'batch',
        'store',
        ...same.map((ms) => `+${ms} ms`),
        'round trips: slope over the added latency',
        'p10–p90',
        'over the measured request',
        'design',
      ],
      workloads.flatMap((workload) => [
        ...stores.map((store) => {
          const measured = row(store, workload);
          return [
            WORKLOADS[workload].title,
            STORES[store],
            ...same.map((ms) => pointText(measured, ms)),
            `**${measured.roundTrips.toFixed(1)}**`,
            `${measured.roundTripsInterval.p10.toFixed(1)}–${measured.roundTripsInterval.p90.toFixed(1)}`,
            measured.roundTripsOverRequest.toFixed(1),
            String(WORKLOADS[workload].designRoundTrips),
          ];
        }),
        [
          WORKLOADS[workload].title,
          'Valkey / DynamoDB',
          ...same.map((ms) =>
            timesText(median(row('valkey', workload), ms) / median(row('dynamodb', workload), ms)),
          ),
          timesText(row('valkey', workload).roundTrips / row('dynamodb', workload).roundTrips),
          '',
          '',
          '',
        ],
      ]),
    ),
    '',
    'A request of each consumer, from the added wait to the answer (median, ms):',
    '',
    table(
      ['batch', 'store', ...same.map((ms) => `+${ms} ms`)],
      workloads.flatMap((workload) =>
        stores.map((store) => [
          WORKLOADS[workload].title,
          STORES[store],
          ...same.map((ms) => {
            const point = row(store, workload).points.find((p) => p.latencyMs === ms);
            return point ? point.roundTripMs.toFixed(2) : '–';
          }),
        ]),
      ),
    ),
    '',
    boundText(workloads.map((workload) => row('valkey', workload))),
    '',
    '### At each store’s typical latency',
    '',
    `Valkey at +${typical.valkey} ms, DynamoDB at +${typical.dynamodb} ms per request: ` +
      `${TYPICAL_LATENCY.dynamodb.says}; ${TYPICAL_LATENCY.valkey.says}. ` +
      `Sources: ${[...TYPICAL_LATENCY.dynamodb.sources, ...TYPICAL_LATENCY.valkey.sources].join(', ')}. ` +
      `${typical.dynamodb} ms is the middle of "single-digit", and what (2) adds; ${typical.valkey} ms the top ` +
      'of "sub-millisecond" (a Lambda reaching the serverless cache’s endpoint, perhaps in another zone), and ' +
      "the shortest wait Node's timers can hold: Valkey's figure is not its best. The bound is the design's " +
      'round trips times the added latency: what no code could take less than.',
    '',
    table(
      [
        'batch',
        `Valkey, +${typical.valkey} ms`,
        `DynamoDB, +${typical.dynamodb} ms`,
        'Valkey / DynamoDB',
        'bounds',
      ],
      workloads.map((workload) => {
        const [valkey, dynamodb] = [row('valkey', workload), row('dynamodb', workload)];
        const rounds = WORKLOADS[workload].designRoundTrips;
        return [
          WORKLOADS[workload].title,
          pointText(valkey, typical.valkey),
          pointText(dynamodb, typical.dynamodb),
          `**${timesText(median(valkey, typical.valkey) / median(dynamodb, typical.dynamodb))}**`,
          `${rounds} × ${typical.valkey} = ${rounds * typical.valkey} ms; ${rounds} × ${typical.dynamodb} = ${rounds * typical.dynamodb} ms`,
        ];
      }),
    ),
    '',
    '### CPU per message',
    '',
    `The consumer's thread's CPU per message, no latency added (Linux's /proc, in ns), as (5b) times it: ` +
      `${options.cpu.rounds} rounds, each delivering ${options.cpu.batchesPerRound} batches to every consumer in ` +
      `turn, after ${options.cpu.warmupBatches} untimed ones each; median (p10–p90) over the rounds. It is what ` +
      'Lambda bills of the consumer: the client of each store (iovalkey, or the AWS SDK with its HTTP and JSON), ' +
      'Oncely, Middy and the POST. The servers run apart (redis-server; DynamoDB Local’s JVM) and are left out.',
    '',
    table(
      ['batch', 'Valkey', 'DynamoDB', 'Valkey / DynamoDB'],
      workloads.map((workload) => {
        const [valkey, dynamodb] = [row('valkey', workload), row('dynamodb', workload)];
        return [
          WORKLOADS[workload].title,
          msSpread(valkey.cpuMsPerMessage),
          msSpread(dynamodb.cpuMsPerMessage),
          `**${timesText(valkey.cpuMsPerMessage.median / dynamodb.cpuMsPerMessage.median)}**`,
        ];
      }),
    ),
    '',
    ...costText(usage, comparison, assumptions),
  ];
  return `${lines.join('\n')}\n`;
}

interface WorkloadUsage {
  workload: Workload;
  valkey: ValkeyUsage;
  dynamodb: DynamoDbUsage;
  /** ECPUs per message if a script's vCPU time were its time running on the server alone. */
  ecpusUpperBound: number;
  ecpusPerScript: number;
  bytesPerScript: number;
  scriptServerCpuMicros: number;
  scriptMicros: number;
}

/** What a message uses in each store, from the run: its requests, its record's bytes, its batch's Lambda time. */
function storeUsage(
  valkey: StoreWorkload,
  dynamodb: StoreWorkload,
  comparison: ValkeyComparison,
  typical: Readonly<Record<StoreKind, number>>,
): Omit<WorkloadUsage, 'workload'> {
  const lambdaMsPerMessage = (measured: StoreWorkload, ms: number) => Math.ceil(median(measured, ms)) / 10;
  const bytesPerScript = valkey.bytesPerScript ?? 0;
  const scriptServerCpuMicros = valkey.scriptServerCpuMicros ?? 0;
  const scriptMicros = valkey.scriptMicros ?? 0;
  const perScript = ecpusPerScript({
    bytes: bytesPerScript,
    serverCpuMicros: scriptServerCpuMicros,
    baselineCpuMicros: comparison.set.serverCpuMicros,
  });
  const upperBound = ecpusPerScript({
    bytes: bytesPerScript,
    serverCpuMicros: scriptMicros,
    baselineCpuMicros: comparison.set.micros,
  });
  return {
    valkey: {
      ecpus: perScript * valkey.requestsPerMessage,
      storedBytesPerRecord: valkey.storedBytesPerRecord,
      lambdaMsPerMessage: lambdaMsPerMessage(valkey, typical.valkey),
    },
    dynamodb: {
      writeUnits: dynamodb.writeUnitsPerMessage ?? 0,
      readUnits: dynamodb.operationsPerMessage.GetItem ?? 0,
      storedBytesPerRecord: dynamodb.storedBytesPerRecord,
      lambdaMsPerMessage: lambdaMsPerMessage(dynamodb, typical.dynamodb),
    },
    ecpusUpperBound: upperBound * valkey.requestsPerMessage,
    ecpusPerScript: perScript,
    bytesPerScript,
    scriptServerCpuMicros,
    scriptMicros,
  };
}

function costText(
  usage: readonly WorkloadUsage[],
  comparison: ValkeyComparison,
  assumptions: CostAssumptions,
): string[] {
  const prices = VALKEY_PRICES;
  const days = assumptions.recordHours / 24;
  const endpoints = VALKEY_DEPLOYMENT.interfaceEndpoints * VALKEY_DEPLOYMENT.availabilityZones;
  const fixed = valkeyMonthlyCost(0, usage[0]?.valkey as ValkeyUsage, assumptions);
  const lines = [
    '### What the records cost, at published prices',
    '',
    `us-east-1 prices as of ${prices.asOf} (not re-checked on the day of this run). **DynamoDB on-demand**: ` +
      `$${PRICES.dynamodbPerMillionWriteUnits} per million write units, $${PRICES.dynamodbPerMillionReadUnits} per ` +
      `million read units (${PRICES.sources[1]}), storage $${prices.dynamodbStoragePerGbMonth} per GB-month, each ` +
      `item's size plus 100 bytes (${prices.sources.dynamodbStorage.join(', ')}). **ElastiCache Serverless for ` +
      `Valkey**: $${prices.elasticacheValkeyPerMillionEcpus} per million ECPUs and $${prices.elasticacheValkeyPerGbHour} ` +
      `per GB-hour of data stored, metered for at least ${prices.elasticacheValkeyMinimumGb * 1000} MB ` +
      `(${money(fixed.storage)} a month). AWS's pricing page (${prices.sources.elasticache[0]}) states the 100 MB ` +
      "minimum and that Valkey is priced 33 % below Redis OSS, whose $0.0034 and $0.125 are in AWS's own worked " +
      `example (${prices.sources.elasticache[1]}); the Valkey figures are as quoted from that page by ` +
      `${prices.sources.elasticache[2]} (they are the Redis OSS ones less 33 %): an assumption until read on the ` +
      'page itself. **A consumer in a VPC**, which a cache requires: its SQS calls (visibility changes, the DLQ) ' +
      `need an interface endpoint, $${prices.interfaceEndpointPerAzHour} per hour in each zone plus ` +
      `$${prices.interfaceEndpointPerGb} per GB (${prices.sources.privateLink[0]}); ${endpoints} endpoint-zones ` +
      `(SQS in 2 zones): ${money(fixed.fixed)} a month. DynamoDB's gateway endpoint is free, the bytes a few SQS ` +
      'calls carry cost cents, and a Lambda in a VPC costs no more; all three are left out. **Lambda**: ' +
      `$${PRICES.lambdaArmPerGbSecond} per GB-second on Arm (${PRICES.sources[0]}), ${assumptions.lambdaMemoryMiB} MiB ` +
      "(the construct's default), each batch billed its median at the store's typical latency, rounded up to the " +
      'ms. Only the records are priced: the effect (here a POST), the receives and SQS cost the same on either ' +
      'store. A node-based cache, billed by the node-hour rather than by the GB stored, is another comparison.',
    '',
    `**Storage** holds each record for its lifetime: the construct's default idempotency TTL, ${days.toFixed(0)} ` +
      "days (queue retention + DLQ retention + 1 day), an hour more in Valkey (the keys' grace). At a steady rate, " +
      'a month of records times that lifetime over 730 hours. A record takes, as measured: in DynamoDB its item ' +
      'plus 100 bytes; in Valkey `MEMORY USAGE` of its key (the JSON, the key and the server’s overhead): the ' +
      'nearest local figure to the data a serverless cache meters, which AWS samples without saying how it ' +
      'counts it.',
    '',
    `**ECPUs per script** (an assumption: AWS does not publish how it meters a script's vCPU time). ElastiCache ` +
      'bills a simple read or write 1 ECPU per KB transferred, and a command that takes more vCPU time, such as a ' +
      'script, proportionally more: the higher of its KB and its vCPU time against a simple command’s ' +
      `(${prices.sources.ecpu.join(', ')}). Measured here on redis-server: the server's main thread's CPU per ` +
      `request, its network reads and writes included, for each script against a ${BASELINE_VALUE_BYTES.toLocaleString('en-US')}-byte SET ` +
      `sent one at a time (${comparison.set.serverCpuMicros.toFixed(1)} µs): ` +
      usage
        .map(
          (u) =>
            `${WORKLOADS[u.workload].title} ${u.scriptServerCpuMicros.toFixed(1)} µs and ${u.bytesPerScript.toFixed(0)} ` +
            `bytes a script, so ${u.ecpusPerScript.toFixed(1)} ECPUs, ${u.valkey.ecpus.toFixed(1)} a message`,
        )
        .join('; ') +
      `. Counted by the time the server spends running the script alone (\`INFO commandstats\`: ` +
      usage.map((u) => `${u.scriptMicros.toFixed(1)} µs`).join(' and ') +
      ` against ${comparison.set.micros.toFixed(2)} µs for the SET), a message would take ` +
      usage.map((u) => `${u.ecpusUpperBound.toFixed(0)}`).join(' and ') +
      ` ECPUs: ${usage.map((u) => money(u.ecpusUpperBound * prices.elasticacheValkeyPerMillionEcpus)).join(' and ')} ` +
      'per million messages, an upper bound that changes no conclusion below.',
    '',
  ];
  for (const u of usage) {
    const hours = longestBreakEvenRecordHours(u.valkey, u.dynamodb, assumptions.lambdaMemoryMiB);
    const even = breakEven(u.valkey, u.dynamodb, assumptions);
    lines.push(
      `**${WORKLOADS[u.workload].title}**: per message, DynamoDB ${u.dynamodb.writeUnits.toFixed(1)} WRU, ` +
        `${u.dynamodb.readUnits.toFixed(1)} RRU, a ${u.dynamodb.storedBytesPerRecord.toFixed(0)}-byte item, ` +
        `${u.dynamodb.lambdaMsPerMessage.toFixed(1)} ms of Lambda; Valkey ${u.valkey.ecpus.toFixed(1)} ECPUs, a ` +
        `${u.valkey.storedBytesPerRecord.toFixed(0)}-byte key, ${u.valkey.lambdaMsPerMessage.toFixed(1)} ms of Lambda. ` +
        'A month, in dollars:',
      '',
      table(
        ['messages a month', 'store', 'requests', 'storage', 'Lambda', 'fixed', 'total', 'Valkey / DynamoDB'],
        RATES.flatMap((rate) => {
          const dynamodb = dynamodbMonthlyCost(rate, u.dynamodb, assumptions);
          const valkey = valkeyMonthlyCost(rate, u.valkey, assumptions);
          return [
            [millions(rate), 'DynamoDB', ...monthCells(dynamodb), ''],
            [
              millions(rate),
              'Valkey',
              ...monthCells(valkey),
              `**${timesText(valkey.total / dynamodb.total)}**`,
            ],
          ];
        }),
      ),
      '',
      `Break-even: ${
        even.kind === 'never'
          ? `**none** at a ${days.toFixed(0)}-day lifetime: keeping a message's record costs Valkey more than ` +
            'DynamoDB bills for writing and keeping it, so each message widens the gap its fixed costs open'
          : `**above ${millions(even.messagesPerMonth)} messages a month**`
      }. ${
        hours === undefined
          ? 'No record lifetime would make Valkey cheaper: its ECPUs and Lambda time alone cost more per message.'
          : `Some rate would break even if records lived under ${hoursText(hours)}: a TTL that short needs ` +
            "queue and DLQ retentions shorter still (§3: a record must outlive both), against the construct's " +
            'defaults of 4 and 14 days.'
      }`,
      '',
    );
  }
  return lines;
}

function monthCells(month: MonthlyCost): string[] {
  return [
    money(month.requests),
    money(month.storage),
    money(month.lambda),
    money(month.fixed),
    `**${money(month.total)}**`,
  ];
}

function provenanceLine(provenance: SectionProvenance, serverVersion: string): string {
  const { machine } = provenance;
  const busiest = Math.max(machine.loadAverage, provenance.loadAverageAtEnd);
  return (
    `Measured by \`${provenance.command}\` on ${provenance.startedAt.toISOString()}, in ` +
    `${provenance.seconds.toFixed(0)} s, apart from the rest of this file: ${machine.cpus} × ${machine.cpuModel}, ` +
    `${machine.memoryGiB} GiB, Node.js ${machine.node}, ${machine.java} (DynamoDB Local), redis-server ` +
    `${serverVersion}, ${machine.os}; load average ${machine.loadAverage.toFixed(1)} at the start, ` +
    `${provenance.loadAverageAtEnd.toFixed(1)} at the end` +
    (busiest > machine.cpus
      ? ': the machine was busy with other work too, which slows and scatters every timing (the ratios and ' +
        'the slopes, measured in turns, hold better than the absolute times).'
      : '.')
  );
}

/**
 * How close Valkey's batches come to the bound: the design's round trips times the latency added.
 * What they take above it is their own work (the batch with nothing added) and each wait's lateness
 * (the measured request's growth over the added latency): the two predict the batch.
 */
function boundText(rows: readonly StoreWorkload[]): string {
  const parts = rows.map((measured) => {
    const rounds = WORKLOADS[measured.workload].designRoundTrips;
    const zero = measured.points.find((point) => point.latencyMs === 0);
    const points = measured.points.filter((point) => point.latencyMs > 0);
    return (
      `${WORKLOADS[measured.workload].title}, ${figure(zero?.batch.median ?? Number.NaN)} ms with nothing ` +
      'added: ' +
      points
        .map((point) => {
          const bound = rounds * point.latencyMs;
          const predicted =
            (zero?.batch.median ?? Number.NaN) + rounds * (point.roundTripMs - (zero?.roundTripMs ?? 0));
          return (
            `+${point.latencyMs} ms ${figure(point.batch.median)} ms against a bound of ${bound} ms ` +
            `(${((100 * bound) / point.batch.median).toFixed(0)} % of it; predicted ${figure(predicted)} ms)`
          );
        })
        .join(', ')
    );
  });
  return (
    "**Valkey against the physical bound**, the design's round trips times the latency added to each request: " +
    `${parts.join('. ')}. Above the bound is the batch's own work on this machine (the consumer's CPU, the ` +
    'loopback, the server: the batch with nothing added) and each wait ending later than asked (the measured ' +
    'request less the one with nothing added, above, against the latency added): the batch with nothing added ' +
    'plus the round trips times that growth is the prediction in brackets.'
  );
}

function pointText(measured: StoreWorkload, ms: number): string {
  const point = measured.points.find((p) => p.latencyMs === ms);
  return point ? `${figure(point.batch.median)} (p95 ${figure(point.p95)})` : '–';
}

function median(measured: StoreWorkload, ms: number): number {
  return measured.points.find((p) => p.latencyMs === ms)?.batch.median ?? Number.NaN;
}

function operations(perMessage: Record<string, number>): string {
  return Object.entries(perMessage)
    .map(([operation, count]) => `${operation} ${count.toFixed(2)}`)
    .join(', ');
}

function msSpread(spread: Spread): string {
  return `${spread.median.toFixed(3)} ms (${spread.p10.toFixed(3)}–${spread.p90.toFixed(3)})`;
}

function timesText(value: number): string {
  return `${value >= 10 ? value.toFixed(0) : value.toFixed(2)}×`;
}

function figure(value: number): string {
  return value >= 100 ? value.toFixed(0) : value.toFixed(1);
}

function money(dollars: number): string {
  return `$${dollars >= 100 ? dollars.toFixed(0) : dollars.toFixed(dollars >= 1 ? 2 : 3)}`;
}

function millions(messages: number): string {
  return messages >= 1e9 ? `${(messages / 1e9).toFixed(1)} billion` : `${figure(messages / 1e6)} million`;
}

function hoursText(hours: number): string {
  return hours >= 48 ? `${(hours / 24).toFixed(1)} days` : `${hours.toFixed(0)} hours`;
}

function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) =>
    `| ${cells.map((cell) => cell.replaceAll('|', '\\|')).join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/**
 * `markdown` with its section named by `section`'s first line replaced by `section` (up to the next
 * `## ` heading), or, if it has none, `section` inserted before `## How to read these figures`, or
 * added at the end.
 */
export function spliceSection(markdown: string, section: string): string {
  const own = section.replace(/\n+$/, '').split('\n');
  const lines = markdown.replace(/\n+$/, '').split('\n');
  const start = lines.indexOf(own[0] as string);
  const before = (index: number) => {
    const kept = lines.slice(0, index);
    while (kept.length > 0 && kept[kept.length - 1] === '') kept.pop();
    return kept;
  };
  let after: string[] = [];
  let head: string[];
  if (start >= 0) {
    const next = lines.findIndex((line, index) => index > start && line.startsWith('## '));
    head = before(start);
    after = next < 0 ? [] : lines.slice(next);
  } else {
    const notes = lines.indexOf('## How to read these figures');
    head = before(notes < 0 ? lines.length : notes);
    after = notes < 0 ? [] : lines.slice(notes);
  }
  return `${[...head, '', ...own, ...(after.length > 0 ? ['', ...after] : [])].join('\n')}\n`;
}
