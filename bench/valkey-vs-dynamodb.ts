import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, paginateScan } from '@aws-sdk/lib-dynamodb';
import type { Redis } from 'iovalkey';
// The package's stores, as a consumer imports them: the consumer (`oncely/consumer`) tells them
// apart by class, so they must be the compiled modules' classes.
import {
  type IdempotencyMode,
  type LeaseStore,
  ValkeyIdempotencyStore,
  type ValkeyScriptClient,
} from 'oncely/idempotency';
import { percentile, type Spread, spreadOf } from '../harness/statistics.js';
import type { ValkeyServer } from '../harness/valkey-server.js';
import { itemBytes } from '../lambdas/outbox/item-size.js';
import { countRequests } from '../sandbox/request-counter.js';
import { threadCpuMs } from '../sandbox/thread-cpu.mjs';
import { BATCH_SIZE, type BatchHandler, timeBatch } from './batch-latency.js';
import { type BenchEndpoints, dynamoDbClient, sqsClient } from './clients.js';
import { createLeaseConsumerHandler } from './consumers/lease-consumer.js';
import { silentTelemetry } from './invocation.js';
import { notificationMessages, startNotificationGateway } from './notification-events.js';
import { createFifoQueue, deleteQueues, newIdempotencyTable, uniqueName } from './resources.js';
import { rotate } from './rotate.js';
import { leastSquaresSlope, slopeInterval } from './round-trips.js';
import { sumWriteUnits } from './write-units.js';

/** The two stores of lease-mode records, as section 9 names them. */
export const STORES = {
  valkey: 'Valkey: `ValkeyIdempotencyStore`, iovalkey, redis-server',
  dynamodb: 'DynamoDB: `DynamoDBIdempotencyStore`, DynamoDB Local',
} as const;
export type StoreKind = keyof typeof STORES;

/**
 * The two batches, both of SendNotification (one POST to a loopback gateway, no store request), so
 * that a batch takes its records' round trips to the store and little else. Their sequential round
 * trips are docs/design.md's count, the same on either store (§3.1: each step one request): the
 * group at-most-once takes its leases together, then one completion per record, each starting the
 * next (§4.1: n + 1); ten groups of one record at-least-once take their leases together and their
 * completions together (§4: 2).
 */
export const WORKLOADS = {
  groupAtMostOnce: {
    title: '1 group of 10 records, at-most-once',
    groups: 1,
    mode: 'at-most-once' as IdempotencyMode,
    designRoundTrips: BATCH_SIZE + 1,
  },
  groupsAtLeastOnce: {
    title: '10 groups of 1 record, at-least-once',
    groups: BATCH_SIZE,
    mode: 'at-least-once' as IdempotencyMode,
    designRoundTrips: 2,
  },
} as const;
export type Workload = keyof typeof WORKLOADS;

/**
 * Store requests per first delivery on either store: the acquire and the completion (DESIGN §3 and
 * §3.1: one request each, a PutItem and an UpdateItem, or one script each). At-most-once, a
 * completion also starts the next record of its group (§4.1), so no start mark is written.
 */
export const DESIGN_REQUESTS_PER_MESSAGE = 2;

export interface ValkeyComparisonOptions {
  /** The latencies added to every request of either store, in ms: the same on both. */
  sameLatenciesMs: readonly number[];
  /** Each store's typical in-region request latency, in ms, added to every request of that store. */
  typicalLatencyMs: Readonly<Record<StoreKind, number>>;
  /** Timed rounds; a round times every consumer once at every latency. */
  batches: number;
  /** Untimed rounds first: connections, caches, the JIT and the script cache warm. */
  warmupBatches: number;
  /** CPU: `rounds` rounds, each delivering `batchesPerRound` batches to every consumer in turn. */
  cpu: { rounds: number; batchesPerRound: number; warmupBatches: number };
  onProgress?: (line: string) => void;
}

/** A batch at one added latency. */
export interface LatencyPoint {
  /** Added to every store request, before it is sent. */
  latencyMs: number;
  /** The consumer's median store request at this point, from the added wait to the answer. */
  roundTripMs: number;
  /** Milliseconds from invocation to the partial batch response. */
  batch: Spread;
  /** Its 95th percentile. */
  p95: number;
}

