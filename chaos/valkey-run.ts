import { Redis } from 'iovalkey';
import { startTcpFaultProxy, type TcpFaultProxy } from '../harness/tcp-fault-proxy.js';
import { replicasCaughtUp, startValkey, type ValkeyServer } from '../harness/valkey-server.js';
import { type IdempotencyMode, LeaseIdempotency, type LeaseOutcome } from '../lambdas/idempotency/lease.js';
import type { IdempotencyObserver } from '../lambdas/idempotency/observer.js';
import { VALKEY_SCRIPTS } from '../lambdas/idempotency/valkey-scripts.js';
import { ValkeyIdempotencyStore } from '../lambdas/idempotency/valkey-store.js';
import type { RunPoint, ValkeySchedule } from './valkey-schedule.js';

const LEASE_MS = 1_000;
/** Deliveries of an unacknowledged message before the run gives up on it (a violation). */
const MAX_DELIVERIES = 4;
/** A replica attached acknowledges within this, even on a busy machine; one cut off never does. */
const WAIT_FOR_ONE = { replicas: 1, timeoutMs: 1_000 };
const POINTS: readonly RunPoint[] = ['before-acquire', 'during-effect', 'after-completion'];
const SILENT: IdempotencyObserver = {
  completionWriteFailed: () => undefined,
  leaseLost: () => undefined,
  inDoubt: () => undefined,
  failureWriteFailed: () => undefined,
  resultNotStored: () => undefined,
};

/** How one schedule ended, with or without `waitForReplicas`. */
export interface ValkeyRun {
  /** Each key's effect runs. */
  effects: number[];
  /** Each key's last outcome: `executed`, `duplicate` or `in-doubt`. */
  endings: string[];
  violations: string[];
}

/** The servers, the proxy standing for the primary endpoint, and the clients of one run. */
interface ValkeyWorld {
  proxy: TcpFaultProxy;
  primary: ValkeyServer;
  replica?: ValkeyServer;
  client(port: number): Redis;
  close(): Promise<void>;
}

