import { createHash } from 'node:crypto';

/**
 * The Lua scripts of `ValkeyIdempotencyStore` (DESIGN §3.1): each conditional step of a record is
 * one script, so that its condition and its write are one atomic step on the server, as a
 * DynamoDB condition expression is. A record is one JSON string (`cjson`, built into Valkey's Lua).
 *
 * Every script takes KEYS[1], the record's key, KEYS[2] and KEYS[3], the unresolved index's sorted
 * sets (IN_DOUBT, RETRY_PENDING), and ARGV[1], its arguments as JSON; it answers JSON: `r`, what
 * it did, and `old`, the record it found where the caller needs it (DynamoDB's ALL_OLD). Time comes
 * in the arguments (`nowMs`, `nowSec`), from the store's clock, never from the server's TIME: the
 * conditions are judged by the consumer's clock, as DynamoDB's are.
 */
export interface ValkeyScript {
  readonly name: string;
  readonly source: string;
  /** What EVALSHA names it by. */
  readonly sha: string;
}

/**
 * What every script shares: reading, judging and writing a record, and keeping the index. Exported
 * for the operator's scripts (cli/valkey-operator-scripts.ts), which write records by the same rules.
 * @internal
 */
export const VALKEY_SCRIPT_PRELUDE = `
local key = KEYS[1]
local a = cjson.decode(ARGV[1])
local function load()
  local raw = redis.call('GET', key)
  if not raw then return nil end
  return cjson.decode(raw)
end
local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end
-- Past its expiresAt a record counts as absent, though its key outlives that by the grace.
local function dead(r) return r.expiresAt ~= nil and r.expiresAt <= a.nowSec end
local function indexKey(reason)
  if reason == 'IN_DOUBT' then return KEYS[2] end
  return KEYS[3]
end
-- The unresolved index: a record carrying 'unresolved' is in that reason's set, scored by updatedAt.
local function index(old, new)
  local was = old and old.unresolved
  local now = new and new.unresolved
  if was and was ~= now then redis.call('ZREM', indexKey(was), old.id) end
  if now then redis.call('ZADD', indexKey(now), new.updatedAt or 0, new.id) end
end
-- The key lives as long as the record's expiresAt says (plus the grace); without one, for ever.
local function save(old, r)
  if r.expiresAt ~= nil then
    redis.call('SET', key, cjson.encode(r), 'PXAT', r.expiresAt * 1000 + a.graceMs)
  else
    redis.call('SET', key, cjson.encode(r))
  end
  index(old, r)
end
local function append(r, entry)
  local h = r.history or {}
  h[#h + 1] = entry
  r.history = h
end
local function reply(t) return cjson.encode(t) end
`;

/** Mirrors history.ts' `trimmedHistory`: a full history keeps its first entry, a count, the latest. */
const APPEND_OR_TRIM = `
local function appendOrTrim(r, entry)
  local h = r.history or {}
  if #h >= a.maxHistory then
    local rest = {}
    for i = 2, #h do rest[#rest + 1] = h[i] end
    local earlier = 0
    if rest[1] and rest[1].s == 'TRIMMED' then earlier = rest[1].n or 0 end
    local from = math.max(1, #rest - a.maxHistory / 2 + 1)
    local trimmed = { h[1], { s = 'TRIMMED', t = entry.t, n = 0 } }
    local kept = 0
    for i = from, #rest do
      trimmed[#trimmed + 1] = rest[i]
      kept = kept + 1
    end
    local earlierEntry = 0
    if earlier > 0 then earlierEntry = 1 end
    trimmed[2].n = #rest - kept - earlierEntry + earlier
    h = trimmed
  end
  h[#h + 1] = entry
  r.history = h
end
`;

/** Whether the record is still IN_PROGRESS under this lease: the fence of every write after the acquire. */
const FENCED = `
local function fenced(r, token) return r ~= nil and r.status == 'IN_PROGRESS' and r.leaseToken == token end
`;