/** One store under one workload. */
export interface StoreWorkload {
  store: StoreKind;
  workload: Workload;
  /** Store requests (DynamoDB requests, Valkey commands) per message over every timed batch. */
  requestsPerMessage: number;
  /** The same by operation (PutItem, UpdateItem; EVALSHA, EVAL), per message. */
  operationsPerMessage: Record<string, number>;
  points: LatencyPoint[];
  /**
   * Sequential round trips: the least-squares slope of the batch's median over the latency added
   * to each request, over the points of `sameLatenciesMs`. Over the added latency rather than the
   * measured round trip ((2d)'s abscissa): DynamoDB Local answers ten requests sent at once one
   * after another, so its measured round trip holds that queue, which no added millisecond moves.
   */
  roundTrips: number;
  /** The slope's p10 and p90 over resamples of the timed rounds (round-trips.ts, `slopeInterval`). */
  roundTripsInterval: { p10: number; p90: number };
  /**
   * The same slope over the consumer's measured request instead ((2d)'s abscissa), which holds what
   * a longer wait adds to a request beyond the wait itself on a busy machine, and DynamoDB Local's
   * queue.
   */
  roundTripsOverRequest: number;
  /** The consumer's thread CPU per message (Linux's /proc), each round's, no latency added. */
  cpuMsPerMessage: Spread;
  /** What a record takes where it is kept: `MEMORY USAGE` of its key; an item's size plus DynamoDB's 100 bytes. */
  storedBytesPerRecord: number;
  /** DynamoDB: the write units DynamoDB Local reported, per message (no step of these batches reads). */
  writeUnitsPerMessage?: number;
  /** Valkey: the bytes of a script's command and of its answer, as RESP carries them, on average. */
  bytesPerScript?: number;
  /** Valkey: the server's time running a script (`INFO commandstats`, EVALSHA and EVAL), µs. */
  scriptMicros?: number;
  /** Valkey: the server's main thread's CPU per script, its network reads and writes included, µs. */
  scriptServerCpuMicros?: number;
}

export interface ValkeyComparison {
  rows: StoreWorkload[];
  /**
   * ElastiCache's 1-ECPU baseline: a `SET` of a 1,000-byte value, sent one at a time with no script
   * running: the server's time running it (`INFO commandstats`) and its main thread's CPU per
   * request, the network's reads and writes included, in µs.
   */
  set: { micros: number; serverCpuMicros: number };
  /** `redis_version` from `INFO server`. */
  serverVersion: string;
  /** Script calls the server counted (`INFO commandstats`) over the timed batches, and the client's count. */
  serverScripts: { server: number; client: number };
  /** Notifications the gateway received, one per record delivered. */
  notifications: number;
}

interface Consumer {
  store: StoreKind;
  workload: Workload;
  handler: BatchHandler;
  /** Store requests so far, by operation. */
  requests: { counts: Record<string, number>; total(): number; reset(): void };
  /** The round trips being timed, when they are. */
  timing: { samples?: number[] };
  writeUnits?: { total(): number; reset(): void };
  /** Valkey: the consumer's script traffic. */
  scripts?: ScriptTraffic;
  /** Counts what the store holds. */
  storedBytesPerRecord(): Promise<number>;
}

/**
 * (9) Lease-mode records in Valkey against DynamoDB, side by side in one run: the real consumer
 * (`fifoBatch`, bench/consumers/lease-consumer.ts) given a `ValkeyIdempotencyStore` on an iovalkey
 * client of a redis-server, or a `DynamoDBIdempotencyStore` on DynamoDB Local, each invoked directly
 * with the event Lambda delivers. Every store request waits the same added latency before it is
 * sent — the DynamoDB client's by (2)'s SDK middleware (clients.ts, `addLatency`), the Valkey
 * client's by a wrapper that waits the same way before each EVALSHA or EVAL — so that at equal
 * latency what differs is the round trips and the client's work, not the emulator's speed. The
 * latencies and the consumers take turns batch after batch. Then, with no latency added, the CPU
 * of this thread per message, in rounds; the server's time per script and per SET; what a record
 * takes in each store.
 */
