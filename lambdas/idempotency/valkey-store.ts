import { randomUUID } from 'node:crypto';
import { RECORD_WRITE_RETRY, retried } from '../common/backoff.js';
import { type KnownKeys, refuseUnknownKeys } from '../common/known-keys.js';
import { IdempotencyConfigurationError, type StoredError } from './errors.js';
import { acquireEntry, MAX_HISTORY_ENTRIES, shortToken } from './history.js';
import {
  type AcquireInput,
  type AcquireResult,
  grantedLease,
  type Lease,
  type LeaseStore,
} from './lease-store.js';
import {
  DEFAULT_RECORD_TTL_SECONDS,
  type DeadLetterClaim,
  type DeadLetterMark,
  deadLetterLogId,
  deadLetterMarkId,
  type HistoryEntry,
  type IdempotencyRecord,
  IN_DOUBT_REPORT_PENDING,
  type KeptMessage,
  keepable,
  type RecordStatus,
  type UnresolvedReason,
} from './record.js';
import {
  acknowledgedByReplicas,
  type ReplicaWaiting,
  replicaWaiting,
  type ValkeyReplicaWait,
} from './valkey-replicas.js';
import { VALKEY_SCRIPTS, type ValkeyScript } from './valkey-scripts.js';

/**
 * What the store needs of a Valkey client: EVALSHA and EVAL, answering with the script's reply,
 * and WAIT with `waitForReplicas`. `iovalkey`'s `Redis` (the client Oncely is tested with,
 * bench/VALKEY-CLIENTS.md) and `ioredis`' have them; the store imports neither, so a consumer that
 * keeps its records in DynamoDB never loads one.
 */
