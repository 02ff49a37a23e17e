package redisstore

import (
	"context"
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
//
// What the window costs: a DELETE on one replica of a session another
// replica answered from memory in the last window takes up to the window
// longer. Redis's clock must not step forward meanwhile, as its own PX
// expiries assume.

// DefaultLiveCacheWindow is Options.LiveCacheWindow's default.
const DefaultLiveCacheWindow = 10 * time.Millisecond

// maxLiveCached bounds the sessions a Store remembers at once; beyond it,
// CheckLive asks Redis for the others every time.
const maxLiveCached = 1 << 16

// liveSweepEvery is how often keep drops the windows that closed.
const liveSweepEvery = time.Second

// liveCache is a Store's memory of live answers. Times are offsets from
// base on the monotonic clock.
type liveCache struct {
	window time.Duration // 0: every CheckLive asks Redis
	name   string        // this Store, in the records' kw field
	base   time.Time

	mu      sync.Mutex
	until   map[string]time.Duration // a session's window's end
	seq     uint64                   // bumped by every forget
	sweptAt time.Duration
}

func newLiveCache(window time.Duration) *liveCache {
	return &liveCache{window: window, name: rand.Text(), base: time.Now(), until: make(map[string]time.Duration)}
}

// now is the cache's clock.
func (c *liveCache) now() time.Duration { return time.Since(c.base) }

// live reports whether id's window is open at now.
func (c *liveCache) live(id string, now time.Duration) bool {
	c.mu.Lock()
	end, ok := c.until[id]
	c.mu.Unlock()
	return ok && now < end
}

// begin is called as a check is sent: keep takes what it returns.
func (c *liveCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seq
}

// keep remembers that id was live when the check begun at sent (whose
// begin answered seq) was sent, for the window or, when it is shorter, the
// record's remaining ttl (0 for none). An answer that a forget overtook is
// not kept.
func (c *liveCache) keep(id string, seq uint64, sent, ttl time.Duration) {
	d := c.window
	if ttl > 0 && ttl < d {
		d = ttl
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq != c.seq {
		return
	}
	// Full, it sweeps at most once a window: no window closes sooner.
	if now := c.now(); now-c.sweptAt >= liveSweepEvery || len(c.until) >= maxLiveCached && now-c.sweptAt >= c.window {
		c.sweptAt = now
		for k, end := range c.until {
			if end <= now {
				delete(c.until, k)
			}
		}
	}
	if _, ok := c.until[id]; ok || len(c.until) < maxLiveCached {
		c.until[id] = sent + d
	}
}

// forget drops id's window, and every answer in flight.
func (c *liveCache) forget(id string) {
	c.mu.Lock()
	c.seq++
	delete(c.until, id)
	c.mu.Unlock()
}

// awaitWindows waits the ms that Terminate's or Remove's script said
// another Store's window stays open, within OpTimeout and ctx: past
// either, it returns early (the session has ended in Redis; the other
// Store's window closes by itself).
func (s *Store) awaitWindows(ctx context.Context, ms int64) {
	if ms <= 0 {
		return
	}
	d := min(time.Duration(ms)*time.Millisecond, s.opts.OpTimeout)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
