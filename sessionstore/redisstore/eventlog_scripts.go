package redisstore

import "github.com/redis/go-redis/v9"

// The event log's scripts. Each session's events live under a base key B
// (see EventLog.base): the hash B+":m" (fields tag, next, seq, cnt, bytes,
// r, and per stream number N: "s:"+stream -> N, "n:"+N -> stream, "c:"+N
// its event count, "b:"+N its bytes, "k:"+stream the nonce and ids of its
// last StoreEvent or StoreEvents, or the nonce and first id of its
// StoreStream),
// the sorted set B+":h" of the numbers
// of the streams that hold events, each scored by the sequence number of
// its oldest event, and one Redis list B+":"+N per MCP stream, whose
// elements are its events in order, each S+" "+message for the session's
// event sequence number S. (A list, not a Redis stream: a Redis stream's
// first node is given 4 KiB when it is made and keeps them while it holds
// few entries, so a POST response's stream of an event or two cost Redis
// about 4.5 KB; a short list costs what it holds.) The scripts build the
// stream keys from B (ARGV[1]), like the prune helper of the record
// scripts; on Redis Cluster the prefix's hash tag keeps them in one slot.

// luaEventDrop drops the oldest events of stream number m, as many of
// them as single drops would take to drop at least ne events and nb bytes,
// stopping before an event whose sequence number is past upto (nil: no
// limit; the session's bound drops the session's oldest event first, so
// it stops at the next stream's head), and answers how many events and
// bytes went (as counted: the session's totals take off exactly that),
// and whether the stream went whole. A single drop of a stream that holds
// one element, or whose key is gone (a maxmemory policy evicted it, and
// an RPUSH may have made it again), forgets the stream, key and hash
// fields, whatever its counts say: so does this one when it runs out of
// elements with its need unmet. It reads the stream's head in one LRANGE
// of up to max(ne, 1) + 1 elements (the events a count bound needs
// dropped, and the next head: never more than that of events up to the
// byte bound's size), drops what it took off with one LTRIM and re-scores
// the stream's head in B+":h": for a count bound, a call per stream, not
// per event; a caller whose need is unmet (bytes, the next stream's head
// reached) calls again. It updates the
// stream's counts unless own: the counts of the stream being stored to
// (oc events, ob bytes) are the store script's, kept in locals and
// written once, as are the session's totals, and its name (ownName) is
// the caller's. Another stream's counts and name, when it goes whole,
// come in one HMGET; a name the hash lacks leaves only the number's
// fields to delete.
const luaEventDrop = `
local function forget(meta, heads, base, m, name)
  redis.call('DEL', base .. ':' .. m)
  if name then
    redis.call('HDEL', meta, 's:' .. name, 'k:' .. name, 'n:' .. m, 'c:' .. m, 'b:' .. m)
  else
    redis.call('HDEL', meta, 'n:' .. m, 'c:' .. m, 'b:' .. m)
  end
  redis.call('ZREM', heads, m)
end
local function drop(meta, heads, base, m, own, oc, ob, ne, nb, upto, ownName)
  local k = base .. ':' .. m
  local want = math.max(ne, 1)
  local h = redis.call('LRANGE', k, 0, want)
  local dc, db, passed = 0, 0, false
  while dc < #h - 1 and (dc < ne or db < nb) do
    dc = dc + 1
    db = db + string.len(h[dc]) - string.find(h[dc], ' ', 1, true)
    if upto and tonumber(string.match(h[dc + 1], '^%d+')) > upto then
      passed = true -- another stream's head is older now
      break
    end
  end
  local short = dc < ne or db < nb
  if #h < 2 or (short and not passed and dc == #h - 1 and #h <= want) then
    -- As single drops would: the last element left, the stream goes.
    local c, b, name = oc, ob, ownName
    if not own then
      local got = redis.call('HMGET', meta, 'c:' .. m, 'b:' .. m, 'n:' .. m)
      c, b, name = tonumber(got[1]) or 0, tonumber(got[2]) or 0, got[3]
    end
    forget(meta, heads, base, m, name)
    return c, b, true
  end
  redis.call('LTRIM', k, dc, -1)
  if not own then
    redis.call('HINCRBY', meta, 'c:' .. m, -dc)
    -- Never HINCRBY by -0, which Lua would write for a size of 0.
    if db ~= 0 then redis.call('HINCRBY', meta, 'b:' .. m, -db) end
  end
  redis.call('ZADD', heads, string.match(h[dc + 1], '^%d+'), m)
  return dc, db, false
end
`

