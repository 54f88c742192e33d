import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { IdempotencyConfigurationError, RecordNotReplicatedError } from './errors.js';

/**
 * How many replicas must hold a write an effect's safety rests on before `ValkeyIdempotencyStore`
 * reports it done, and how long the server waits for them (DESIGN §3.1): `WAIT replicas timeoutMs`.
 */
export interface ValkeyReplicaWait {
  /** Replicas that must acknowledge the write (`WAIT`'s numreplicas): at least 1, at most the primary's replicas. */
  replicas: number;
  /**
   * How long the server waits for them, in milliseconds (`WAIT`'s timeout): at least 1, and below
   * the client's own bound on a command (`commandTimeout`), or the client gives up first.
   */
  timeoutMs: number;
}

const REPLICA_WAIT_KEYS = { replicas: true, timeoutMs: true } satisfies KnownKeys<ValkeyReplicaWait>;

/** What the store sends to wait for replicas, down the connection its writes go down. */
export interface ReplicaCommands {
  /** `WAIT numreplicas timeout`: how many replicas hold this connection's writes. */
  wait(numreplicas: number, timeout: number): Promise<number>;
  /** `CLIENT ID`: the connection's id on the server. */
  connectionId(): Promise<number>;
}

/** What the store waits for, and how it asks. */
export interface ReplicaWaiting {
  wait: ValkeyReplicaWait;
  commands: ReplicaCommands;
}

/**
 * The store's `waitForReplicas`, checked: both numbers positive integers (a timeout of 0 would make
 * the server wait for ever), and a client that can send WAIT and CLIENT ID.
 */
export function replicaWaiting(
  wait: ValkeyReplicaWait | undefined,
  commands: Partial<ReplicaCommands>,
): ReplicaWaiting | undefined {
  if (wait === undefined) return undefined;
  const where = 'new ValkeyIdempotencyStore({ waitForReplicas })';
  refuseUnknownKeys(where, wait, REPLICA_WAIT_KEYS);
  for (const name of ['replicas', 'timeoutMs'] as const) {
    if (!(Number.isInteger(wait[name]) && wait[name] >= 1)) {
      throw new IdempotencyConfigurationError(
        `${where}: ${name} must be a positive integer, not ${wait[name]}.`,
      );
    }
  }
  const { wait: waitCommand, connectionId } = commands;
  if (typeof waitCommand !== 'function' || typeof connectionId !== 'function') {
    throw new IdempotencyConfigurationError(
      `${where}: the client must have wait() (WAIT) and client('ID') (CLIENT ID), as iovalkey's \`Redis\` ` +
        'has; a cluster client does not do: WAIT must go down the connection the write went down.',
    );
  }
  return {
    wait: { replicas: wait.replicas, timeoutMs: wait.timeoutMs },
    commands: { wait: waitCommand, connectionId },
  };
}

/**
 * Sends `write` with WAIT right behind it, before its reply (one round trip plus the replicas'
 * acknowledgement), bracketed by CLIENT ID. WAIT counts the replicas holding every write its
 * connection made: so it covers the script's write (or, when the script wrote nothing, the
 * connection's last one) only on the write's connection. A client that reconnects sends again what
 * was unanswered, on a new connection: after a failover, a WAIT sent again there would count the
 * promoted node's replicas, which never had the write. The two ids tell: the same, and every
 * command went down one connection. Resolves to the write's reply once `wait.replicas` have it;
 * else throws `RecordNotReplicatedError`: the write is on the primary, but a failover may lose it.
 */
export async function acknowledgedByReplicas<T>(
  write: () => Promise<T>,
  { wait, commands }: ReplicaWaiting,
  id: string,
): Promise<T> {
  const before = commands.connectionId();
  const reply = write();
  const acknowledged = commands.wait(wait.replicas, wait.timeoutMs);
  const after = commands.connectionId();
  const [first, value, count, last] = await Promise.allSettled([before, reply, acknowledged, after]);
  // The write's error first: the others are about a write that failed.
  for (const settled of [value, count, first, last]) if (settled.status === 'rejected') throw settled.reason;
  // Two ids: the WAIT went down another connection than the write, and counted none of it.
  const replicas = fulfilled(first) === fulfilled(last) ? fulfilled(count) : 0;
  if (replicas < wait.replicas) {
    throw new RecordNotReplicatedError(id, replicas, wait.replicas, wait.timeoutMs);
  }
  return fulfilled(value);
}

/** The value of a result known to be fulfilled. */
function fulfilled<V>(settled: PromiseSettledResult<V>): V {
  return (settled as PromiseFulfilledResult<V>).value;
}