export interface ValkeyScriptClient {
  /** Runs the script the server holds under `sha1` on `numkeys` keys, then its arguments; fails `NOSCRIPT` if it holds none. */
  evalsha(sha1: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /** Runs (and loads) `script` on `numkeys` keys, then its arguments. */
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>;
  /**
   * `WAIT numreplicas timeout`: how many replicas hold this connection's writes. Needed only with
   * `waitForReplicas`.
   */
  wait?(numreplicas: number, timeout: number): Promise<number>;
  /**
   * `CLIENT ID`: the connection's id, which tells that a WAIT went down its write's connection.
   * Needed only with `waitForReplicas`.
   */
  client?(subcommand: 'ID'): Promise<number>;
}

/** The Valkey server (or Redis OSS 7, or ElastiCache) a `ValkeyIdempotencyStore` keeps its records in. */
export interface ValkeyIdempotencyStoreOptions {
  /**
   * A client of the server: `new Redis({ host, port })` from `iovalkey`. Its own retries stand for
   * the AWS SDK's: `iovalkey` sends a command again after a reconnect (`autoResendUnfulfilledCommands`),
   * and a script applied whose answer was lost finds its own lease token when sent again.
   */
  client: ValkeyScriptClient;
  /**
   * Put before every key the store writes: records (`<prefix><namespace>#<key>`), DLQ marks and
   * logs (`<prefix>oncely/…`), and the unresolved index (`<prefix>unresolved:IN_DOUBT`,
   * `<prefix>unresolved:RETRY_PENDING`), so that one server can hold several stores.
   * @default 'oncely:'
   */
  keyPrefix?: string;
  /**
   * Lifetime of a record in seconds; must outlive queue + DLQ retention (the default is past SQS's
   * longest retention of both).
   * @default 2_592_000 (30 days)
   */
  ttlSeconds?: number;
  /**
   * Clock in epoch milliseconds, passed into every script: conditions are judged by it, never by
   * the server's clock. Tests move it to expire leases and records.
   * @default Date.now
   */
  now?: () => number;
  /**
   * Valkey replicates asynchronously: a failover can lose the primary's last writes, and with them
   * a lease or a completion, so that an effect runs again (DESIGN §3.1). With this, each write an
   * effect's safety rests on — the acquire, the at-most-once start mark, the completion — is
   * followed by `WAIT replicas timeoutMs` in the same round trip, and reported done only once that
   * many replicas acknowledged it; fewer is `RecordNotReplicatedError`, a store failure: no effect
   * starts on the write, no message is acknowledged on it. Needs a client of one node that sends
   * WAIT down the write's connection and has `wait()` and `client('ID')` (`iovalkey`'s `Redis`),
   * and a primary with replicas.
   * @default none: a write is done once the primary applied it
   */
  waitForReplicas?: ValkeyReplicaWait;
}

const VALKEY_STORE_OPTION_KEYS = {
  client: true,
  keyPrefix: true,
  ttlSeconds: true,
  now: true,
  waitForReplicas: true,
} satisfies KnownKeys<ValkeyIdempotencyStoreOptions>;

/** `ValkeyIdempotencyStoreOptions.keyPrefix` when none is given. */
export const DEFAULT_VALKEY_KEY_PREFIX = 'oncely:';

/**
 * How long a key outlives its record's `expiresAt`. Conditions count a record past `expiresAt` as
 * absent by the store's clock, as DynamoDB's do; the server deletes the key by its own clock. The
 * grace keeps a server clock running up to an hour ahead of the consumers' from deleting a record
 * they still count as alive (DynamoDB's TTL deletion lags by hours for the same reason, §3).
 */
export const VALKEY_KEY_GRACE_MS = 3_600_000; // not 60 * 60 * 1000, which esbuild keeps in every consumer's bundle

/**
 * Marks the writes an effect's safety rests on, which `waitForReplicas` makes wait for the replicas
 * (DESIGN §3.1): the acquire (the lease, and at a record's turn at-most-once, the mark that its
 * effect may have started), the start mark of a lease taken ahead, and the completion (the message
 * is acknowledged on it; its `startedNext` starts the next effect). Every other write, lost in a
 * failover, leaves the record as before it, which the next delivery settles as it settles that
 * write failing: a lost FAILED, REJECTED or IN_DOUBT leaves the lease, which expires (re-run, or
 * parked IN_DOUBT); a lost give-back leaves a lease no effect ran under. A write before a waited one
 * on the same connection (the fence before a takeover, §4.1) is covered by its WAIT.
 */
const REPLICATED = true;

/** What a script answered: what it did, and the record it found when the caller needs it. */
interface ScriptReply {
  r: string;
  old?: IdempotencyRecord;
}

/**
 * The lease-mode records kept in Valkey (DESIGN §3.1), for consumers whose effects are not DynamoDB
 * writes and who would rather pay Valkey's round trip than DynamoDB's. The same contract as
 * `DynamoDBIdempotencyStore`'s lease steps: the same record (one JSON string per key), fenced on
 * the lease token after the acquire, the at-most-once chain and IN_DOUBT, the history and its
 * bound, the DLQ marks. Each method is one Lua script, one round trip (EVALSHA; EVAL once more if
 * the server lost its script cache). Transactional mode needs DynamoDB (`TransactionalStoreError`).
 *
 * A record's key expires with its `expiresAt` (plus an hour of grace, `VALKEY_KEY_GRACE_MS`): IN_PROGRESS,
 * COMPLETED, FAILED and REJECTED records, DLQ marks and logs live the TTL from their acquire (or
 * `keepUntil`); an IN_DOUBT record has no expiry until an operator resolves it. The unresolved
 * index is one sorted set per reason, scored by `updatedAt`. The keys of one record and the index
 * are written by one script: on a cluster they must share a slot (a `keyPrefix` with a hash tag,
 * `'{oncely}:'`), so a single-shard server is what this store is for.
 *
 * @example
 * ```ts
 * import { Redis } from 'iovalkey';
 * const store = new ValkeyIdempotencyStore({ client: new Redis({ host: process.env.VALKEY_HOST }) });
 * export const handler = middy().use(fifoBatch({ store, operations }));
 * ```
 */
export class ValkeyIdempotencyStore implements LeaseStore {
  /** {@inheritDoc LeaseStore.kind} */
  readonly kind = 'valkey' as const;
  /** @internal */
  readonly keyPrefix: string;
  /** @internal */
  readonly ttlSeconds: number;
  /** @internal */
  readonly now: () => number;
  readonly #client: ValkeyScriptClient;
  readonly #replicas: ReplicaWaiting | undefined;

