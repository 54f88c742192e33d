import { randomUUID } from 'node:crypto';
import { Redis } from 'iovalkey';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startTcpFaultProxy, type TcpFaultProxy } from '../../harness/tcp-fault-proxy.js';
import { replicasCaughtUp, startValkey, type ValkeyServer } from '../../harness/valkey-server.js';
import {
  type IdempotencyMode,
  LeaseIdempotency,
  RecordNotReplicatedError,
  ValkeyIdempotencyStore,
  type ValkeyReplicaWait,
  type ValkeyScriptClient,
} from '../../lambdas/idempotency/index.js';
import { VALKEY_SCRIPTS } from '../../lambdas/idempotency/valkey-scripts.js';
import { manualClock, recordingObserver } from './lease-contract.js';

// What Valkey can lose (DESIGN §3.1), against real redis-servers: its persistence is periodic and
// its replication asynchronous, so a restart or a failover can drop the last writes — a lease, a
// start mark, a completion. Each loss is run through the lease core with counted effects: what it
// costs without the defence (the documented weakness), and what `waitForReplicas` changes. Lost
// answers are valkey-store.test.ts'; here only their meeting with WAIT.

const MODES: IdempotencyMode[] = ['at-least-once', 'at-most-once'];
const LEASE_MS = 1_000;
/**
 * One replica must hold a write an effect's safety rests on. A replica cut off never acknowledges,
 * whatever the wait: the wait is a bound for one attached, on a machine that may be busy.
 */
const WAIT_FOR_ONE: ValkeyReplicaWait = { replicas: 1, timeoutMs: 1_000 };

/** Servers and clients a test started, stopped after it whatever happened. */
let started: ValkeyServer[] = [];
let clients: Redis[] = [];
let proxy: TcpFaultProxy | undefined;

afterEach(async () => {
  for (const client of clients) client.disconnect();
  await proxy?.close();
  await Promise.all(started.map((server) => server.stop()));
  started = [];
  clients = [];
  proxy = undefined;
});

async function server(options: Parameters<typeof startValkey>[0] = {}): Promise<ValkeyServer> {
  const made = await startValkey(options);
  started.push(made);
  return made;
}

/** A client that reconnects soon after a crash or a failover, and sends again what was in flight. */
function clientOf(port: number): Redis {
  const made = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 10 });
  made.on('error', () => undefined); // a crash or a failover closes its connection: it reconnects
  clients.push(made);
  return made;
}

/** The lease core on a store of its own keys through `client`, its clock by hand. */
function leaseCore(client: ValkeyScriptClient, mode: IdempotencyMode, waitForReplicas?: ValkeyReplicaWait) {
  const clock = manualClock();
  const store = new ValkeyIdempotencyStore({
    client,
    keyPrefix: `t-${randomUUID().slice(0, 8)}:`,
    now: clock.now,
    waitForReplicas,
  });
  const { events, observer } = recordingObserver();
  const core = new LeaseIdempotency({
    store,
    namespace: 'mail',
    mode,
    leaseMs: LEASE_MS,
    cache: false,
    observer,
    completionAttempts: 1,
  });
  /** Each key's effect runs counted. */
  const runs: Record<string, number> = {};
  const effect = (key: string) => async () => {
    runs[key] = (runs[key] ?? 0) + 1;
    return `sent ${key}`;
  };
  const deliver = (key: string) => core.run({ key, payload: key }, effect(key));
  return { core, clock, runs, events, deliver, effect };
}

/**
 * Two records of one FIFO group run at-most-once as the consumer runs them (DESIGN §4.1): both
 * leases taken at once, b's ahead and unstarted; then `between`; then a's effect, whose completion
 * starts b (`startedNext`), or b's own start mark when it did not — a mark that fails gives b up.
 */