// KEYS: meta, heads. ARGV: base, stream, nonce (random; its first 12
// characters are the tag of a new log), ttl ms, slack ms, max stream
// events, max stream bytes, max session events, max session bytes, then
// the messages (one or more), stored in order as the stream's next
// events. Answers {'OK', id, ...}, an event id per message, or only the
// first message's for a nonce ending in "~" (StoreStream's, whose caller
// places the rest by the first: its record, field "k:"+stream, keeps only
// that one too). A call repeating the stream's last call (same nonce:
// go-redis retried it after its connection broke) stores nothing and
// answers the same ids.
//
// Each message is stored as a call of its own would, and what the bounds
// keep is what such calls would keep: the stream's bounds are enforced
// after each message, the session's after the last (sessionBound, below,
// says why that drops the same events); the messages of one call share
// the rest: the lookup of the log and the stream, the expiries, the
// retry's record.
//
// Expiry: meta and heads get the ttl; a stream key gets ttl+slack when it
// is stored to, and every stream key of the session gets it again once
// slack has passed since the last time they all did (field r). So every
// stream key outlives meta, by at most slack, and a store costs one
// PEXPIRE per stream only once per slack. A stream key left after its
// log lapsed is deleted when its number is given again.
const luaEventStore = luaPrelude + luaEventDrop + `
local meta, heads, base, stream, nonce = KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3]
local ttl, slack = tonumber(ARGV[4]), tonumber(ARGV[5])
local maxSE, maxSB = tonumber(ARGV[6]), tonumber(ARGV[7])
local maxE, maxB = tonumber(ARGV[8]), tonumber(ARGV[9])
local first = 10
local maxBatchPush = 256 -- the most messages one RPUSH takes (Lua's unpack has a limit)
local now = now_ms()
local firstOnly = string.sub(nonce, -1) == '~' -- StoreStream's: the first id is enough
local got = redis.call('HMGET', meta, 'tag', 's:' .. stream, 'r', 'k:' .. stream, 'cnt', 'bytes', 'next', 'seq')
local tag, n, refreshed = got[1], got[2], tonumber(got[3])
local cnt, bytes = tonumber(got[5]) or 0, tonumber(got[6]) or 0
-- The last stream number given and the last sequence number: each is
-- written by the first write that uses it (register's HSET, or the HSET
-- below), so a call that fails part-way (Redis keeps a script's writes up
-- to its error) never leaves a number in use that a later call gives
-- again.
local last, lastSeq = tonumber(got[7]) or 0, tonumber(got[8]) or 0
if not tag then
  tag = string.sub(nonce, 1, 12)
  redis.call('DEL', heads)
  redis.call('HSET', meta, 'tag', tag, 'r', now)
  n, refreshed, cnt, bytes, last, lastSeq = nil, now, 0, 0, 0, 0
elseif got[4] and string.sub(got[4], 1, #nonce + 1) == nonce .. ' ' then
  local out = {'OK'}
  for id in string.gmatch(string.sub(got[4], #nonce + 2), '%S+') do out[#out + 1] = id end
  return out
end
local count = #ARGV - first + 1
local seq0 = lastSeq + 1
lastSeq = lastSeq + count
-- Written with %d: Lua writes a number of 15 digits as 1e+14.
local lastSeqS = string.format('%d', lastSeq)
-- register gives the stream a new number, as the first call to it does,
-- and deletes a key left under the number by a log that lapsed, unless
-- the caller checks for one itself (keep).
local function register(keep)
  last = last + 1
  local m = string.format('%d', last)
  if not keep then redis.call('DEL', base .. ':' .. m) end
  redis.call('HSET', meta, 's:' .. stream, m, 'n:' .. m, stream, 'next', m, 'seq', lastSeqS)
  return m
end
local sc, sb = 0, 0 -- the stream's counts, written at the end
local fresh = not n -- the stream's first call (or its first since it went)
if fresh then
  n = register(true)
else
  local c = redis.call('HMGET', meta, 'c:' .. n, 'b:' .. n)
  sc, sb = tonumber(c[1]) or 0, tonumber(c[2]) or 0
  redis.call('HSET', meta, 'seq', lastSeqS)
end
local out = {'OK'}
local gone = false -- the stream went whole (its key was evicted)
local each = false -- the session's bounds after each message: keys were evicted
-- The stream's counts and the session's totals stay in locals until the
-- end.
-- sessionBound drops the session's oldest events while the session is
-- past a bound: a drop takes a stream's oldest events off at once
-- (luaEventDrop), up to the next stream's head.
local function sessionBound()
  while cnt > maxE or bytes > maxB do
    local two = redis.call('ZRANGE', heads, 0, 1, 'WITHSCORES')
    local oldest = two[1]
    if not oldest then break end -- heads evicted by a maxmemory policy
    local own = not gone and oldest == n
    local dc, db, whole = drop(meta, heads, base, oldest, own, sc, sb, cnt - maxE, bytes - maxB, tonumber(two[4]), stream)
    if own then sc, sb, gone = sc - dc, sb - db, whole end
    cnt, bytes = cnt - dc, bytes - db
  end
end
-- A new stream whose messages fit its bounds (a POST response's, as a
-- rule) is stored in one RPUSH: what the loop below would do, message by
-- message, when no bound of the stream is reached and the heads' set was
-- not evicted (the loop's first message checks that for a new stream, and
-- nothing else: its key holds nothing but what this call pushed, a longer
-- list being one a lapsed log left, deleted and pushed again).
local fast = false
if fresh and count <= maxBatchPush and not (cnt > 0 and redis.call('ZCARD', heads) == 0) then
  local total, elems, ids = 0, {}, {}
  for i = first, #ARGV do
    local seq = string.format('%d', seq0 + i - first)
    total = total + string.len(ARGV[i])
    elems[#elems + 1] = seq .. ' ' .. ARGV[i]
    if i == first or not firstOnly then ids[#ids + 1] = tag .. '-' .. n .. '-' .. seq end
  end
  if count <= maxSE and total <= maxSB then
    fast = true
    local key = base .. ':' .. n
    if redis.call('RPUSH', key, unpack(elems)) ~= count then
      redis.call('DEL', key)
      redis.call('RPUSH', key, unpack(elems))
    end
    redis.call('ZADD', heads, 'NX', seq0, n)
    for _, id in ipairs(ids) do out[#out + 1] = id end
    sc, sb, cnt, bytes = count, total, cnt + count, bytes + total
  end
end
if fresh and not fast then
  -- The loop pushes onto the key as it finds it: a key a lapsed log left
  -- under the new number goes first.
  redis.call('DEL', base .. ':' .. n)
end
for i = (fast and #ARGV + 1 or first), #ARGV do
  -- Written with %d: Lua writes a number of 15 digits as 1e+14.
  local seq, size = string.format('%d', seq0 + i - first), string.len(ARGV[i])
  -- The session's bounds are enforced once, after the last message, not
  -- after each: dropping the session's oldest events first after each
  -- message or once after all of them drops the same events, the totals
  -- only growing between, unless the stream's own bound drops some of its
  -- events between (a session drop made before would then have been made
  -- with more events held, and may have dropped one that is kept after).
  -- So before a message that takes the stream past its bound, the
  -- session's bounds are enforced as they stand. And a call that finds
  -- keys a maxmemory policy evicted (the stream's list shorter than its
  -- count, the heads' set without the stream or gone) enforces them
  -- after each message (each), as before: there the counts hold events
  -- that are gone, and enforcing them once could forget the stream whole,
  -- the call's messages with it, where calls of their own would lose one
  -- and start a new stream for the next.
  if i > first and not gone and (sc + 1 > maxSE or sb + size > maxSB) then sessionBound() end
  if gone then n, sc, sb, gone = register(), 0, 0, false end
  if i == first and sc == 0 and cnt > 0 and redis.call('ZCARD', heads) == 0 then each = true end
  local held = redis.call('RPUSH', base .. ':' .. n, seq .. ' ' .. ARGV[i])
  if i == first and held ~= sc + 1 then each = true end
  -- The stream's head: its first event's. Once a call, NX puts back a
  -- head that a maxmemory policy evicted, scored by the stream's oldest
  -- entry.
  if sc == 0 then
    redis.call('ZADD', heads, 'NX', seq, n)
  elseif i == first and redis.call('ZADD', heads, 'NX', seq, n) == 1 then
    each = true
    local oldest = redis.call('LINDEX', base .. ':' .. n, 0)
    redis.call('ZADD', heads, 'XX', string.match(oldest, '^%d+'), n)
  end
  sc, sb, cnt, bytes = sc + 1, sb + size, cnt + 1, bytes + size
  if i == first or not firstOnly then out[#out + 1] = tag .. '-' .. n .. '-' .. seq end
  -- The new event is never dropped (it fits both byte bounds alone),
  -- unless the stream's key was evicted: then the stream goes whole, and
  -- the next message starts a new one.
  while not gone and (sc > maxSE or sb > maxSB) do
    local dc, db, whole = drop(meta, heads, base, n, true, sc, sb, sc - maxSE, sb - maxSB, nil, stream)
    sc, sb, cnt, bytes, gone = sc - dc, sb - db, cnt - dc, bytes - db, whole
  end
  if each then sessionBound() end
end
sessionBound()
redis.call('PEXPIRE', meta, ttl)
redis.call('PEXPIRE', heads, ttl)
if not gone then redis.call('PEXPIRE', base .. ':' .. n, ttl + slack) end
if now - refreshed >= slack then
  for _, m in ipairs(redis.call('ZRANGE', heads, 0, -1)) do
    redis.call('PEXPIRE', base .. ':' .. m, ttl + slack)
  end
  redis.call('HSET', meta, 'r', now)
end
local ids = nonce .. ' ' .. table.concat(out, ' ', 2)
if gone then
  redis.call('HSET', meta, 'cnt', cnt, 'bytes', bytes, 'k:' .. stream, ids)
else
  redis.call('HSET', meta, 'cnt', cnt, 'bytes', bytes, 'c:' .. n, sc, 'b:' .. n, sb, 'k:' .. stream, ids)
end
return out
`

