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

/** `WAIT numreplicas timeout` on the connection the writes went down: how many replicas have them. */
export type WaitCommand = (numreplicas: number, timeout: number) => Promise<number>;

/** What the store waits for, and how it asks. */
export interface ReplicaWaiting {
  wait: ValkeyReplicaWait;
  command: WaitCommand;
}

/**
 * The store's `waitForReplicas`, checked: both numbers positive integers (a timeout of 0 would make
 * the server wait for ever), and a client that can send WAIT.
 */
export function replicaWaiting(
  wait: ValkeyReplicaWait | undefined,
  command: WaitCommand | undefined,
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
  if (typeof command !== 'function') {
    throw new IdempotencyConfigurationError(
      `${where}: the client must have wait() (WAIT), as iovalkey's \`Redis\` has; a cluster client does not ` +
        'do: WAIT must go down the connection the write went down.',
    );
  }
  return { wait: { replicas: wait.replicas, timeoutMs: wait.timeoutMs }, command };
}

/**
 * Sends `write`, and WAIT right behind it on the same connection, before its reply: one round trip
 * plus the replicas' acknowledgement. WAIT counts the replicas holding every write this connection
 * made, so it covers the script's write, or, when the script wrote nothing, the connection's last
 * one. Resolves to the write's reply once `wait.replicas` have it; else throws
 * `RecordNotReplicatedError`: the write is on the primary, but a failover may lose it.
 */
export async function acknowledgedByReplicas<T>(
  write: () => Promise<T>,
  { wait, command }: ReplicaWaiting,
  id: string,
): Promise<T> {
  const reply = write();
  const acknowledged = command(wait.replicas, wait.timeoutMs);
  let value: T;
  try {
    value = await reply;
  } catch (error) {
    acknowledged.catch(() => undefined); // the write's error is the one to tell
    throw error;
  }
  const count = await acknowledged;
  if (count < wait.replicas) throw new RecordNotReplicatedError(id, count, wait.replicas, wait.timeoutMs);
  return value;
}