async function groupOfTwo(lease: ReturnType<typeof leaseCore>, between: () => Promise<unknown>) {
  const { core, effect } = lease;
  const a = await core.start({ key: 'a', payload: 'a' });
  const b = await core.startAhead({ key: 'b', payload: 'b' }, { after: 'mail#a' });
  if (a.status !== 'acquired' || b.status !== 'acquired') throw new Error('the leases were not taken');
  await between();
  const { next } = await core.recordCompletion(a.lease, await effect('a')(), b.lease);
  const started = next === 'started' || (await core.markStarted(b.lease).catch(() => false));
  if (!started) return;
  await core.recordCompletion(b.lease, await effect('b')());
}

describe('a restart from an earlier snapshot: one node, persistence by snapshot, no replicas', () => {
  let node: ValkeyServer;
  let admin: Redis;
  beforeEach(async () => {
    node = await server();
    admin = clientOf(node.port);
  });

  describe.each(MODES)('%s', (mode) => {
    it('a lease lost while its effect runs: its completion finds no record, and the next delivery runs the effect again', async () => {
      const lease = leaseCore(clientOf(node.port), mode);
      await admin.save(); // the last snapshot before the lease
      const first = await lease.core.run({ key: 'k', payload: 'k' }, async () => {
        const sent = await lease.effect('k')();
        await node.crashAndRestart();
        return sent;
      });
      expect(first).toEqual({ status: 'executed', result: 'sent k', recorded: false });
      expect(lease.events).toEqual([{ event: 'leaseLost', id: 'mail#k' }]);
      // At-most-once too: its lease was the mark that the effect started, and it is gone.
      expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
      expect(lease.runs.k).toBe(2);
    });

    it('a COMPLETED lost: the record is its lease again, which the next delivery finds expired', async () => {
      const lease = leaseCore(clientOf(node.port), mode);
      const first = await lease.core.run({ key: 'k', payload: 'k' }, async () => {
        await admin.save(); // the last snapshot holds the lease
        return lease.effect('k')();
      });
      expect(first).toMatchObject({ status: 'executed', recorded: true }); // acknowledged
      await node.crashAndRestart();
      lease.clock.advance(LEASE_MS + 1);
      const duplicate = await lease.deliver('k');
      if (mode === 'at-least-once') {
        expect(duplicate).toMatchObject({ status: 'executed' });
        expect(lease.runs.k).toBe(2);
      } else {
        expect(duplicate).toMatchObject({ status: 'in-doubt', reason: { name: 'LeaseExpired' } });
        expect(lease.runs.k).toBe(1);
      }
    });
  });

  it('at-most-once: a lost startedNext lets the redelivery take the next lease over as never started: its effect runs twice', async () => {
    const lease = leaseCore(clientOf(node.port), 'at-most-once');
    await groupOfTwo(lease, () => admin.save());
    expect(lease.runs).toEqual({ a: 1, b: 1 });
    await node.crashAndRestart();
    lease.clock.advance(LEASE_MS + 1);
    expect(await lease.deliver('a')).toMatchObject({ status: 'in-doubt' });
    expect(await lease.deliver('b')).toMatchObject({ status: 'executed' });
    expect(lease.runs).toEqual({ a: 1, b: 2 });
  });

  it('waitForReplicas cannot defend a node without replicas: every acquire fails, and no effect runs', async () => {
    const lease = leaseCore(clientOf(node.port), 'at-most-once', WAIT_FOR_ONE);
    await expect(lease.deliver('k')).rejects.toThrow(RecordNotReplicatedError);
    expect(lease.runs).toEqual({});
  });
});

