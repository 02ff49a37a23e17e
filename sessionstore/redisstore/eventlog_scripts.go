package redisstore

import "github.com/redis/go-redis/v9"

// The event log's scripts. Each session's events live under a base key B
// (see EventLog.base): the hash B+":m" (fields tag, next, seq, cnt, bytes,
// r, and per stream number N: "s:"+stream -> N, "n:"+N -> stream, "c:"+N
// its event count, "b:"+N its bytes, "k:"+stream the nonce and id of its
// last StoreEvent), the sorted set B+":h" of the numbers
// of the streams that hold events, each scored by the sequence number of
// its oldest event, and one Redis stream B+":"+N per MCP stream, whose
// entry ids are S+"-0" for the session's event sequence number S and whose
// one field d is the message. The scripts build the stream keys from B
// (ARGV[1]), like the prune helper of the record scripts; on Redis Cluster
// the prefix's hash tag keeps them in one slot.

// luaEventDrop drops the oldest event of stream number m and answers how
// many events and bytes went; a stream left empty goes, key and hash
// fields. It updates the session's totals and the stream's head in
// B+":h". A stream whose key is gone (evicted by a maxmemory policy) is
// forgotten whole, so the counts stay true.
const luaEventDrop = `
-- sub takes d from a hash field; never HINCRBY by 0, which Lua writes -0.
local function sub(meta, f, d)
  if d ~= 0 then redis.call('HINCRBY', meta, f, -d) end
end
local function forget(meta, heads, base, m)
  redis.call('DEL', base .. ':' .. m)
  local name = redis.call('HGET', meta, 'n:' .. m)
  redis.call('HDEL', meta, 's:' .. name, 'k:' .. name, 'n:' .. m, 'c:' .. m, 'b:' .. m)
  redis.call('ZREM', heads, m)
end
local function drop(meta, heads, base, m)
  local k = base .. ':' .. m
  local h = redis.call('XRANGE', k, '-', '+', 'COUNT', 2)
  if #h == 0 then
    local c = tonumber(redis.call('HGET', meta, 'c:' .. m)) or 0
    local b = tonumber(redis.call('HGET', meta, 'b:' .. m)) or 0
    sub(meta, 'cnt', c)
    sub(meta, 'bytes', b)
    forget(meta, heads, base, m)
    return math.max(c, 1), b
  end
  local sz = string.len(h[1][2][2])
  redis.call('XDEL', k, h[1][1])
  local c = redis.call('HINCRBY', meta, 'c:' .. m, -1)
  redis.call('HINCRBY', meta, 'cnt', -1)
  sub(meta, 'bytes', sz)
  sub(meta, 'b:' .. m, sz)
  local b = tonumber(redis.call('HGET', meta, 'b:' .. m))
  if #h == 1 then
    -- The last one, whatever the counts say (after an eviction).
    sub(meta, 'cnt', c)
    sub(meta, 'bytes', b)
    forget(meta, heads, base, m)
    return 1 + c, sz + b
  end
  redis.call('ZADD', heads, string.match(h[2][1], '^%d+'), m)
  return 1, sz
end
`