// luaReplayAfter defines after(key, name, seq): the elements of the
// stream list key (named name) after its element of sequence number seq,
// as {'OK', name, elements}, or {'UNKNOWN'} when the list does not hold
// seq. It reads the list from its newest element back, 64 elements and
// then twice as many each time (a resume is usually of the last few), and
// stops at seq or the first element older than it: a replay reads at most
// twice what it returns plus 64 elements (the whole stream for an id older
// than its first event).
const luaReplayAfter = `
local function after(key, name, seq)
  local newer = {} -- the elements after the id, newest first
  local stop, size = -1, 64
  while true do
    local part = redis.call('LRANGE', key, stop - size + 1, stop)
    for i = #part, 1, -1 do
      local s = tonumber(string.match(part[i], '^%d+'))
      if s == seq then
        local out = {}
        for j = #newer, 1, -1 do out[#out + 1] = newer[j] end
        return {'OK', name, out}
      end
      if s < seq then return {'UNKNOWN'} end
      newer[#newer + 1] = part[i]
    end
    if #part < size then return {'UNKNOWN'} end -- the stream's first read
    stop, size = stop - size, size * 2
  end
end
`

// KEYS: meta. ARGV: base, tag, stream number, sequence number. Answers
// {'UNKNOWN'} unless the id is one this session's log still keeps, else
// {'OK', stream, the stream's elements after it} (luaReplayAfter).
const luaEventReplay = luaReplayAfter + `
if redis.call('HGET', KEYS[1], 'tag') ~= ARGV[2] then return {'UNKNOWN'} end
local name = redis.call('HGET', KEYS[1], 'n:' .. ARGV[3])
if not name then return {'UNKNOWN'} end
return after(ARGV[1] .. ':' .. ARGV[3], name, tonumber(ARGV[4]))
`