export async function measureValkeyAgainstDynamoDb(
  endpoints: BenchEndpoints,
  valkey: ValkeyServer,
  options: ValkeyComparisonOptions,
): Promise<ValkeyComparison> {
  const latencyMs: Record<StoreKind, number> = { valkey: 0, dynamodb: 0 };
  const sqs = sqsClient(endpoints);
  const admin = valkey.client();
  const redisClients: Redis[] = [];
  const dynamodbClients: DynamoDBClient[] = [];
  const [dlq, gateway] = await Promise.all([createFifoQueue(sqs, {}), startNotificationGateway()]);
  try {
    const consumers: Consumer[] = [];
    for (const workload of Object.keys(WORKLOADS) as Workload[]) {
      for (const store of Object.keys(STORES) as StoreKind[]) {
        // Nothing of the Valkey consumer's goes to DynamoDB: its client is checked to send nothing.
        const dynamodb = dynamoDbClient(endpoints, store === 'dynamodb' ? () => latencyMs.dynamodb : 0);
        dynamodbClients.push(dynamodb);
        const timing: { samples?: number[] } = {};
        const common = {
          ledgerTableName: 'unused',
          notificationUrl: gateway.url,
          mode: WORKLOADS[workload].mode,
          dynamodb,
          sqs,
          dlqUrl: dlq.url,
          ...silentTelemetry(),
        };
        if (store === 'dynamodb') {
          const tableName = await newIdempotencyTable(dynamodb);
          timeRoundTrips(dynamodb, timing);
          const requests = countRequests(dynamodb);
          const writeUnits = sumWriteUnits(dynamodb);
          consumers.push({
            store,
            workload,
            handler: createLeaseConsumerHandler({ ...common, idempotencyTableName: tableName }),
            requests,
            timing,
            writeUnits,
            storedBytesPerRecord: () => meanItemBytes(dynamodb, tableName),
          });
        } else {
          const unused = countRequests(dynamodb);
          const client = valkey.client();
          redisClients.push(client);
          const keyPrefix = `${uniqueName('bench')}:`;
          const scripts = scriptTraffic(client, () => latencyMs.valkey, timing);
          const store: LeaseStore = new ValkeyIdempotencyStore({ client: scripts.client, keyPrefix });
          consumers.push({
            store: 'valkey',
            workload,
            handler: createLeaseConsumerHandler({ ...common, idempotencyTableName: 'unused', store }),
            requests: {
              counts: scripts.counts,
              total: () => {
                if (unused.total() > 0) throw new Error('the Valkey consumer sent requests to DynamoDB');
                return scripts.total();
              },
              reset: scripts.reset,
            },
            timing,
            scripts,
            storedBytesPerRecord: () => meanMemoryUsage(admin, keyPrefix),
          });
        }
      }
    }

    const latency = await timeAtLatencies(consumers, latencyMs, admin, options);
    const cpu = await cpuPerMessage(consumers, admin, valkey.pid, options);
    const rows: StoreWorkload[] = [];
    for (const consumer of consumers) {
      const measured = latency.results.get(consumer) as TimedConsumer;
      const same = measured.points
        .map((point, index) => ({ point, rounds: measured.rounds[index] as number[] }))
        .filter(({ point }) => options.sameLatenciesMs.includes(point.latencyMs));
      const addedMs = same.map(({ point }) => point.latencyMs);
      const messages = measured.batches * BATCH_SIZE;
      const server = cpu.server.get(consumer);
      rows.push({
        store: consumer.store,
        workload: consumer.workload,
        requestsPerMessage: measured.requests / messages,
        operationsPerMessage: Object.fromEntries(
          Object.entries(measured.operations).map(([operation, count]) => [operation, count / messages]),
        ),
        points: measured.points,
        roundTrips: leastSquaresSlope(
          addedMs,
          same.map(({ point }) => point.batch.median),
        ),
        roundTripsInterval: slopeInterval(
          addedMs,
          same.map(({ rounds }) => rounds),
        ),
        roundTripsOverRequest: leastSquaresSlope(
          same.map(({ point }) => point.roundTripMs),
          same.map(({ point }) => point.batch.median),
        ),
        cpuMsPerMessage: spreadOf(cpu.msPerMessage.get(consumer) ?? []),
        storedBytesPerRecord: await consumer.storedBytesPerRecord(),
        ...(consumer.writeUnits ? { writeUnitsPerMessage: measured.writeUnits / messages } : {}),
        ...(server
          ? {
              bytesPerScript: server.bytes / server.scripts,
              scriptMicros: server.micros / server.scripts,
              scriptServerCpuMicros: server.cpuMicros / server.scripts,
            }
          : {}),
      });
    }
    const set = await setBaseline(admin, valkey.pid);
    const expected = (latency.batchesDelivered + cpu.batchesDelivered) * BATCH_SIZE;
    if (gateway.posts() !== expected) {
      throw new Error(`the gateway got ${gateway.posts()} notifications, not one per record (${expected})`);
    }
    return {
      rows,
      set,
      serverVersion: (await info(admin, 'server')).redis_version ?? 'unknown',
      serverScripts: latency.serverScripts,
      notifications: gateway.posts(),
    };
  } finally {
    await Promise.all([deleteQueues(sqs, [dlq]), gateway.stop()]);
    sqs.destroy();
    for (const client of dynamodbClients) client.destroy();
    for (const client of [...redisClients, admin]) client.disconnect();
  }
}