  constructor(options: ValkeyIdempotencyStoreOptions) {
    refuseUnknownKeys('new ValkeyIdempotencyStore()', options, VALKEY_STORE_OPTION_KEYS);
    const client = options.client as Partial<ValkeyScriptClient> | undefined;
    if (typeof client?.evalsha !== 'function' || typeof client.eval !== 'function') {
      throw new IdempotencyConfigurationError(
        'new ValkeyIdempotencyStore(): client must be a Valkey client with evalsha() and eval(), such as ' +
          "iovalkey's `new Redis({ host, port })`.",
      );
    }
    const { ttlSeconds = DEFAULT_RECORD_TTL_SECONDS } = options;
    if (!(Number.isInteger(ttlSeconds) && ttlSeconds >= 1)) {
      throw new IdempotencyConfigurationError(
        `new ValkeyIdempotencyStore(): ttlSeconds must be a positive integer, not ${ttlSeconds}.`,
      );
    }
    this.#client = options.client;
    this.#replicas = replicaWaiting(options.waitForReplicas, {
      wait: options.client.wait?.bind(options.client),
      connectionId: options.client.client?.bind(options.client, 'ID'),
    });
    this.keyPrefix = options.keyPrefix ?? DEFAULT_VALKEY_KEY_PREFIX;
    this.ttlSeconds = ttlSeconds;
    this.now = options.now ?? Date.now;
  }

  /**
   * The key of the unresolved index's set for `reason`. No record id lacks a "#", so it never
   * names a record. @internal
   */
  unresolvedKey(reason: UnresolvedReason): string {
    return `${this.keyPrefix}unresolved:${reason}`;
  }

  /**
   * Takes the lease as `DynamoDBIdempotencyStore.acquire` does, in one script: it creates an absent
   * record, takes an expired, FAILED or expired-lease one, or answers with the record in the way.
   * A try sent again after its answer was lost finds its own token: the lease is ours. A try that
   * fails otherwise (or that too few replicas acknowledged) may have been applied: the lease is
   * given back and the error thrown.
   * @internal
   */
  async acquire(input: AcquireInput): Promise<AcquireResult> {
    const now = this.now();
    const token = randomUUID();
    const leaseExpiresAt = now + input.leaseMs;
    const recordExpiresAt = this.#recordExpiresAt(now);
    const runCounted = input.countRun ?? true;
    const lease = (old: Partial<IdempotencyRecord>, attempt?: number, tookOver?: boolean) =>
      grantedLease(
        input,
        { token, expiresAt: leaseExpiresAt, recordExpiresAt, runCounted },
        old,
        attempt,
        tookOver,
      );
    let reply: ScriptReply;
    try {
      reply = await this.#run(
        VALKEY_SCRIPTS.acquire,
        input.id,
        {
          id: input.id,
          token,
          hash: input.payloadHash,
          nowMs: now,
          leaseExpiresAt,
          expiresAt: recordExpiresAt,
          run: runCounted ? 1 : 0,
          unstarted: input.unstarted === true,
          after: input.unstarted ? input.after : undefined,
          takeOverExpired: input.takeOverExpiredLease,
          takeOverUnstarted: input.takeOverUnstarted,
          firstEntry: acquireEntry(now, token, input.delivery, true),
          entry: acquireEntry(now, token, input.delivery),
          maxHistory: MAX_HISTORY_ENTRIES,
        },
        REPLICATED,
      );
    } catch (error) {
      await this.releaseWithRetries({ id: input.id, token } as Lease);
      throw error;
    }
    switch (reply.r) {
      case 'created':
        return lease({});
      case 'taken':
        return lease(reply.old ?? {});
      case 'own': {
        // Applied before its answer was lost: whether it created the record or took one over is
        // gone with that answer. A history of one entry is the one it created, with its own run.
        const own = reply.old ?? ({} as IdempotencyRecord);
        if ((own.history?.length ?? 0) <= 1) return lease({});
        return lease(own, (own.attempts ?? 1) + (runCounted ? 0 : 1), true);
      }
      default:
        return { acquired: false, existing: reply.old as IdempotencyRecord };
    }
  }

  /** The record as it is now, or undefined if there is none. @internal */
  async read(id: string): Promise<IdempotencyRecord | undefined> {
    const raw = await this.#eval(VALKEY_SCRIPTS.read, id, {});
    return typeof raw === 'string' ? (JSON.parse(raw) as IdempotencyRecord) : undefined;
  }

  /** Lets an unstarted lease's effect start: removes `unstarted`, fenced. @internal */
  async markStarted(lease: Lease): Promise<boolean> {
    const reply = await this.#run(
      VALKEY_SCRIPTS.touch,
      lease.id,
      {
        token: lease.token,
        set: { updatedAt: this.now() },
        unset: ['unstarted'],
      },
      REPLICATED,
    );
    return reply.r === 'written';
  }

  /** Counts the run of a lease taken without counting it: `attempts = lease.attempt`, fenced. @internal */
  async countRun(lease: Lease): Promise<boolean> {
    const reply = await this.#run(VALKEY_SCRIPTS.touch, lease.id, {
      token: lease.token,
      set: { attempts: lease.attempt, updatedAt: this.now() },
      unset: [],
    });
    return reply.r === 'written';
  }

  /** Records the effect as done; with `next`, the same write starts that lease. @internal */
  complete(lease: Lease, outcome: { result?: string; resultBytes?: number }, next?: Lease): Promise<boolean> {
    return this.#outcome(
      lease,
      'COMPLETED',
      {
        result: outcome.result,
        resultBytes: outcome.resultBytes,
        startedNext: next ? { id: next.id, token: next.token } : undefined,
      },
      [],
      REPLICATED,
    );
  }

  /** Records a retryable failure; with `deadLetteredMessageId`, the message sent to the DLQ for it. @internal */
  fail(lease: Lease, error: StoredError, deadLetteredMessageId?: string): Promise<boolean> {
    return this.#outcome(lease, 'FAILED', {
      error,
      attemptsAtDeadLetter: deadLetteredMessageId ? lease.attempt : undefined,
      deadLetteredMessageId,
    });
  }

  /** Records a permanent failure. @internal */
  reject(lease: Lease, error: StoredError): Promise<boolean> {
    return this.#outcome(lease, 'REJECTED', { error });
  }

  /** IN_DOUBT, fenced: unresolved (in the index), without expiry, keeping `message` if it fits. @internal */
  markInDoubt(lease: Lease, error: StoredError, message?: KeptMessage): Promise<boolean> {
    return this.#outcome(lease, 'IN_DOUBT', { error, message: keepable(message), unresolved: 'IN_DOUBT' }, [
      'expiresAt',
    ]);
  }

  /**
   * Parks another owner's expired lease IN_DOUBT, fenced on its token; true if this call (or its
   * own earlier try, its report token says) did, else the record as it is now. @internal
   */
  async parkExpiredLease(
    record: IdempotencyRecord,
    reason: StoredError,
    { message, fence = false }: { message?: KeptMessage; fence?: boolean } = {},
  ): Promise<true | IdempotencyRecord | undefined> {
    const now = this.now();
    const report = fence ? IN_DOUBT_REPORT_PENDING : randomUUID();
    const reply = await this.#run(VALKEY_SCRIPTS.park, record.id, {
      leaseToken: record.leaseToken,
      nowMs: now,
      report,
      error: reason,
      message: fence ? undefined : keepable(message),
      entry: { s: 'IN_DOUBT', t: now, l: shortToken(record.leaseToken), x: reason.name },
    });
    if (reply.r === 'parked') return true;
    if (report !== IN_DOUBT_REPORT_PENDING && reply.old?.inDoubtReport === report) return true;
    return reply.old;
  }

  /** Claims the pending report of a record a fence parked, for this delivery. @internal */
  async claimInDoubtReport(id: string, message?: KeptMessage): Promise<boolean> {
    const report = randomUUID();
    const reply = await this.#run(VALKEY_SCRIPTS.claimReport, id, { report, message: keepable(message) });
    return reply.r === 'claimed' || reply.old?.inDoubtReport === report;
  }

  /** Gives the record up untouched by any effect. @internal */
  async release(lease: Lease): Promise<boolean> {
    const reply = await this.#run(VALKEY_SCRIPTS.release, lease.id, { token: lease.token });
    return reply.r !== 'kept';
  }

  /** {@link release}, tried a few times with backoff. @internal */
  releaseWithRetries(lease: Lease) {
    return retried(RECORD_WRITE_RETRY, () => this.release(lease));
  }

  /** Deletes another owner's expired lease that was taken ahead and never started. @internal */
  async releaseUnstarted(record: IdempotencyRecord): Promise<boolean> {
    const reply = await this.#run(VALKEY_SCRIPTS.release, record.id, {
      token: record.leaseToken ?? '',
      unstartedOnly: true,
      nowMs: this.now(),
    });
    return reply.r !== 'kept';
  }

  /** Makes a live record last at least until `untilSec`, never reviving or shortening one. @internal */
  async keepUntil(id: string, untilSec: number): Promise<boolean> {
    const reply = await this.#run(VALKEY_SCRIPTS.keepUntil, id, { untilSec });
    return reply.r === 'extended';
  }

  /** Claims the send of an SQS message to the DLQ (`DynamoDBIdempotencyStore.claimDeadLetter`). @internal */
  async claimDeadLetter(messageId: string, claimMs: number): Promise<DeadLetterClaim> {
    const now = this.now();
    const token = randomUUID();
    const id = deadLetterMarkId(messageId);
    const reply = await this.#run(VALKEY_SCRIPTS.claimDeadLetter, id, {
      id,
      token,
      nowMs: now,
      claimExpiresAt: now + claimMs,
      expiresAt: this.#recordExpiresAt(now),
    });
    const existing = reply.old as Partial<DeadLetterMark> | undefined;
    if (reply.r === 'claimed' || existing?.claimToken === token) return { status: 'claimed', token };
    return existing?.deadLetteredAt === undefined ? { status: 'claimed-elsewhere' } : { status: 'sent' };
  }

  /** Gives up a claim whose send failed; never a sent mark. @internal */
  async releaseDeadLetterClaim(messageId: string, token: string): Promise<void> {
    await this.#run(VALKEY_SCRIPTS.releaseDeadLetterClaim, deadLetterMarkId(messageId), { token });
  }

  /** Marks an SQS message as sent to the DLQ, for as long as a record lives. @internal */
  async markDeadLettered(messageId: string): Promise<void> {
    const now = this.now();
    const id = deadLetterMarkId(messageId);
    await this.#run(VALKEY_SCRIPTS.markDeadLettered, id, {
      id,
      nowMs: now,
      expiresAt: this.#recordExpiresAt(now),
    });
  }

  /** Adds a DLQ send to the dead-letter log of `recordId`; a full log takes no more. @internal */
  async logDeadLetter(recordId: string, messageId: string, error: StoredError): Promise<void> {
    const now = this.now();
    const id = deadLetterLogId(recordId);
    const entry: HistoryEntry = { s: 'FAILED', t: now, m: messageId, x: error.name };
    await this.#run(VALKEY_SCRIPTS.logDeadLetter, id, {
      id,
      entry,
      expiresAt: this.#recordExpiresAt(now),
      maxHistory: MAX_HISTORY_ENTRIES,
    });
  }

  /**
   * How many records each unresolved reason holds: the unresolved index's sets, read in one script
   * (the monitor's counts, DESIGN §3.1). Every member is live: an unresolved record has no expiry.
   * @internal
   */
  async countUnresolved(): Promise<{ inDoubt: number; retryPending: number }> {
    // A script names a record's key first; this one reads only the index's (the prefix stands in).
    const reply = (await this.#run(VALKEY_SCRIPTS.countUnresolved, '', {})) as ScriptReply & {
      inDoubt: number;
      retryPending: number;
    };
    return { inDoubt: reply.inDoubt, retryPending: reply.retryPending };
  }

  /**
   * An outcome fenced on the lease. A fence failing because our own earlier try (applied, its
   * answer lost) already wrote this very status is a success: the token stays on the record for that.
   */
  async #outcome(
    lease: Lease,
    status: RecordStatus,
    fields: Record<string, unknown>,
    unset: readonly string[] = [],
    replicated = false,
  ): Promise<boolean> {
    const now = this.now();
    const error = fields.error as StoredError | undefined;
    const deadLettered = fields.deadLetteredMessageId as string | undefined;
    const entry: HistoryEntry = {
      s: status,
      t: now,
      a: lease.attempt,
      l: shortToken(lease.token),
      ...(error ? { x: error.name } : {}),
      ...(deadLettered ? { d: deadLettered } : {}),
    };
    const reply = await this.#run(
      VALKEY_SCRIPTS.outcome,
      lease.id,
      {
        token: lease.token,
        status,
        nowMs: now,
        attempt: lease.attempt,
        // JSON leaves the undefined ones out: a field not given is not written.
        set: fields,
        unset,
        entry,
      },
      replicated,
    );
    return reply.r === 'written' || reply.r === 'own';
  }

  /** Runs a record's script and reads its JSON answer. */
  async #run(
    script: ValkeyScript,
    id: string,
    args: Record<string, unknown>,
    replicated = false,
  ): Promise<ScriptReply> {
    return JSON.parse(String(await this.#eval(script, id, args, replicated))) as ScriptReply;
  }

  /**
   * One round trip: EVALSHA, and EVAL only if the server has not the script (a restart, a failover,
   * SCRIPT FLUSH), which also loads it for the next EVALSHA. The store's clock and grace go with
   * every call. `REPLICATED`, with `waitForReplicas`: WAIT goes right behind each.
   */
  async #eval(
    script: ValkeyScript,
    id: string,
    args: Record<string, unknown>,
    replicated = false,
  ): Promise<unknown> {
    const call = scriptCall(this.keyPrefix, id, args, this.now);
    const replicas = replicated ? this.#replicas : undefined;
    return evalScript(this.#client, script, call, (write) =>
      replicas ? acknowledgedByReplicas(write, replicas, id) : write(),
    );
  }

  #recordExpiresAt(nowMs: number): number {
    return Math.floor(nowMs / 1000) + this.ttlSeconds;
  }
}

