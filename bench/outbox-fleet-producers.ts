import type { EventEmitter } from 'node:events';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Pacer } from '../harness/pacer.js';
import { Outbox, OutboxWriteThrottledError } from '../lambdas/outbox/index.js';
import { type OutboxLayout, pendingShardOf } from '../lambdas/outbox/layout.js';
import { canceledForThrottling } from '../lambdas/outbox/throttling.js';

/**
 * How the producers write. `closed`: as fast as the outbox carries — each group's loop writes again
 * once its last write committed, while fewer than `unsentPerGroup` of its messages wait for a send
 * (past that it waits for the relay). Without that bound, producers at a full shard take every unit
 * the budget frees, and the relay's SENT marks — a transaction of up to 10 marker deletes,
 * a whole second's budget in this model — never get in: nothing is sent until the producers stop.
 * `paced`: all loops together at `ratePerSecond`, whatever is sent (open loop).
 */
export type ProducerLoad =
  | { kind: 'closed'; unsentPerGroup: number }
  | { kind: 'paced'; ratePerSecond: number };

export interface ProducerOptions {
  /** Through the budget proxy. */
  client: DynamoDBClient;
  layout: OutboxLayout;
  groups: readonly string[];
  load: ProducerLoad;
  /**
   * The `pendingShards` producer `index` writes with `elapsedMs` into the run: a deploy that changes
   * it reaches the producers one after another, so during it they disagree.
   */
  shardsOf: (index: number, elapsedMs: number) => number;
  /** Each message key's first send so far; `onSent` emits `sent` with the keys of each new send. */
  sent: ReadonlyMap<string, unknown>;
  onSent: EventEmitter;
}

export interface ProducerLog {
  /** Each group's committed message keys, in commit order. */
  readonly committed: Map<string, string[]>;
  /** When each key's write resolved (epoch ms): the relay's lag runs from there. */
  readonly committedAt: Map<string, number>;
  /** Producer transactions DynamoDB canceled for throttling (each sent again by the outbox). */
  throttled: number;
  /** Writes that stayed throttled through the outbox's retries (written again by the producer). */
  gaveUp: number;
}

/**
 * The fleet's producers until `until`: one loop per group (a group's writes one after another, so
 * its commit order is its order), each through `Outbox.write` with the `pendingShards` its deploy
 * says. Resolves with what committed once every loop is done.
 */
export async function runProducers(options: ProducerOptions, startedAt: number, until: number) {
  const log: ProducerLog = { committed: new Map(), committedAt: new Map(), throttled: 0, gaveUp: 0 };
  countThrottledTransactions(options.client, log);
  const outboxes = new Map<number, Outbox>();
  const outboxOf = (shards: number) => {
    let outbox = outboxes.get(shards);
    if (!outbox) {
      outbox = new Outbox({ client: options.client, ...options.layout, pendingShards: shards });
      outboxes.set(shards, outbox);
    }
    return outbox;
  };
  const pacer =
    options.load.kind === 'paced'
      ? new Pacer({ ratePerSecond: options.load.ratePerSecond, maxQueued: Number.POSITIVE_INFINITY })
      : undefined;
  // A closed loop's producer waiting for its group's send is woken by that send alone, or at the end.
  const deadline = AbortSignal.timeout(Math.max(1, until - Date.now()));
  const wakers = new Map<string, () => void>();
  const groupOfKey = new Map<string, string>();
  const wake = (keys: readonly string[]) => {
    for (const key of keys) wakers.get(groupOfKey.get(key) ?? '')?.();
  };
  options.onSent.on('sent', wake);
  deadline.addEventListener('abort', () => {
    for (const resolve of wakers.values()) resolve();
  });
  await Promise.all(
    options.groups.map(async (groupId, index) => {
      const committed: string[] = [];
      log.committed.set(groupId, committed);
      let firstUnsent = 0;
      const roomFor = async () => {
        if (options.load.kind !== 'closed') return;
        for (;;) {
          // A group's messages are sent in order: those before the first unsent one all are.
          while (firstUnsent < committed.length && options.sent.has(committed[firstUnsent] as string)) {
            firstUnsent++;
          }
          if (committed.length - firstUnsent < options.load.unsentPerGroup || deadline.aborted) return;
          await new Promise<void>((resolve) => wakers.set(groupId, resolve));
        }
      };
      while (Date.now() < until) {
        await pacer?.take(1);
        await roomFor();
        if (Date.now() >= until) break;
        const key = `${groupId}-${committed.length}`;
        const outbox = outboxOf(options.shardsOf(index, Date.now() - startedAt));
        try {
          await outbox.write({ messages: [{ type: 'Fleet', groupId, key, payload: {} }] });
        } catch (error) {
          if (!(error instanceof OutboxWriteThrottledError)) throw error;
          log.gaveUp++; // nothing was written: the same message again
          continue;
        }
        committed.push(key);
        groupOfKey.set(key, groupId);
        log.committedAt.set(key, Date.now());
      }
    }),
  );
  options.onSent.off('sent', wake);
  return log;
}

/** Counts each TransactWriteItems the client sends that DynamoDB cancels for throttling. */
function countThrottledTransactions(client: DynamoDBClient, log: ProducerLog): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        if (canceledForThrottling(error)) log.throttled++;
        throw error;
      }
    },
    { step: 'initialize', name: 'fleetThrottledTransactions' },
  );
}

/** `perShard` group ids in each of `shards` shards: an even spread, so that every shard is as busy. */
export function evenGroups(prefix: string, shards: number, perShard: number): string[] {
  const counts = new Map<string, number>();
  const groups: string[] = [];
  for (let i = 0; groups.length < shards * perShard; i++) {
    const groupId = `${prefix}-${i}`;
    const shard = pendingShardOf(groupId, shards);
    if ((counts.get(shard) ?? 0) >= perShard) continue;
    counts.set(shard, (counts.get(shard) ?? 0) + 1);
    groups.push(groupId);
  }
  return groups;
}