interface TimedConsumer {
  batches: number;
  requests: number;
  operations: Record<string, number>;
  writeUnits: number;
  points: LatencyPoint[];
  /** Each point's batch times, in the order of the timed rounds. */
  rounds: number[][];
}

/**
 * The latency phase: every consumer at every latency its store is measured at (the same latencies,
 * and its typical one), the latencies and the consumers taking turns batch after batch. Requests
 * are counted over the timed batches; the server's own count of scripts over the same.
 */
async function timeAtLatencies(
  consumers: readonly Consumer[],
  latencyMs: Record<StoreKind, number>,
  admin: Redis,
  options: ValkeyComparisonOptions,
) {
  const pointsOf = (store: StoreKind) =>
    [...new Set([...options.sameLatenciesMs, options.typicalLatencyMs[store]])].sort((a, b) => a - b);
  const allPoints = [...new Set([...pointsOf('valkey'), ...pointsOf('dynamodb')])].sort((a, b) => a - b);
  // Each consumer's batch times and request times, by latency.
  const batchTimes = new Map(consumers.map((consumer) => [consumer, new Map<number, number[]>()]));
  const requestTimes = new Map(consumers.map((consumer) => [consumer, new Map<number, number[]>()]));
  const rounds = options.warmupBatches + options.batches;
  let batchesDelivered = 0;
  let serverBefore = 0;
  for (let round = 0; round < rounds; round++) {
    if (round === options.warmupBatches) {
      for (const consumer of consumers) {
        consumer.requests.reset();
        consumer.writeUnits?.reset();
      }
      serverBefore = scriptCalls(await info(admin, 'commandstats'));
    }
    const timed = round >= options.warmupBatches;
    for (const point of rotate(allPoints, round)) {
      for (const consumer of rotate(consumers, round)) {
        if (!pointsOf(consumer.store).includes(point)) continue;
        latencyMs[consumer.store] = point;
        const requests = requestTimes.get(consumer) as Map<number, number[]>;
        if (!requests.has(point)) requests.set(point, []);
        consumer.timing.samples = timed ? requests.get(point) : undefined;
        const elapsed = await timeBatch(
          consumer.handler,
          notificationMessages(BATCH_SIZE, WORKLOADS[consumer.workload].groups),
        );
        batchesDelivered++;
        consumer.timing.samples = undefined;
        if (!timed) continue;
        const times = batchTimes.get(consumer) as Map<number, number[]>;
        times.set(point, [...(times.get(point) ?? []), elapsed]);
      }
    }
  }
  latencyMs.valkey = 0;
  latencyMs.dynamodb = 0;
  const serverScripts = scriptCalls(await info(admin, 'commandstats')) - serverBefore;
  const results = new Map<Consumer, TimedConsumer>();
  for (const consumer of consumers) {
    const times = batchTimes.get(consumer) as Map<number, number[]>;
    const rounds = pointsOf(consumer.store).map((point) => times.get(point) ?? []);
    const points = pointsOf(consumer.store).map((point, index) => ({
      latencyMs: point,
      roundTripMs: spreadOf(requestTimes.get(consumer)?.get(point) ?? []).median,
      batch: spreadOf(rounds[index] as number[]),
      p95: percentile(
        [...(rounds[index] as number[])].sort((a, b) => a - b),
        95,
      ),
    }));
    results.set(consumer, {
      batches: options.batches * points.length,
      requests: consumer.requests.total(),
      operations: { ...consumer.requests.counts },
      writeUnits: consumer.writeUnits?.total() ?? 0,
      points,
      rounds,
    });
  }
  options.onProgress?.(
    consumers
      .map((consumer) => {
        const point = results
          .get(consumer)
          ?.points.find((p) => p.latencyMs === options.typicalLatencyMs[consumer.store]);
        return `${consumer.store} ${consumer.workload} ${point?.batch.median.toFixed(1)} ms at +${point?.latencyMs} ms`;
      })
      .join(', '),
  );
  const clientScripts = consumers.reduce((sum, consumer) => sum + (consumer.scripts?.total() ?? 0), 0);
  return { results, batchesDelivered, serverScripts: { server: serverScripts, client: clientScripts } };
}