describe('a failover to a replica cut off before the last writes', () => {
  let primary: ValkeyServer;
  let replica: ValkeyServer;
  let toPrimary: Redis;
  let toReplica: Redis;
  /** The store's client, through the primary endpoint (the proxy). */
  let client: Redis;

  beforeEach(async () => {
    primary = await server();
    replica = await server({ replicaOf: primary });
    toPrimary = clientOf(primary.port);
    toReplica = clientOf(replica.port);
    proxy = await startTcpFaultProxy(primary.port);
    client = clientOf(proxy.port);
    await replicasCaughtUp(toPrimary, 1);
  });

  /** The replica stops replicating: promoted later, it has what it had now. */
  const cutOff = async () => {
    await replicasCaughtUp(toPrimary, 1);
    await toReplica.replicaof('NO', 'ONE');
  };
  /**
   * The primary endpoint now leads to the promoted replica, and the old primary comes back as its
   * replica, dropping what the promoted one never had: WAIT has a replica to count again.
   */
  const failOver = async () => {
    proxy?.failOver(replica.port);
    await toPrimary.replicaof('127.0.0.1', String(replica.port));
    await replicasCaughtUp(toReplica, 1);
  };

  describe.each(MODES)('%s', (mode) => {
    it('without the defence, a lease and completion written after the cut are lost: the effect runs twice', async () => {
      const lease = leaseCore(client, mode);
      await cutOff();
      expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
      await failOver();
      expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
      expect(lease.runs.k).toBe(2);
    });

    it('with waitForReplicas, the acquire after the cut fails before the effect: it runs once, after the failover', async () => {
      const lease = leaseCore(client, mode, WAIT_FOR_ONE);
      await cutOff();
      const refused = lease.deliver('k');
      await expect(refused).rejects.toThrow(RecordNotReplicatedError);
      await expect(refused).rejects.toMatchObject({ retryable: true, acknowledged: 0, replicas: 1 });
      expect(lease.runs).toEqual({});
      await failOver();
      expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
      expect(lease.runs.k).toBe(1);
    });

    it.each([
      ['without the defence, the message is acknowledged on a completion the failover loses', undefined],
      [
        'with waitForReplicas, the completion is reported not written: the message is not acknowledged',
        WAIT_FOR_ONE,
      ],
    ])('a completion after the cut: %s', async (_, wait) => {
      const lease = leaseCore(client, mode, wait);
      const first = await lease.core.run({ key: 'k', payload: 'k' }, async () => {
        await cutOff(); // the lease is on the replica; the completion will not be
        return lease.effect('k')();
      });
      expect(first).toMatchObject({ status: 'executed', recorded: wait === undefined });
      expect(lease.events).toEqual(wait ? [{ event: 'completionWriteFailed', id: 'mail#k' }] : []);
      await failOver();
      lease.clock.advance(LEASE_MS + 1);
      // Either way the promoted replica holds the lease: at-least-once runs it again (as when a
      // completion cannot be written to DynamoDB), at-most-once parks it IN_DOUBT.
      const next = await lease.deliver('k');
      expect(next.status).toBe(mode === 'at-least-once' ? 'executed' : 'in-doubt');
      expect(lease.runs.k).toBe(mode === 'at-least-once' ? 2 : 1);
    });
  });

  it('at-most-once without the defence: a startedNext written after the cut is lost, and the next effect runs twice', async () => {
    const lease = leaseCore(client, 'at-most-once');
    await groupOfTwo(lease, cutOff);
    expect(lease.runs).toEqual({ a: 1, b: 1 });
    await failOver();
    lease.clock.advance(LEASE_MS + 1);
    expect(await lease.deliver('a')).toMatchObject({ status: 'in-doubt' });
    expect(await lease.deliver('b')).toMatchObject({ status: 'executed' });
    expect(lease.runs).toEqual({ a: 1, b: 2 });
  });

  it('at-most-once with waitForReplicas: neither the completion nor the start mark is acknowledged, so the next effect waits for the failover and runs once', async () => {
    const lease = leaseCore(client, 'at-most-once', WAIT_FOR_ONE);
    await groupOfTwo(lease, cutOff);
    expect(lease.runs).toEqual({ a: 1 });
    await failOver();
    lease.clock.advance(LEASE_MS + 1);
    expect(await lease.deliver('a')).toMatchObject({ status: 'in-doubt' });
    expect(await lease.deliver('b')).toMatchObject({ status: 'executed' });
    expect(lease.runs).toEqual({ a: 1, b: 1 });
  });

  it('sends WAIT behind the script before its reply: the acknowledgement takes no round trip of its own', async () => {
    await toPrimary.script('LOAD', VALKEY_SCRIPTS.acquire.source);
    const order: string[] = [];
    const recording: ValkeyScriptClient = {
      evalsha: (...args) => {
        order.push('evalsha sent');
        return client.evalsha(...args).finally(() => order.push('evalsha answered'));
      },
      eval: (...args) => client.eval(...args),
      wait: (...args) => {
        order.push('wait sent');
        return client.wait(...args);
      },
      client: (subcommand) => {
        order.push('client id sent');
        return client.client(subcommand);
      },
    };
    const lease = leaseCore(recording, 'at-most-once', WAIT_FOR_ONE);
    await lease.core.start({ key: 'k', payload: 'k' });
    // Bracketed by the connection's id, which tells that WAIT went down the write's connection.
    expect(order).toEqual([
      'client id sent',
      'evalsha sent',
      'wait sent',
      'client id sent',
      'evalsha answered',
    ]);
  });

  it('a WAIT the client sends again after a failover counts nothing of the write made before it: no effect runs on that write', async () => {
    await toPrimary.script('LOAD', VALKEY_SCRIPTS.acquire.source);
    await cutOff();
    let failedOver: Promise<void> | undefined;
    // The script answered; its WAIT waits for the replica cut off; the failover comes then, and the
    // client sends the WAIT again, to the promoted replica, whose own replica is attached.
    const failingOver: ValkeyScriptClient = {
      evalsha: (...args) =>
        client.evalsha(...args).then((reply) => {
          failedOver ??= failOver();
          return reply;
        }),
      eval: (...args) => client.eval(...args),
      wait: (...args) => client.wait(...args),
      client: (subcommand) => client.client(subcommand),
    };
    const lease = leaseCore(failingOver, 'at-most-once', { replicas: 1, timeoutMs: 10_000 });
    await expect(lease.deliver('k')).rejects.toThrow(RecordNotReplicatedError);
    await failedOver;
    expect(lease.runs).toEqual({});
    expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
    expect(lease.runs.k).toBe(1);
  });

  it('an acquire whose answer was lost and which the client sends again waits for the replicas to hold its first try', async () => {
    const lease = leaseCore(client, 'at-most-once', WAIT_FOR_ONE);
    // Held by the server, so that the first try is the EVALSHA that applies.
    await toPrimary.script('LOAD', VALKEY_SCRIPTS.acquire.source);
    // Connected, but acknowledging nothing: the WAIT behind the try sent again must count the first
    // try's write, which this replica never acknowledges.
    replica.freeze();
    proxy?.loseReplies((request) => request.includes(VALKEY_SCRIPTS.acquire.sha));
    await expect(lease.deliver('k')).rejects.toThrow(RecordNotReplicatedError);
    expect(lease.runs).toEqual({});
    replica.thaw();
    expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
    expect(lease.runs.k).toBe(1);
  });
});

describe('what waitForReplicas cannot prevent', () => {
  it('a write one replica acknowledged, lost when another one, cut off before it, is promoted', async () => {
    const primary = await server();
    const acknowledging = await server({ replicaOf: primary });
    const lagging = await server({ replicaOf: primary });
    const toPrimary = clientOf(primary.port);
    const toLagging = clientOf(lagging.port);
    await replicasCaughtUp(toPrimary, 2);
    await toLagging.replicaof('NO', 'ONE');
    proxy = await startTcpFaultProxy(primary.port);
    const lease = leaseCore(clientOf(proxy.port), 'at-most-once', WAIT_FOR_ONE);

    expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
    proxy.failOver(lagging.port);
    for (const node of [primary, acknowledging]) {
      await clientOf(node.port).replicaof('127.0.0.1', String(lagging.port));
    }
    await replicasCaughtUp(toLagging, 2);
    expect(await lease.deliver('k')).toMatchObject({ status: 'executed', recorded: true });
    expect(lease.runs.k).toBe(2);
  });
});