const ACQUIRE = `
local old = load()
if old == nil then
  local r = { id = a.id, status = 'IN_PROGRESS', payloadHash = a.hash, leaseToken = a.token,
    leaseExpiresAt = a.leaseExpiresAt, expiresAt = a.expiresAt, updatedAt = a.nowMs, attempts = a.run,
    attemptsAtDeadLetter = 0, history = { a.firstEntry } }
  if a.unstarted then r.unstarted = true end
  if a.after then r.after = a.after end
  save(nil, r)
  return reply({ r = 'created' })
end
-- Our own earlier try, applied with its answer lost and sent again: the lease is ours. Written
-- again: sent again on a new connection, this try has no write of its own there for a WAIT behind
-- it to count (WAIT counts the replicas holding the connection's writes); the same record written
-- anew follows the first try's write in the replication stream, so a replica holding it holds both.
if old.status == 'IN_PROGRESS' and old.leaseToken == a.token then
  save(old, old)
  return reply({ r = 'own', old = old })
end
local takeover = old.status == 'IN_PROGRESS' and (old.leaseExpiresAt or 0) <= a.nowMs and (a.takeOverExpired or
  (old.unstarted and (old.after == nil or (a.takeOverUnstarted ~= nil and old.leaseToken == a.takeOverUnstarted))))
if not (dead(old) or (old.payloadHash == a.hash and (old.status == 'FAILED' or takeover))) then
  return reply({ r = 'existing', old = old })
end
local prior = { status = old.status, attempts = old.attempts, attemptsAtDeadLetter = old.attemptsAtDeadLetter,
  deadLetteredMessageId = old.deadLetteredMessageId, error = old.error }
local r = copy(old)
r.status = 'IN_PROGRESS'
r.payloadHash = a.hash
r.leaseToken = a.token
r.leaseExpiresAt = a.leaseExpiresAt
r.expiresAt = a.expiresAt
r.updatedAt = a.nowMs
-- A record past its TTL but not deleted yet goes on counting its attempts, as in DynamoDB.
r.attempts = (old.attempts or 0) + a.run
r.attemptsAtDeadLetter = old.attemptsAtDeadLetter or 0
r.unstarted = nil
if a.unstarted then r.unstarted = true end
r.after = a.after
for _, name in ipairs({ 'result', 'resultBytes', 'error', 'message', 'startedNext', 'deadLetteredMessageId',
  'unresolved', 'inDoubtReport' }) do r[name] = nil end
appendOrTrim(r, a.entry)
save(old, r)
return reply({ r = 'taken', old = prior })
`;

/** COMPLETED, FAILED, REJECTED, IN_DOUBT under the lease: `set` and `unset` are the outcome's fields. */
const OUTCOME = `
local old = load()
if not fenced(old, a.token) then
  -- Our own earlier try already wrote this very status: done. The token stays on the record for that.
  -- Written again for a WAIT behind this try, as in ACQUIRE.
  if old ~= nil and old.status == a.status and old.leaseToken == a.token then
    save(old, old)
    return reply({ r = 'own' })
  end
  return reply({ r = 'lost' })
end
local r = copy(old)
r.status = a.status
r.updatedAt = a.nowMs
r.attempts = a.attempt
for name, value in pairs(a.set) do r[name] = value end
for _, name in ipairs(a.unset) do r[name] = nil end
r.leaseExpiresAt = nil
r.unstarted = nil
r.after = nil
append(r, a.entry)
save(old, r)
return reply({ r = 'written' })
`;

/** A fenced write that keeps the status: a start mark, a run counted. */
const TOUCH = `
local old = load()
if not fenced(old, a.token) then return reply({ r = 'lost' }) end
local r = copy(old)
for name, value in pairs(a.set) do r[name] = value end
for _, name in ipairs(a.unset) do r[name] = nil end
save(old, r)
return reply({ r = 'written' })
`;

const PARK = `
local old = load()
if not fenced(old, a.leaseToken) or old.leaseExpiresAt == nil or old.leaseExpiresAt > a.nowMs then
  return reply({ r = 'existing', old = old })
end
local r = copy(old)
r.status = 'IN_DOUBT'
r.error = a.error
r.updatedAt = a.nowMs
r.unresolved = 'IN_DOUBT'
r.inDoubtReport = a.report
r.attempts = old.attempts or 1
if a.message then r.message = a.message end
-- Unresolved, it must not expire: save() leaves a record without expiresAt without a TTL.
r.expiresAt = nil
r.leaseExpiresAt = nil
r.unstarted = nil
r.after = nil
append(r, a.entry)
save(old, r)
return reply({ r = 'parked' })
`;

const CLAIM_REPORT = `
local old = load()
if old == nil or old.status ~= 'IN_DOUBT' or old.inDoubtReport ~= 'pending' then
  return reply({ r = 'existing', old = old })
end
local r = copy(old)
r.inDoubtReport = a.report
if a.message then r.message = a.message end
save(old, r)
return reply({ r = 'claimed' })
`;

