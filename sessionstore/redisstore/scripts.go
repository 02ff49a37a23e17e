package redisstore

import "github.com/redis/go-redis/v9"

// The Lua scripts that make each Store method one atomic step on the
// server. Times come from the server's clock (TIME), so replicas with
// skewed clocks agree on expiries; all of them are in milliseconds since
// the epoch, the resolution of PEXPIRE.
//
// Every script answers a table whose first element is a status: OK,
// NOTFOUND, TERMINATED, EXISTS, HELD or LOST. A record's hash has the fields
// v (protocol version), ci (client info), c (created, Unix ns), e (expires,
// ms, 0 for never), t (its last ttl in ms, 0 for none), s (live or
// terminated), n (the nonce of the Create that made it), u (the caller
// it is bound to; absent, in records written before it existed, for none),
// and, once a Store with a LiveCacheWindow found it live, k (until when, in
// ms, some Store may answer it live from memory) and kw (that Store's name,
// or "*" for several); see live_cache.go.

// luaPrelude holds the helpers every script may use. ARGV[1] of the scripts
// that prune is the key prefix, from which they build the keys of the ids
// they prune; keyRecord and keyLease in store.go must agree with it.
const luaPrelude = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function now_ns()
  local t = redis.call('TIME')
  return t[1] .. string.format('%06d', tonumber(t[2])) .. '000'
end
-- prune drops up to 100 index entries that lapsed before now, with the
-- lease of each: only once the record is gone too (a record whose key has
-- not expired yet, at the boundary, keeps its entry for a later prune, so
-- that its lease is not left behind).
local function prune(idx, prefix, now)
  local ids = redis.call('ZRANGEBYSCORE', idx, '-inf', '(' .. now, 'LIMIT', 0, 100)
  local dropped = 0
  for _, id in ipairs(ids) do
    if redis.call('EXISTS', prefix .. 'session:' .. id) == 0 then
      redis.call('DEL', prefix .. 'lease:' .. id)
      redis.call('ZREM', idx, id)
      dropped = dropped + 1
    end
  end
  return dropped
end
-- windows answers how many ms remain of the window in which a Store other
-- than who may answer rec live from memory (live_cache.go), 0 for none.
local function windows(rec, who, now)
  local k = tonumber(redis.call('HGET', rec, 'k') or '0')
  if k > now and redis.call('HGET', rec, 'kw') ~= who then return k - now end
  return 0
end
-- state answers nil for a live record, else the status to return.
local function state(rec)
  local s = redis.call('HGET', rec, 's')
  if not s then return 'NOTFOUND' end
  if s ~= 'live' then return 'TERMINATED' end
  return nil
end
`

// KEYS: record, index, lease. ARGV: prefix, id, version, client info,
// created (Unix ns, or empty for now), ttl ms, nonce, caller.
const luaCreate = luaPrelude + `
local now = now_ms()
prune(KEYS[2], ARGV[1], now)
if redis.call('EXISTS', KEYS[1]) == 1 then
  -- A retry of a Create that already succeeded is not a conflict.
  if redis.call('HGET', KEYS[1], 'n') == ARGV[7] then return {'OK'} end
  return {'EXISTS'}
end
local ttl = tonumber(ARGV[6])
local created = ARGV[5]
if created == '' then created = now_ns() end
local exp = 0
if ttl > 0 then exp = now + ttl end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 'ci', ARGV[4], 'c', created, 'e', exp, 't', ttl, 's', 'live', 'n', ARGV[7], 'u', ARGV[8])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('ZADD', KEYS[2], exp, ARGV[2])
else
  redis.call('ZADD', KEYS[2], '+inf', ARGV[2])
end
-- A lease left by an earlier session of the same id is not this one's.
redis.call('DEL', KEYS[3])
return {'OK'}
`

// KEYS: record. ARGV: version, client info.
const luaUpdate = luaPrelude + `
local st = state(KEYS[1])
if st then return {st} end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'ci', ARGV[2])
return {'OK'}
`

// KEYS: record, index. ARGV: id, ttl ms.
const luaTouch = luaPrelude + `
local st = state(KEYS[1])
if st then return {st} end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  local exp = now_ms() + ttl
  redis.call('PEXPIRE', KEYS[1], ttl)
  redis.call('HSET', KEYS[1], 'e', exp, 't', ttl)
  redis.call('ZADD', KEYS[2], exp, ARGV[1])
else
  redis.call('PERSIST', KEYS[1])
  redis.call('HSET', KEYS[1], 'e', 0, 't', 0)
  redis.call('ZADD', KEYS[2], '+inf', ARGV[1])