/**
 * The CPU phase, no latency added: in each round every consumer gets `batchesPerRound` batches in
 * turn, its thread's CPU read before and after (Linux's /proc, in ns). For the Valkey consumers,
 * the server's commandstats and the client's bytes over the same batches: a script's time on the
 * server and its traffic.
 */
async function cpuPerMessage(
  consumers: readonly Consumer[],
  admin: Redis,
  serverPid: number,
  options: ValkeyComparisonOptions,
) {
  const { rounds, batchesPerRound, warmupBatches } = options.cpu;
  const msPerMessage = new Map(consumers.map((consumer) => [consumer, [] as number[]]));
  const server = new Map<Consumer, { scripts: number; micros: number; cpuMicros: number; bytes: number }>();
  let batchesDelivered = 0;
  const deliver = async (consumer: Consumer, batches: number) => {
    const events = Array.from({ length: batches }, () =>
      notificationMessages(BATCH_SIZE, WORKLOADS[consumer.workload].groups),
    );
    for (const messages of events) {
      await timeBatch(consumer.handler, messages);
      batchesDelivered++;
    }
  };
  for (const consumer of consumers) await deliver(consumer, warmupBatches);
  for (let round = 0; round < rounds; round++) {
    for (const consumer of rotate(consumers, round)) {
      const statsBefore = consumer.scripts ? scriptStats(await info(admin, 'commandstats')) : undefined;
      const bytesBefore = consumer.scripts?.bytes() ?? 0;
      const serverBefore = mainThreadCpuMicros(serverPid);
      const before = threadCpuMs();
      await deliver(consumer, batchesPerRound);
      const after = threadCpuMs();
      const serverAfter = mainThreadCpuMicros(serverPid);
      if (before === undefined || after === undefined)
        throw new Error('no /proc: the CPU cannot be read here');
      msPerMessage.get(consumer)?.push((after - before) / (batchesPerRound * BATCH_SIZE));
      if (consumer.scripts && statsBefore) {
        const statsAfter = scriptStats(await info(admin, 'commandstats'));
        const sum = server.get(consumer) ?? { scripts: 0, micros: 0, cpuMicros: 0, bytes: 0 };
        sum.scripts += statsAfter.calls - statsBefore.calls;
        sum.micros += statsAfter.micros - statsBefore.micros;
        sum.cpuMicros += serverAfter - serverBefore;
        sum.bytes += consumer.scripts.bytes() - bytesBefore;
        server.set(consumer, sum);
      }
    }
  }
  options.onProgress?.(
    consumers
      .map(
        (consumer) =>
          `${consumer.store} ${consumer.workload} ${spreadOf(msPerMessage.get(consumer) ?? []).median.toFixed(3)} ms CPU`,
      )
      .join(', '),
  );
  return { msPerMessage, server, batchesDelivered };
}