/** Deletes the record while IN_PROGRESS under the token (and, with `unstartedOnly`, unstarted and expired). */
const RELEASE = `
local old = load()
if old == nil then return reply({ r = 'gone' }) end
if not fenced(old, a.token) or (a.unstartedOnly and not (old.unstarted and (old.leaseExpiresAt or 0) <= a.nowMs)) then
  return reply({ r = 'kept' })
end
redis.call('DEL', key)
index(old, nil)
return reply({ r = 'deleted' })
`;

const KEEP_UNTIL = `
local old = load()
if old == nil or old.expiresAt == nil or old.expiresAt <= a.nowSec or old.expiresAt >= a.untilSec then
  return reply({ r = 'kept' })
end
local r = copy(old)
r.expiresAt = a.untilSec
save(old, r)
return reply({ r = 'extended' })
`;

const READ = `
return redis.call('GET', key)
`;

const CLAIM_DEAD_LETTER = `
local old = load()
if old ~= nil and not dead(old) and not (old.deadLetteredAt == nil and old.claimExpiresAt ~= nil and
  old.claimExpiresAt <= a.nowMs) then
  return reply({ r = 'existing', old = old })
end
save(old, { id = a.id, claimToken = a.token, claimExpiresAt = a.claimExpiresAt, expiresAt = a.expiresAt })
return reply({ r = 'claimed' })
`;

const RELEASE_DEAD_LETTER_CLAIM = `
local old = load()
if old ~= nil and old.claimToken == a.token and old.deadLetteredAt == nil then redis.call('DEL', key) end
return reply({ r = 'done' })
`;

const MARK_DEAD_LETTERED = `
save(load(), { id = a.id, deadLetteredAt = a.nowMs, expiresAt = a.expiresAt })
return reply({ r = 'marked' })
`;

/** A full log takes no more entries, and says nothing: it is the story's, not the outcome's. */
const LOG_DEAD_LETTER = `
local old = load()
if old ~= nil and old.history ~= nil and #old.history >= a.maxHistory then return reply({ r = 'full' }) end
local r = { id = a.id }
if old ~= nil then r = copy(old) end
append(r, a.entry)
r.expiresAt = a.expiresAt
save(old, r)
return reply({ r = 'logged' })
`;

/** The unresolved index's sizes: the monitor's counts (an unresolved record never expires). */
const COUNT_UNRESOLVED = `
return reply({ r = 'counted', inDoubt = redis.call('ZCARD', KEYS[2]), retryPending = redis.call('ZCARD', KEYS[3]) })
`;

function script(name: string, ...parts: string[]): ValkeyScript {
  const source = [VALKEY_SCRIPT_PRELUDE, ...parts].join('\n');
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Every step of `ValkeyIdempotencyStore`, loaded by EVALSHA, or by EVAL when the server lacks it.
 * Pure: a consumer bundle that never makes a Valkey store drops the scripts and their hashing.
 */
export const VALKEY_SCRIPTS = {
  acquire: /* @__PURE__ */ script('acquire', APPEND_OR_TRIM, ACQUIRE),
  outcome: /* @__PURE__ */ script('outcome', FENCED, OUTCOME),
  touch: /* @__PURE__ */ script('touch', FENCED, TOUCH),
  park: /* @__PURE__ */ script('park', FENCED, PARK),
  claimReport: /* @__PURE__ */ script('claimReport', CLAIM_REPORT),
  release: /* @__PURE__ */ script('release', FENCED, RELEASE),
  keepUntil: /* @__PURE__ */ script('keepUntil', KEEP_UNTIL),
  read: /* @__PURE__ */ script('read', READ),
  claimDeadLetter: /* @__PURE__ */ script('claimDeadLetter', CLAIM_DEAD_LETTER),
  releaseDeadLetterClaim: /* @__PURE__ */ script('releaseDeadLetterClaim', RELEASE_DEAD_LETTER_CLAIM),
  markDeadLettered: /* @__PURE__ */ script('markDeadLettered', MARK_DEAD_LETTERED),
  logDeadLetter: /* @__PURE__ */ script('logDeadLetter', LOG_DEAD_LETTER),
  countUnresolved: /* @__PURE__ */ script('countUnresolved', COUNT_UNRESOLVED),
} as const;