// KEYS: meta, heads. ARGV: base, stream, message, nonce (random; its
// first 12 characters are the tag of a new log), ttl ms, slack ms, max
// stream events, max stream bytes, max session events, max session bytes.
// Answers {'OK', event id}. A call repeating the stream's last call (same
// nonce: go-redis retried it after its connection broke) stores nothing
// and answers the same id.
//
// Expiry: meta and heads get the ttl; a stream key gets ttl+slack when it
// is stored to, and every stream key of the session gets it again once
// slack has passed since the last time they all did (field r). So every
// stream key outlives meta, by at most slack, and a store costs one
// PEXPIRE per stream only once per slack. A stream key left after its
// log lapsed is deleted when its number is given again.
const luaEventStore = luaPrelude + luaEventDrop + `
local meta, heads, base, stream, msg = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local ttl, slack = tonumber(ARGV[5]), tonumber(ARGV[6])
local maxSE, maxSB = tonumber(ARGV[7]), tonumber(ARGV[8])
local maxE, maxB = tonumber(ARGV[9]), tonumber(ARGV[10])
local now = now_ms()
if redis.call('HSETNX', meta, 'tag', string.sub(ARGV[4], 1, 12)) == 1 then
  redis.call('DEL', heads)
  redis.call('HSET', meta, 'r', now, 'next', 0, 'seq', 0, 'cnt', 0, 'bytes', 0)
end
local got = redis.call('HMGET', meta, 'tag', 's:' .. stream, 'r', 'k:' .. stream)
local tag, n, refreshed = got[1], got[2], tonumber(got[3])
if got[4] and string.sub(got[4], 1, #ARGV[4] + 1) == ARGV[4] .. ' ' then
  return {'OK', string.sub(got[4], #ARGV[4] + 2)}
end
if not n then
  n = redis.call('HINCRBY', meta, 'next', 1)
  redis.call('DEL', base .. ':' .. n)
  redis.call('HSET', meta, 's:' .. stream, n, 'n:' .. n, stream, 'c:' .. n, 0, 'b:' .. n, 0)
end
local key = base .. ':' .. n
local seq = redis.call('HINCRBY', meta, 'seq', 1)
local size = string.len(msg)
redis.call('XADD', key, seq .. '-0', 'd', msg)
redis.call('ZADD', heads, 'NX', seq, n)
local sc = redis.call('HINCRBY', meta, 'c:' .. n, 1)
local sb = redis.call('HINCRBY', meta, 'b:' .. n, size)
local cnt = redis.call('HINCRBY', meta, 'cnt', 1)
local bytes = redis.call('HINCRBY', meta, 'bytes', size)
-- The new event is never dropped: it fits both byte bounds alone.
while sc > maxSE or sb > maxSB do
  local dc, db = drop(meta, heads, base, n)
  sc, sb, cnt, bytes = sc - dc, sb - db, cnt - dc, bytes - db
end
while cnt > maxE or bytes > maxB do
  local oldest = redis.call('ZRANGE', heads, 0, 0)[1]
  if not oldest then break end -- heads evicted by a maxmemory policy
  local dc, db = drop(meta, heads, base, oldest)
  cnt, bytes = cnt - dc, bytes - db
end
redis.call('PEXPIRE', meta, ttl)
redis.call('PEXPIRE', heads, ttl)
redis.call('PEXPIRE', key, ttl + slack)
if now - refreshed >= slack then
  for _, m in ipairs(redis.call('ZRANGE', heads, 0, -1)) do
    redis.call('PEXPIRE', base .. ':' .. m, ttl + slack)
  end
  redis.call('HSET', meta, 'r', now)
end
local id = tag .. '-' .. n .. '-' .. seq
redis.call('HSET', meta, 'k:' .. stream, ARGV[4] .. ' ' .. id)
return {'OK', id}
`

// KEYS: meta. ARGV: base, tag, stream number, sequence number. Answers
// {'UNKNOWN'} unless the id is one this session's log still keeps, else
// {'OK', stream, entries after it} (XRANGE's reply).
const luaEventReplay = `
if redis.call('HGET', KEYS[1], 'tag') ~= ARGV[2] then return {'UNKNOWN'} end
local name = redis.call('HGET', KEYS[1], 'n:' .. ARGV[3])
if not name then return {'UNKNOWN'} end
local key = ARGV[1] .. ':' .. ARGV[3]
local id = ARGV[4] .. '-0'
if #redis.call('XRANGE', key, id, id) == 0 then return {'UNKNOWN'} end
return {'OK', name, redis.call('XRANGE', key, '(' .. id, '+')}
`

// KEYS: meta, heads. ARGV: base. Deletes every key of the session's log.
const luaEventPurge = `
for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  redis.call('DEL', ARGV[1] .. ':' .. m)
end
redis.call('DEL', KEYS[1], KEYS[2])
return {'OK'}
`

// eventScripts are the event log's loaded scripts.
type eventScripts struct {
	store, replay, purge *redis.Script
}

func newEventScripts() eventScripts {
	return eventScripts{
		store:  redis.NewScript(luaEventStore),
		replay: redis.NewScript(luaEventReplay),
		purge:  redis.NewScript(luaEventPurge),
	}
}