/** Times each request of a DynamoDB client from before its added wait to its answer, when asked. */
function timeRoundTrips(client: DynamoDBClient, timing: { samples?: number[] }): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const started = performance.now();
      const output = await next(args);
      timing.samples?.push(performance.now() - started);
      return output;
    },
    // High priority: outside the added wait (normal priority), so that the wait is timed too.
    { step: 'deserialize', name: 'benchRoundTrip', priority: 'high' },
  );
}

/** A Valkey client's script calls: counted, timed, their bytes summed, each held `latencyMs()` first. */
export interface ScriptTraffic {
  client: ValkeyScriptClient;
  counts: Record<string, number>;
  total(): number;
  reset(): void;
  /** The bytes of every command sent and answer received so far, as RESP carries them. */
  bytes(): number;
}

/**
 * Wraps `client` as the store sees it: each EVALSHA or EVAL waits `latencyMs()` before it is sent,
 * as `addLatency` holds a DynamoDB request (clients.ts), and is counted, timed from before the wait
 * to the answer, and measured in bytes (the command's RESP array of bulk strings, its bulk-string
 * answer).
 */
export function scriptTraffic(
  client: ValkeyScriptClient,
  latencyMs: () => number,
  timing: { samples?: number[] },
): ScriptTraffic {
  const counts: Record<string, number> = {};
  let bytes = 0;
  const call =
    (command: 'EVALSHA' | 'EVAL') =>
    async (first: string, numkeys: number, ...args: (string | number)[]): Promise<unknown> => {
      counts[command] = (counts[command] ?? 0) + 1;
      const started = performance.now();
      const held = latencyMs();
      if (held > 0) await sleep(held);
      bytes += respCommandBytes([command, first, numkeys, ...args]);
      const answer =
        command === 'EVALSHA'
          ? await client.evalsha(first, numkeys, ...args)
          : await client.eval(first, numkeys, ...args);
      bytes += respAnswerBytes(answer);
      timing.samples?.push(performance.now() - started);
      return answer;
    };
  return {
    client: { evalsha: call('EVALSHA'), eval: call('EVAL') },
    counts,
    total: () => Object.values(counts).reduce((sum, count) => sum + count, 0),
    reset: () => {
      for (const key of Object.keys(counts)) delete counts[key];
    },
    bytes: () => bytes,
  };
}

/** A command's bytes in RESP: `*<n>\r\n`, then each argument as `$<length>\r\n<bytes>\r\n`. */
export function respCommandBytes(args: readonly (string | number)[]): number {
  let bytes = `*${args.length}\r\n`.length;
  for (const arg of args) {
    const length = Buffer.byteLength(String(arg));
    bytes += `$${length}\r\n`.length + length + 2;
  }
  return bytes;
}

/** An answer's bytes in RESP: a bulk string, an integer, or nil. */
function respAnswerBytes(answer: unknown): number {
  if (typeof answer === 'string') {
    const length = Buffer.byteLength(answer);
    return `$${length}\r\n`.length + length + 2;
  }
  if (typeof answer === 'number') return `:${answer}\r\n`.length;
  return '$-1\r\n'.length;
}

/** `INFO <section>` as fields. */
async function info(client: Redis, section: string): Promise<Record<string, string>> {
  const text = await client.info(section);
  return Object.fromEntries(
    text
      .split('\r\n')
      .filter((line) => line.includes(':'))
      .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1)]),
  );
}

/** The calls and µs of one command in `INFO commandstats` (`calls=…,usec=…,…`). */
function commandStat(stats: Record<string, string>, command: string): { calls: number; micros: number } {
  const fields = Object.fromEntries(
    (stats[`cmdstat_${command}`] ?? '').split(',').map((field) => field.split('=') as [string, string]),
  );
  return { calls: Number(fields.calls ?? 0), micros: Number(fields.usec ?? 0) };
}

