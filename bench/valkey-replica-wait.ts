// Issue 46: what `waitForReplicas` costs. A primary and one replica on loopback (Debian's
// redis-server); the Valkey store's two writes of a first delivery, acquire and complete, timed one
// key after another, without the option and with `{ replicas: 1 }`; then the same write as a bare
// EVALSHA, with WAIT pipelined behind it (what the store sends) and with WAIT sent after its reply
// (a round trip of its own). Loopback has no network to speak of: the figures are the server's and
// the client's work, and what a replica's acknowledgement adds to it.
//
//   npx tsx bench/valkey-replica-wait.ts [--keys 2000]
// It prints a Markdown table (bench/VALKEY-WAIT.md keeps one run's).

import { randomUUID } from 'node:crypto';
import { cpus } from 'node:os';
import { parseArgs } from 'node:util';
import type { Redis } from 'iovalkey';
import { replicasCaughtUp, startValkey } from '../harness/valkey-server.js';
import { ValkeyIdempotencyStore } from '../lambdas/idempotency/valkey-store.js';

const { values } = parseArgs({ options: { keys: { type: 'string', default: '2000' } } });
const KEYS = Number(values.keys);
const WARM_UP = 200;
const WAIT = { replicas: 1, timeoutMs: 1_000 };

/** Microseconds each call of `step` took, over `count` calls after the warm-up. */
async function timed(count: number, step: (index: number) => Promise<unknown>): Promise<number[]> {
  for (let index = 0; index < WARM_UP; index++) await step(-index - 1);
  const took: number[] = [];
  for (let index = 0; index < count; index++) {
    const start = process.hrtime.bigint();
    await step(index);
    took.push(Number(process.hrtime.bigint() - start) / 1_000);
  }
  return took;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

function row(name: string, took: number[]): string {
  const sorted = [...took].sort((a, b) => a - b);
  const cells = [50, 90, 99].map((p) => (percentile(sorted, p) / 1000).toFixed(3));
  return `| ${name} | ${cells.join(' | ')} |`;
}

/** The store's acquire and complete, each timed, on fresh keys. */
async function storeSteps(client: Redis, waitForReplicas?: typeof WAIT) {
  const store = new ValkeyIdempotencyStore({ client, keyPrefix: `bench-${randomUUID()}:`, waitForReplicas });
  const leases = new Map<number, Awaited<ReturnType<ValkeyIdempotencyStore['acquire']>>>();
  const acquire = await timed(KEYS, async (index) => {
    const acquired = await store.acquire({
      id: `mail#${index}`,
      payloadHash: 'h',
      leaseMs: 60_000,
      takeOverExpiredLease: false,
    });
    leases.set(index, acquired);
  });
  const complete = await timed(KEYS, async (index) => {
    const acquired = leases.get(index);
    if (acquired?.acquired) await store.complete(acquired.lease, { result: '"sent"' });
  });
  return { acquire, complete };
}

const primary = await startValkey();
const replica = await startValkey({ replicaOf: primary });
const client = primary.client();
try {
  await replicasCaughtUp(client, 1);
  const plain = await storeSteps(client);
  const waited = await storeSteps(client, WAIT);
  const script = await client.script('LOAD', "redis.call('SET', KEYS[1], ARGV[1]) return 1");
  const bare = await timed(KEYS, (index) => client.evalsha(script as string, 1, `bench:${index}`, 'v'));
  const pipelined = await timed(KEYS, (index) =>
    Promise.all([client.evalsha(script as string, 1, `bench:${index}`, 'v'), client.wait(1, 1_000)]),
  );
  const sequential = await timed(KEYS, async (index) => {
    await client.evalsha(script as string, 1, `bench:${index}`, 'v');
    await client.wait(1, 1_000);
  });

  console.log(`| step | p50 ms | p90 ms | p99 ms |\n|---|--:|--:|--:|`);
  console.log(row('acquire', plain.acquire));
  console.log(row('acquire, `waitForReplicas: { replicas: 1 }`', waited.acquire));
  console.log(row('complete', plain.complete));
  console.log(row('complete, `waitForReplicas: { replicas: 1 }`', waited.complete));
  console.log(row('EVALSHA (a one-key SET)', bare));
  console.log(row('EVALSHA, WAIT 1 pipelined behind it', pipelined));
  console.log(row('EVALSHA, then WAIT 1 after its reply', sequential));
  const version = (await client.info('server')).match(/redis_version:(\S+)/)?.[1];
  console.log(
    `\n${KEYS} calls per row after ${WARM_UP} of warm-up; redis-server ${version}, primary and replica on ` +
      `127.0.0.1; ${cpus().length} cores, Node ${process.versions.node}.`,
  );
} finally {
  client.disconnect();
  await replica.stop();
  await primary.stop();
}