/** The server's answer to EVALSHA of a script it does not hold. */
function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * A script's call on `id`'s record, as every script takes it (valkey-scripts.ts): KEYS, the record's
 * key and the unresolved index's sets under `keyPrefix`; ARGV[1], `args` with one instant for the
 * whole step (the caller's `nowMs`, when it took one for the values it sends, else `now()`) and the
 * key grace.
 * @internal
 */
export function scriptCall(
  keyPrefix: string,
  id: string,
  args: Record<string, unknown>,
  now: () => number,
): { keys: string[]; json: string } {
  const nowMs = typeof args.nowMs === 'number' ? args.nowMs : now();
  return {
    keys: [`${keyPrefix}${id}`, `${keyPrefix}unresolved:IN_DOUBT`, `${keyPrefix}unresolved:RETRY_PENDING`],
    json: JSON.stringify({ ...args, nowMs, nowSec: Math.floor(nowMs / 1000), graceMs: VALKEY_KEY_GRACE_MS }),
  };
}

/**
 * One round trip: EVALSHA, and EVAL only if the server has not the script (a restart, a failover,
 * SCRIPT FLUSH), which also loads it for the next EVALSHA. `send` wraps each (WAIT behind it).
 * @internal
 */
export async function evalScript(
  client: ValkeyScriptClient,
  script: ValkeyScript,
  { keys, json }: { keys: string[]; json: string },
  send: (write: () => Promise<unknown>) => Promise<unknown> = (write) => write(),
): Promise<unknown> {
  try {
    return await send(() => client.evalsha(script.sha, keys.length, ...keys, json));
  } catch (error) {
    if (!isNoScript(error)) throw error;
    return send(() => client.eval(script.source, keys.length, ...keys, json));
  }
}