async function openWorld(withReplica: boolean): Promise<ValkeyWorld> {
  const servers: ValkeyServer[] = [];
  const clients: Redis[] = [];
  let proxy: TcpFaultProxy | undefined;
  const close = async () => {
    for (const client of clients) client.disconnect();
    await proxy?.close();
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    const primary = await startValkey();
    servers.push(primary);
    const replica = withReplica ? await startValkey({ replicaOf: primary }) : undefined;
    if (replica) servers.push(replica);
    proxy = await startTcpFaultProxy(primary.port);
    const client = (port: number) => {
      const made = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 10 });
      made.on('error', () => undefined); // a crash or a failover closes it: it reconnects
      clients.push(made);
      return made;
    };
    if (replica) await replicasCaughtUp(client(primary.port), 1);
    return { proxy, primary, replica, client, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The fault's actions, each at a point of the struck key's first delivery. */
function faultActions(schedule: ValkeySchedule, world: ValkeyWorld): [RunPoint, () => Promise<unknown>][] {
  const { fault } = schedule;
  const { primary, replica, proxy } = world;
  if (fault.kind === 'lost-answer') {
    const sha = (fault.step === 'acquire' ? VALKEY_SCRIPTS.acquire : VALKEY_SCRIPTS.outcome).sha;
    return [['before-acquire', async () => proxy.loseReplies((request) => request.includes(sha))]];
  }
  if (fault.kind === 'restart') {
    const admin = world.client(primary.port);
    return [
      [fault.from, () => admin.save()],
      [fault.to, () => primary.crashAndRestart()],
    ];
  }
  if (!replica) throw new Error('a failover needs a replica');
  const toPrimary = world.client(primary.port);
  const toReplica = world.client(replica.port);
  return [
    [
      fault.from,
      async () => {
        await replicasCaughtUp(toPrimary, 1);
        await toReplica.replicaof('NO', 'ONE');
      },
    ],
    [
      fault.to,
      async () => {
        proxy.failOver(replica.port);
        // The old primary comes back as the new one's replica, dropping what it alone had.
        await toPrimary.replicaof('127.0.0.1', String(replica.port));
        await replicasCaughtUp(toReplica, 1);
      },
    ],
  ];
}

/**
 * Runs one schedule's keys through the lease core on real redis-servers, with or without
 * `waitForReplicas`: each key delivered, delivered again while unacknowledged (its clock past the
 * lease each time), then once more as a duplicate; the fault meets the struck key's first
 * delivery. Counts each key's effect runs. A violation: a message never acknowledged, an effect
 * that never ran and is not IN_DOUBT, an effect run twice after a lost answer, or, with the
 * defence, an at-most-once effect run twice across a failover.
 */
export async function runValkeySchedule(schedule: ValkeySchedule, defence: boolean): Promise<ValkeyRun> {
  const { fault } = schedule;
  const world = await openWorld(fault.kind !== 'restart');
  try {
    let now = Date.now();
    const store = new ValkeyIdempotencyStore({
      client: world.client(world.proxy.port),
      keyPrefix: 'chaos:',
      now: () => now,
      waitForReplicas: defence ? WAIT_FOR_ONE : undefined,
    });
    const cores = new Map<IdempotencyMode, LeaseIdempotency>(
      (['at-least-once', 'at-most-once'] as const).map((mode) => [
        mode,
        new LeaseIdempotency({
          store,
          namespace: 'mail',
          mode,
          leaseMs: LEASE_MS,
          cache: false,
          observer: SILENT,
        }),
      ]),
    );
    const effects = schedule.keys.map(() => 0);
    const pending = faultActions(schedule, world);
    /** Runs every action due at or before `point`, in order. */
    const reach = async (point: RunPoint) => {
      while (
        pending.length > 0 &&
        POINTS.indexOf((pending[0] as [RunPoint, unknown])[0]) <= POINTS.indexOf(point)
      ) {
        const [, action] = pending.shift() as [RunPoint, () => Promise<unknown>];
        await action();
      }
    };
    const deliver = async (index: number, struck: boolean): Promise<LeaseOutcome<string> | undefined> => {
      const core = cores.get(schedule.keys[index] as IdempotencyMode) as LeaseIdempotency;
      try {
        return await core.run({ key: `k${index}`, payload: index }, async () => {
          effects[index] = (effects[index] ?? 0) + 1;
          if (struck) await reach('during-effect');
          return 'sent';
        });
      } catch {
        return undefined; // refused or failed: not acknowledged
      }
    };
    /** Acknowledged: an outcome the record holds. */
    const acknowledged = (outcome: LeaseOutcome<string> | undefined) =>
      outcome !== undefined && !(outcome.status === 'executed' && !outcome.recorded);

    const endings: string[] = [];
    const violations: string[] = [];
    for (const [index] of schedule.keys.entries()) {
      const struck = index === schedule.struck;
      if (struck) await reach('before-acquire');
      let outcome = await deliver(index, struck);
      if (struck) await reach('after-completion');
      for (let delivery = 2; !acknowledged(outcome) && delivery <= MAX_DELIVERIES; delivery++) {
        now += LEASE_MS + 1;
        outcome = await deliver(index, false);
      }
      if (!acknowledged(outcome))
        violations.push(`k${index}: not acknowledged after ${MAX_DELIVERIES} deliveries`);
      endings[index] = outcome?.status ?? 'failed';
    }
    // A copy of every message, once every lease has expired: a lost completion shows here.
    now += LEASE_MS + 1;
    for (const [index] of schedule.keys.entries()) {
      const copy = await deliver(index, false);
      endings[index] = copy?.status ?? 'failed';
    }
    for (const [index, mode] of schedule.keys.entries()) {
      const runs = effects[index] ?? 0;
      if (runs === 0 && endings[index] !== 'in-doubt')
        violations.push(`k${index}: never ran, ${endings[index]}`);
      if (runs > 1 && fault.kind === 'lost-answer')
        violations.push(`k${index}: ran ${runs} times after a lost answer`);
      if (runs > 1 && defence && mode === 'at-most-once') {
        violations.push(`k${index}: at-most-once ran ${runs} times with waitForReplicas`);
      }
    }
    return { effects, endings, violations };
  } finally {
    await world.close();
  }
}
