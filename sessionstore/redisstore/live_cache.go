package redisstore

import (
	"crypto/rand"
	"sync"
	"time"
)

// A Store remembers, for Options.LiveCacheWindow, that Redis answered a
// CheckLive with live, and answers the CheckLive calls for that session in
// the meantime from memory: a client calling again and again costs one
// round trip per window instead of one per request. No termination is
// missed for it:
//
//   - The script that answers live (luaCheck) also writes into the record
//     until when some Store may answer from memory (field k, in the
//     server's milliseconds, rounded up) and which Store that is (field kw,
//     the Store's name, or "*" for several). A Store trusts an answer from
//     the moment it sent the check, so its window closes before the one
//     the record holds.
//   - Terminate and Remove read those fields in the same atomic step that
//     ends the session and, unless the only Store in its window is the
//     caller, wait until the window has closed before returning. Every
//     CheckLive that begins after Terminate returns, on any Store, asks
//     Redis, as with no cache.
//   - A Store's own Terminate and Remove forget the session locally, and
//     an answer that was in flight during one of them is not kept.
//   - A window never outlasts the record's expiry (PTTL): an expired
//     session is never answered live.
//   - Only a session checked on this Store within the last second, or
//     twice the window if that is longer (a "hot" one), is checked with the marking script; any other with a
//     plain HGET, as with no cache, which costs Redis a tenth of the
//     script: a client that calls once in a while is not charged for a
//     window it would never use. A mark Redis refuses to write (maxmemory
//     with noeviction) leaves the answer uncached, not failed.
//
// What the window costs: a DELETE on one replica of a session another
// replica answered from memory in the last window takes up to that window
// longer. What it assumes:
//
//   - Every replica sharing the sessions runs a version that reads k
//     (this one or later): one that does not never waits. Upgrade with
//     LiveCacheWindow negative, then turn it on.
//   - Redis's clock does not step forward, and no replica's monotonic
//     clock stops (a suspended VM) within a window, as Redis's own PX
//     expiries and every lease assume.
//   - A failover of Redis can lose a k write that did not reach the new
//     primary, as it can lose any write: a Terminate right after it may
//     not wait out a window opened just before.

// DefaultLiveCacheWindow is Options.LiveCacheWindow's default.
const DefaultLiveCacheWindow = 10 * time.Millisecond

// maxLiveCached bounds the sessions a Store remembers at once; beyond it,
// CheckLive asks Redis for the others every time.
const maxLiveCached = 1 << 16

// MaxLiveCacheWindow bounds Options.LiveCacheWindow, and so how long a
// Terminate can wait.
const MaxLiveCacheWindow = time.Second

// liveHot is how long after a check a session's next one marks a window
// (at least twice the window, so that the check after each window still
// finds the session hot); the cache forgets a session about that long
// after its last check.
func liveHot(window time.Duration) time.Duration { return max(time.Second, 2*window) }

// liveCache is a Store's memory of live answers. Times are offsets from
// base on the monotonic clock. Sessions are kept in two generations: cur,
// those answered since the last turn, and prev, those answered in the
// generation before; every hot period prev is dropped whole and cur
// becomes it, so forgetting the sessions not checked lately costs no scan.
type liveCache struct {
	window time.Duration // 0: every CheckLive asks Redis, with HGET
	hot    time.Duration // liveHot(window)
	name   string        // this Store, in the records' kw field
	base   time.Time

	mu       sync.Mutex
	cur      map[string]liveEntry
	prev     map[string]liveEntry
	seq      uint64 // bumped by every forget
	turnedAt time.Duration
}

// liveEntry is what the cache knows of a session: when its last check
// was sent, and when its window ends (0 for none).
type liveEntry struct{ sent, until time.Duration }

func newLiveCache(window time.Duration) *liveCache {
	return &liveCache{window: window, hot: liveHot(window), name: rand.Text(), base: time.Now(),
		cur: make(map[string]liveEntry), prev: make(map[string]liveEntry)}
}

// now is the cache's clock.
func (c *liveCache) now() time.Duration { return time.Since(c.base) }

// entryLocked is what the cache holds of id. Callers hold c.mu.
func (c *liveCache) entryLocked(id string) (liveEntry, bool) {
	if e, ok := c.cur[id]; ok {
		return e, true
	}
	e, ok := c.prev[id]
	return e, ok
}

// lookup reports whether id's window is open at now and, when it is not,
// whether id is hot (its check should mark a window) and the sequence
// number keep takes.
func (c *liveCache) lookup(id string, now time.Duration) (open, hot bool, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entryLocked(id)
	if ok && now < e.until {
		return true, true, 0
	}
	return false, ok && now-e.sent < c.hot, c.seq
}

// keep records a check of id sent at sent whose lookup answered seq: a
// session Redis answered live (live) through a mark (marked) gets a
// window from sent for the Store's window or, when it is shorter, the
// record's remaining ttl (negative for none) less a millisecond (Redis
// counts it in whole ones), none when that leaves nothing; every answer
// makes id hot. An answer that a forget overtook is not kept.
func (c *liveCache) keep(id string, seq uint64, sent, ttl time.Duration, live, marked bool) {
	var until time.Duration
	if live && marked {
		d := c.window
		if ttl >= 0 {
			d = min(d, ttl-time.Millisecond)
		}
		if d > 0 {
			until = sent + d
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq != c.seq {
		return
	}
	if now := c.now(); now-c.turnedAt >= c.hot {
		// A session in prev was last checked more than one hot period
		// ago, and its window (at most MaxLiveCacheWindow, within it)
		// has closed: dropped whole.
		c.turnedAt = now
		c.prev, c.cur = c.cur, make(map[string]liveEntry, len(c.cur))
	}
	// Full, it takes no new session until a turn makes room; one it
	// holds moves to cur.
	if _, ok := c.entryLocked(id); ok || len(c.cur)+len(c.prev) < maxLiveCached {
		c.cur[id] = liveEntry{sent: sent, until: until}
		delete(c.prev, id)
	}
}

// forget drops id's window, and every answer in flight.
func (c *liveCache) forget(id string) {
	c.mu.Lock()
	c.seq++
	delete(c.cur, id)
	delete(c.prev, id)
	c.mu.Unlock()
}

// windowsEnd is when, on this Store's clock, the other Stores' windows
// that Terminate's or Remove's script reported (ms from its run) have all
// closed: ms from now, the script's answer having come after it ran. It
// is bounded by MaxLiveCacheWindow, the most any Store's window can be.
func (s *Store) windowsEnd(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	return s.live.now() + min(time.Duration(ms)*time.Millisecond, MaxLiveCacheWindow+time.Millisecond)
}

// awaitWindows waits until end (windowsEnd): whatever ctx, for the wait is
// what makes every later CheckLive, anywhere, answer the termination, and
// it is bounded by MaxLiveCacheWindow.
func (s *Store) awaitWindows(end time.Duration) {
	d := end - s.live.now()
	if end == 0 || d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