end
return {'OK'}
`

// KEYS: record, index, lease. ARGV: id, channel, tombstone ttl ms (for a
// record without one), termination frame, the Store's name. The record
// becomes a tombstone for its last ttl; the frame is published in the same
// atomic step, after every message published before it. The second value
// answered (with OK or TERMINATED) is how many ms another Store may still
// answer the session live from memory, which the caller waits out. The
// tombstone keeps k and kw, so that a Terminate racing this one waits too.
const luaTerminate = luaPrelude + `
local s = redis.call('HGET', KEYS[1], 's')
if not s then return {'NOTFOUND'} end
local now = now_ms()
local wait = windows(KEYS[1], ARGV[5], now)
if s ~= 'live' then return {'TERMINATED', wait} end
local ttl = tonumber(redis.call('HGET', KEYS[1], 't'))
if ttl <= 0 then ttl = tonumber(ARGV[3]) end
redis.call('HSET', KEYS[1], 's', 'terminated', 'e', now + ttl)
-- A tombstone keeps only what answers TERMINATED, and the windows.
redis.call('HDEL', KEYS[1], 'v', 'ci', 'u')
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
redis.call('PUBLISH', ARGV[2], ARGV[4])
return {'OK', wait}
`

// KEYS: record, index, lease. ARGV: id, channel, termination frame, the
// Store's name. The record (or tombstone) goes without a trace;
// subscribers are told as on Terminate, if there was one. The second value
// answered is Terminate's wait.
const luaRemove = luaPrelude + `
local wait = windows(KEYS[1], ARGV[4], now_ms())
local existed = redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[3])
if existed == 1 then redis.call('PUBLISH', ARGV[2], ARGV[3]) end
return {'OK', wait}
`

// KEYS: record. ARGV: the Store's name, its window in ms. Answers {state
// (empty for no record), pttl ms (-1 for none), 1 if marked}; a live
// record is marked with the window (rounded up a millisecond, so that it
// ends no sooner than the Store's, which starts before this runs), widened
// to another Store's still open, when kw becomes "*". A mark Redis refuses
// (out of memory) is answered 0, for the Store not to use the window.
const luaCheck = luaPrelude + `
local s = redis.call('HGET', KEYS[1], 's')
if s ~= 'live' then return {s or '', 0, 0} end
local now = now_ms()
local untilms = now + tonumber(ARGV[2]) + 1
local who = ARGV[1]
local k = tonumber(redis.call('HGET', KEYS[1], 'k') or '0')
if k > now then
  if redis.call('HGET', KEYS[1], 'kw') ~= who then who = '*' end
  if k > untilms then untilms = k end
end
local ok = redis.pcall('HSET', KEYS[1], 'k', untilms, 'kw', who)
if type(ok) == 'table' and ok.err then return {s, 0, 0} end
return {s, redis.call('PTTL', KEYS[1]), 1}
`

// KEYS: index. ARGV: prefix. Live sessions are those whose expiry is not
// before now (a key lapses when the clock passes its expiry).
const luaCount = luaPrelude + `
local now = now_ms()
for _ = 1, 10 do
  if prune(KEYS[1], ARGV[1], now) < 100 then break end
end
return {'OK', redis.call('ZCOUNT', KEYS[1], now, '+inf')}
`

// Lease scripts answer {status, holder, pttl ms (-1: none), now ms}.

// KEYS: record, lease. ARGV: holder, ttl ms. SET NX takes a free lease;
// SET XX lets its holder take it again, restarting (or dropping) the ttl.
const luaAcquire = luaPrelude + `
local st = state(KEYS[1])
if st then return {st} end
local now = now_ms()
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[1] then
  return {'HELD', cur, redis.call('PTTL', KEYS[2]), now}
end
local mode = 'NX'
if cur then mode = 'XX' end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('SET', KEYS[2], ARGV[1], mode, 'PX', ttl)
else
  redis.call('SET', KEYS[2], ARGV[1], mode)
  ttl = -1
end
return {'OK', ARGV[1], ttl, now}
`

// KEYS: record, lease. ARGV: holder, ttl ms. Compare-and-set: only the
// holder of the lease of a live session extends it.
const luaRenew = luaPrelude + `
if redis.call('GET', KEYS[2]) ~= ARGV[1] or state(KEYS[1]) then return {'LOST'} end
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  redis.call('PERSIST', KEYS[2])
  ttl = -1
end
return {'OK', ARGV[1], ttl, now_ms()}
`

// KEYS: lease. ARGV: holder. Compare-and-delete.
const luaRelease = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return {'OK'}
`

// KEYS: record, lease. Answers NONE when nobody holds the lease.
const luaHolder = luaPrelude + `
local st = state(KEYS[1])
if st then return {st} end
local cur = redis.call('GET', KEYS[2])
if not cur then return {'NONE'} end
return {'OK', cur, redis.call('PTTL', KEYS[2]), now_ms()}
`

// KEYS: record. ARGV: channel, frame. Publishing only to a live session,
// atomically, means no message follows a termination frame.
const luaPublish = luaPrelude + `
local st = state(KEYS[1])
if st then return {st} end
if redis.call('PUBLISH', ARGV[1], ARGV[2]) == 0 then return {'NOSUBSCRIBER'} end
return {'OK'}
`

// scripts are a Store's loaded scripts; each runs with EVALSHA and falls
// back to EVAL when the server does not know it (after a restart).
type scripts struct {
	create, update, touch, terminate, count *redis.Script
	remove                                  *redis.Script
	acquire, renew, release, holder         *redis.Script
	publish, check                          *redis.Script
}

func newScripts() scripts {
	return scripts{
		create:    redis.NewScript(luaCreate),
		update:    redis.NewScript(luaUpdate),
		touch:     redis.NewScript(luaTouch),
		terminate: redis.NewScript(luaTerminate),
		count:     redis.NewScript(luaCount),
		remove:    redis.NewScript(luaRemove),
		acquire:   redis.NewScript(luaAcquire),
		renew:     redis.NewScript(luaRenew),
		release:   redis.NewScript(luaRelease),
		holder:    redis.NewScript(luaHolder),
		publish:   redis.NewScript(luaPublish),
		check:     redis.NewScript(luaCheck),
	}
}