// KEYS: meta. ARGV: base, stream, k. Replays after event k of a stream
// StoreStream recorded: answers as luaEventReplay does, with the sequence
// number of the stream's event 0 appended. The stream's last store (field
// "k:"+stream: its nonce, then its ids) must be StoreStream's, whose
// nonce ends with "~", and its first id's sequence number is event 0's:
// the events of one store have consecutive ones. A stream stored to since
// by another call is UNKNOWN; one the log holds nothing of, ABSENT.
const luaEventReplayWhole = luaReplayAfter + `
local got = redis.call('HMGET', KEYS[1], 's:' .. ARGV[2], 'k:' .. ARGV[2])
if not got[1] or not got[2] then return {'ABSENT'} end
local seq0 = string.match(got[2], '^%S+~ [^-]+%-%d+%-(%d+)')
if not seq0 then return {'UNKNOWN'} end
local res = after(ARGV[1] .. ':' .. got[1], ARGV[2], tonumber(seq0) + tonumber(ARGV[3]))
res[#res + 1] = seq0
return res
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
	store, replay, replayWhole, purge *redis.Script
}

func newEventScripts() eventScripts {
	return eventScripts{
		store:       redis.NewScript(luaEventStore),
		replay:      redis.NewScript(luaEventReplay),
		replayWhole: redis.NewScript(luaEventReplayWhole),
		purge:       redis.NewScript(luaEventPurge),
	}
}
