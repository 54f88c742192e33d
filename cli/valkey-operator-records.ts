import { RECORD_WRITE_RETRY, retried } from '../lambdas/common/backoff.js';
import type { HistoryEntry, IdempotencyRecord, UnresolvedReason } from '../lambdas/idempotency/record.js';
import type { ValkeyScript } from '../lambdas/idempotency/valkey-scripts.js';
import { evalScript, scriptCall, type ValkeyScriptClient } from '../lambdas/idempotency/valkey-store.js';
import type { IndexPosition, OperatorRecords, OperatorWrite } from './operator-records.js';
import { VALKEY_OPERATOR_SCRIPTS as SCRIPTS } from './valkey-operator-scripts.js';

/** What a script answered: what it did, and the record it found when its condition failed. */
interface ScriptReply {
  r: string;
  old?: IdempotencyRecord;
  record?: IdempotencyRecord;
  items?: string[] | Record<string, never>;
  groups?: string[] | Record<string, never>;
  more?: boolean;
}

/**
 * The records of a `ValkeyIdempotencyStore` (DESIGN §3.1) as the operator commands read and write
 * them: one script per step (cli/valkey-operator-scripts.ts), on keys `<keyPrefix><id>` and the
 * unresolved index's sets `<keyPrefix>unresolved:<reason>`, as the consumer's store keeps them.
 * A write whose answer is lost (the connection dropped after the server applied it) is sent again,
 * up to 3 tries as the core's record writes, as the AWS SDK resends DynamoDB's: each script finds
 * its own earlier write (`--as completed`: its own entry; the retry's mark: RETRY_PENDING, which the
 * command goes on from; the clear: FAILED), so a resend converges and never sends a message twice.
 */
export class ValkeyOperatorRecords implements OperatorRecords {
  readonly kind = 'valkey' as const;
  readonly #client: ValkeyScriptClient;
  readonly #keyPrefix: string;

  constructor(client: ValkeyScriptClient, keyPrefix: string) {
    this.#client = client;
    this.#keyPrefix = keyPrefix;
  }

  async unresolved(
    reason: UnresolvedReason,
    { limit, after }: { limit: number; after: IndexPosition | undefined; nowMs: number },
  ): Promise<{ items: Partial<IdempotencyRecord>[]; more: boolean }> {
    // Every member is live: an unresolved record in the cache has no expiry (DESIGN §3.1).
    const reply = await this.#run(SCRIPTS.listUnresolved, '', {
      reason,
      limit,
      prefix: this.#keyPrefix,
      ...(after ? { after: { id: after.id, score: String(after.updatedAt) } } : {}),
    });
    const items = listOf(reply.items).map((item) => JSON.parse(item) as Partial<IdempotencyRecord>);
    return { items, more: reply.more === true };
  }

  async keptGroups(ids: readonly string[]): Promise<Map<string, string>> {
    const groups = new Map<string, string>();
    if (ids.length === 0) return groups;
    const reply = await this.#run(SCRIPTS.keptGroups, '', { ids, prefix: this.#keyPrefix });
    for (const pair of listOf(reply.groups)) {
      const [id, group] = JSON.parse(pair) as [string, string];
      groups.set(id, group);
    }
    return groups;
  }

  async read(id: string): Promise<IdempotencyRecord | undefined> {
    const raw = await this.#eval(SCRIPTS.read, id, {});
    return typeof raw === 'string' ? (JSON.parse(raw) as IdempotencyRecord) : undefined;
  }

  resolveCompleted(
    record: IdempotencyRecord,
    { nowMs, expiresAt }: { nowMs: number; expiresAt: number },
  ): Promise<OperatorWrite> {
    const entry: HistoryEntry = { s: 'COMPLETED', t: nowMs, o: 'resolved-completed' };
    return this.#write(SCRIPTS.resolveCompleted, record.id, {
      nowMs,
      expiresAt,
      entry,
      read: { status: record.status, unresolved: record.unresolved, updatedAt: record.updatedAt },
    });
  }

  markRetryPending(id: string, nowMs: number): Promise<OperatorWrite> {
    const entry: HistoryEntry = { s: 'FAILED', t: nowMs, o: 'resolved-retry' };
    return this.#write(SCRIPTS.markRetryPending, id, { nowMs, entry });
  }

  async clearRetryPending(id: string, expiresAt: number): Promise<OperatorWrite> {
    const entry: HistoryEntry = { s: 'FAILED', t: Date.now(), o: 'retry-sent' };
    // One try: the command tries this step again itself (in-doubt-retry.ts).
    return writeOf(await this.#run(SCRIPTS.clearRetryPending, id, { expiresAt, entry }));
  }

  /** A conditional write, sent again when it fails otherwise (its answer may be lost): see the class. */
  async #write(script: ValkeyScript, id: string, args: Record<string, unknown>): Promise<OperatorWrite> {
    const sent = await retried(RECORD_WRITE_RETRY, () => this.#run(script, id, args));
    if (sent.value === undefined) throw sent.error;
    return writeOf(sent.value);
  }

  async #run(script: ValkeyScript, id: string, args: Record<string, unknown>): Promise<ScriptReply> {
    return JSON.parse(String(await this.#eval(script, id, args))) as ScriptReply;
  }

  /** EVALSHA, and EVAL if the server lacks the script, as the store sends its own. */
  #eval(script: ValkeyScript, id: string, args: Record<string, unknown>): Promise<unknown> {
    return evalScript(this.#client, script, scriptCall(this.#keyPrefix, id, args, Date.now));
  }
}

/** A script's answer as an operator write's outcome. */
function writeOf(reply: ScriptReply): OperatorWrite {
  if (reply.r === 'written' || reply.r === 'own') {
    return { written: true, ...(reply.record ? { record: reply.record } : {}) };
  }
  return { written: false, now: reply.old, cause: undefined };
}

/** A list a script answered: Lua's cjson encodes an empty one as `{}`. */
function listOf(value: string[] | Record<string, never> | undefined): string[] {
  return Array.isArray(value) ? value : [];
}