function scriptStats(stats: Record<string, string>): { calls: number; micros: number } {
  const [evalsha, evalScript] = [commandStat(stats, 'evalsha'), commandStat(stats, 'eval')];
  return { calls: evalsha.calls + evalScript.calls, micros: evalsha.micros + evalScript.micros };
}

function scriptCalls(stats: Record<string, string>): number {
  return scriptStats(stats).calls;
}

/** Records sampled for their size: enough for a mean, few enough to read in a moment. */
const SIZE_SAMPLE = 500;

/** The mean `MEMORY USAGE` of a store's record keys (the unresolved index's sets left out). */
async function meanMemoryUsage(client: Redis, keyPrefix: string): Promise<number> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found.filter((key) => !key.startsWith(`${keyPrefix}unresolved:`)));
  } while (cursor !== '0' && keys.length < SIZE_SAMPLE);
  const sizes = await Promise.all(
    keys.slice(0, SIZE_SAMPLE).map(async (key) => Number(await client.memory('USAGE', key, 'SAMPLES', 0))),
  );
  if (sizes.length === 0) throw new Error(`no record under ${keyPrefix}`);
  return mean(sizes);
}

/**
 * DynamoDB bills storage as each item's size plus 100 bytes of overhead
 * (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html).
 */
const DYNAMODB_ITEM_OVERHEAD_BYTES = 100;

/** The mean size of a table's items as DynamoDB bills their storage. */
async function meanItemBytes(client: DynamoDBClient, tableName: string): Promise<number> {
  const sizes: number[] = [];
  const documents = DynamoDBDocumentClient.from(client);
  for await (const page of paginateScan(
    { client: documents },
    { TableName: tableName, Limit: SIZE_SAMPLE },
  )) {
    for (const item of page.Items ?? []) sizes.push(itemBytes(item) + DYNAMODB_ITEM_OVERHEAD_BYTES);
    if (sizes.length >= SIZE_SAMPLE) break;
  }
  if (sizes.length === 0) throw new Error(`no record in ${tableName}`);
  return mean(sizes);
}

/** SETs timed on the server for the baseline. */
const BASELINE_SETS = 2_000;
/** The baseline's value: the largest a simple write ElastiCache bills 1 ECPU for (1 ECPU per KB). */
export const BASELINE_VALUE_BYTES = 1_000;

/**
 * The scripts' baseline: {@link BASELINE_SETS} `SET`s of a {@link BASELINE_VALUE_BYTES} value, one
 * at a time with nothing else running, as the store sends its scripts: the server's time running
 * one (`INFO commandstats`, reset first with `CONFIG RESETSTAT`: the scripts' own SETs count there
 * too) and its main thread's CPU per request, its network reads and writes included.
 */
async function setBaseline(
  client: Redis,
  serverPid: number,
): Promise<{ micros: number; serverCpuMicros: number }> {
  const prefix = `${uniqueName('baseline')}:`;
  const value = 'x'.repeat(BASELINE_VALUE_BYTES);
  for (let key = 0; key < 100; key++) await client.set(`${prefix}warm${key}`, value);
  await client.config('RESETSTAT');
  const before = mainThreadCpuMicros(serverPid);
  for (let key = 0; key < BASELINE_SETS; key++) await client.set(`${prefix}${key}`, value);
  const after = mainThreadCpuMicros(serverPid);
  const { calls, micros } = commandStat(await info(client, 'commandstats'), 'set');
  const pipeline = client.pipeline();
  for (let key = 0; key < BASELINE_SETS; key++) pipeline.del(`${prefix}${key}`);
  for (let key = 0; key < 100; key++) pipeline.del(`${prefix}warm${key}`);
  await pipeline.exec();
  return { micros: micros / calls, serverCpuMicros: (after - before) / BASELINE_SETS };
}

/**
 * A process's main thread's CPU so far in µs, from the scheduler's count in ns (Linux's /proc): the
 * thread that runs redis-server's commands and its network reads and writes (without io-threads).
 */
function mainThreadCpuMicros(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}
