import { createHash } from 'node:crypto';
import { VALKEY_SCRIPT_PRELUDE, type ValkeyScript } from '../lambdas/idempotency/valkey-scripts.js';

/**
 * The operator's steps on a Valkey cache's records (`oncely in-doubt`, `oncely history`): the
 * DynamoDB updates of cli/operator-records.ts as Lua scripts, each reading, judging and writing in
 * one atomic step, with the store's prelude (valkey-scripts.ts): the same record JSON, `save`'s key
 * expiry (a record with `expiresAt` lives until then plus `VALKEY_KEY_GRACE_MS`, one without it for
 * ever) and `index`'s unresolved sets, changed by the script that changes the record. Here, not in
 * valkey-scripts.ts, so that no consumer's bundle carries them.
 *
 * KEYS and ARGV as the store's: KEYS[1] the record's key (the prefix alone for the scripts that read
 * the index), KEYS[2] and KEYS[3] the IN_DOUBT and RETRY_PENDING sets, ARGV[1] the arguments as JSON
 * with `nowMs`, `nowSec`, `graceMs`. Records read by id beyond KEYS[1] are named `a.prefix .. id`:
 * on a cluster they share the prefix's hash tag, so the slot of KEYS[1].
 */

/** Byte order, as a sorted set orders members of one score (Lua's `<` follows the server's locale). */
const BYTE_ORDER = `
local function byteAfter(x, y)
  local n = math.min(#x, #y)
  for i = 1, n do
    local p, q = string.byte(x, i), string.byte(y, i)
    if p ~= q then return p > q end
  end
  return #x > #y
end
`;

/**
 * The oldest `limit` members of `a.reason`'s set after `a.after` (score `updatedAt`, then member),
 * each with what the table's index projects; `more` when the set holds further ones. A member whose
 * record is gone is skipped: no script leaves one, as the record and its membership change together.
 */
const LIST_UNRESOLVED = `
local set = indexKey(a.reason)
local ids = {}
if a.after then
  for _, m in ipairs(redis.call('ZRANGE', set, a.after.score, a.after.score, 'BYSCORE')) do
    if byteAfter(m, a.after.id) then ids[#ids + 1] = m end
  end
  for _, m in ipairs(redis.call('ZRANGE', set, '(' .. a.after.score, '+inf', 'BYSCORE', 'LIMIT', 0, a.limit + 1)) do
    ids[#ids + 1] = m
  end
else
  ids = redis.call('ZRANGE', set, '-inf', '+inf', 'BYSCORE', 'LIMIT', 0, a.limit + 1)
end
local items = {}
for i = 1, math.min(#ids, a.limit) do
  local raw = redis.call('GET', a.prefix .. ids[i])
  if raw then
    local r = cjson.decode(raw)
    items[#items + 1] = cjson.encode({ id = r.id, unresolved = r.unresolved, error = r.error,
      updatedAt = r.updatedAt, attempts = r.attempts, expiresAt = r.expiresAt })
  end
end
return reply({ r = 'listed', items = items, more = #ids > a.limit })
`;

/** The group of each record's kept message, as [id, group] pairs (none kept: left out). */
const KEPT_GROUPS = `
local groups = {}
for _, id in ipairs(a.ids) do
  local raw = redis.call('GET', a.prefix .. id)
  if raw then
    local r = cjson.decode(raw)
    if type(r.message) == 'table' and type(r.message.groupId) == 'string' then
      groups[#groups + 1] = cjson.encode({ id, r.message.groupId })
    end
  end
end
return reply({ r = 'read', groups = groups })
`;

const READ = `
return redis.call('GET', key)
`;

/**
 * `--as completed`, conditioned as DynamoDB's update: the status, `unresolved` and `updatedAt` as
 * read. A try applied whose answer was lost, sent again, finds its own entry (its time and
 * `resolved-completed` last on a COMPLETED record): done.
 */
const RESOLVE_COMPLETED = `
local old = load()
if old ~= nil and old.status == 'COMPLETED' and type(old.history) == 'table' then
  local last = old.history[#old.history]
  if last and last.o == 'resolved-completed' and last.t == a.nowMs then return reply({ r = 'own' }) end
end
if old == nil or old.status ~= a.read.status or old.unresolved ~= a.read.unresolved or
  (a.read.updatedAt ~= nil and old.updatedAt ~= a.read.updatedAt) then
  return reply({ r = 'conflict', old = old })
end
local r = copy(old)
r.status = 'COMPLETED'
r.updatedAt = a.nowMs
r.expiresAt = a.expiresAt
append(r, a.entry)
r.unresolved = nil
r.message = nil
r.leaseToken = nil
r.leaseExpiresAt = nil
save(old, r)
return reply({ r = 'written' })
`;

/** `--as retry` step (a): IN_DOUBT, alive, keeping its message. Unresolved, it must not expire. */
const MARK_RETRY_PENDING = `
local old = load()
if old == nil or old.status ~= 'IN_DOUBT' or dead(old) or old.message == nil then
  return reply({ r = 'conflict', old = old })
end
local r = copy(old)
r.status = 'FAILED'
r.unresolved = 'RETRY_PENDING'
r.updatedAt = a.nowMs
r.expiresAt = nil
append(r, a.entry)
save(old, r)
return reply({ r = 'written', record = r })
`;

/** `--as retry` step (c): FAILED and RETRY_PENDING; off the list, its message gone, a full TTL. */
const CLEAR_RETRY_PENDING = `
local old = load()
if old == nil or old.status ~= 'FAILED' or old.unresolved ~= 'RETRY_PENDING' then
  return reply({ r = 'conflict', old = old })
end
local r = copy(old)
r.expiresAt = a.expiresAt
append(r, a.entry)
r.unresolved = nil
r.message = nil
save(old, r)
return reply({ r = 'written' })
`;

function script(name: string, ...parts: string[]): ValkeyScript {
  const source = [VALKEY_SCRIPT_PRELUDE, ...parts].join('\n');
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** The operator's scripts, loaded by EVALSHA, or by EVAL when the server lacks one. */
export const VALKEY_OPERATOR_SCRIPTS = {
  listUnresolved: script('listUnresolved', BYTE_ORDER, LIST_UNRESOLVED),
  keptGroups: script('keptGroups', KEPT_GROUPS),
  read: script('operatorRead', READ),
  resolveCompleted: script('resolveCompleted', RESOLVE_COMPLETED),
  markRetryPending: script('markRetryPending', MARK_RETRY_PENDING),
  clearRetryPending: script('clearRetryPending', CLEAR_RETRY_PENDING),
} as const;
