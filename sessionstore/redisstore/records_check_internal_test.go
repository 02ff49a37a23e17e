package redisstore

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A cluster client told to read from replicas makes CheckLive read
// through its script (the primary's answer); a plain client does not.
func TestReadsReplicas(t *testing.T) {
	for _, tc := range []struct {
		client redis.UniversalClient
		want   bool
	}{
		{redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), false},
		{redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), false},
		{redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ReadOnly: true}), true},
		{redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, RouteByLatency: true}), true},
		{redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, RouteRandomly: true}), true},
	} {
		if got := readsReplicas(tc.client); got != tc.want {
			t.Errorf("%T %+v: readsReplicas %v, want %v", tc.client, tc.client, got, tc.want)
		}
		_ = tc.client.Close()
	}
}

// Through its script (checkOnPrimary), CheckLive answers as through HGET,
// alone and in batches, with the live cache and without.
func TestCheckLiveThroughTheScript(t *testing.T) {
	for _, window := range []time.Duration{0, -1} {
		t.Run(fmt.Sprintf("window=%v", window), func(t *testing.T) { testCheckLiveThroughTheScript(t, window) })
	}
}

func testCheckLiveThroughTheScript(t *testing.T, window time.Duration) {
	rs := testutil.StartRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer c.Close()
	s := New(c, Options{Prefix: "script:", LiveCacheWindow: window})
	defer s.Close()
	s.checkOnPrimary = true
	ctx := t.Context()
	for _, id := range []string{"live", "ended"} {
		if err := s.Create(ctx, sessionstore.Record{ID: id}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Terminate(ctx, "ended"); err != nil {
		t.Fatal(err)
	}
	want := map[string]error{"live": nil, "ended": sessionstore.ErrTerminated, "unknown": sessionstore.ErrNotFound}
	ids := []string{"live", "ended", "unknown"}
	const calls = 300
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { errs[i] = s.CheckLive(ctx, ids[i%len(ids)]) })
	}
	wg.Wait()
	for i, err := range errs {
		w := want[ids[i%len(ids)]]
		if (w == nil && err != nil) || (w != nil && !errors.Is(err, w)) {
			t.Fatalf("call %d, %s: %v, want %v", i, ids[i%len(ids)], err, w)
		}
	}
}

// A batch that goes out after Redis lost its scripts (a restart, SCRIPT
// FLUSH) loads the script again and resends the checks that failed with
// NOSCRIPT: every answer is the session's.
func TestLiveBatchAfterAScriptFlush(t *testing.T) {
	rs := testutil.StartRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer c.Close()
	s := New(c, Options{Prefix: "flush:"})
	defer s.Close()
	ctx := t.Context()
	if err := s.Create(ctx, sessionstore.Record{ID: "live"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	calls := []liveCall{{"live", true}, {"unknown", true}, {"live", false}}
	calls = append(calls, liveCall{"live", true})
	asked := false
	answers := s.pipelineLiveChecks(ctx, calls, func(i int) bool { // the last caller leaves once its first send failed
		if i != 3 {
			return true
		}
		defer func() { asked = true }()
		return !asked
	})
	if !errors.Is(answers[3].err, errCallerLeft) {
		t.Fatalf("the check whose caller left after its first send failed: %+v; want it not sent again", answers[3])
	}
	for i, want := range []checkAnswer{{state: stateLive, marked: true}, {}, {state: stateLive}} {
		got := answers[i]
		if got.err != nil || got.state != want.state || got.marked != want.marked {
			t.Fatalf("check %d (%s): %+v; want %+v", i, calls[i].id, got, want)
		}
	}
	if ttl := answers[0].ttl; ttl <= 0 || ttl > time.Minute {
		t.Fatalf("the live record's ttl: %v, want within a minute", ttl)
	}
}

// An answer in flight while the session was forgotten (this Store's own
// Terminate) is not kept: only answers begun after it are. A window is
// kept only for a marked live answer, and never outlasts the record.
func TestLiveCacheKeepsOnlyWhatItMay(t *testing.T) {
	c := newLiveCache(time.Hour)
	open := func(id string) bool { o, _, _ := c.lookup(id, c.now()); return o }
	_, _, seq := c.lookup("s", c.now())
	sent := c.now()
	c.forget("s")
	c.keep("s", seq, sent, -1, true, true)
	if open("s") {
		t.Fatal("an answer begun before forget was kept")
	}
	_, _, seq = c.lookup("s", c.now())
	c.keep("s", seq, c.now(), -1, true, true)
	if !open("s") {
		t.Fatal("an answer begun after forget was not kept")
	}
	_, _, seq = c.lookup("t", c.now())
	c.keep("t", seq, c.now(), time.Nanosecond, true, true)
	if o, _, _ := c.lookup("t", c.now()+time.Millisecond); o {
		t.Fatal("a window outlasted the record's ttl")
	}
	for _, tc := range []struct{ live, marked bool }{{true, false}, {false, true}} {
		_, _, seq = c.lookup("u", c.now())
		c.keep("u", seq, c.now(), -1, tc.live, tc.marked)
		if open("u") {
			t.Fatalf("live %v, marked %v: kept a window", tc.live, tc.marked)
		}
		if _, hot, _ := c.lookup("u", c.now()); !hot {
			t.Fatalf("live %v, marked %v: a session just checked is not hot", tc.live, tc.marked)
		}
	}
	if _, hot, _ := c.lookup("never", c.now()); hot {
		t.Fatal("a session never checked is hot")
	}
}

// The cache holds at most maxLiveCached sessions; one not checked for
// two hot periods is forgotten, without a scan: the generation it is in is
// dropped whole.
func TestLiveCacheIsBounded(t *testing.T) {
	c := newLiveCache(time.Hour)
	now := c.now()
	for i := range maxLiveCached + 10 {
		c.keep(strconv.Itoa(i), 0, now, -1, true, false)
	}
	held := func() int { return len(c.cur) + len(c.prev) }
	if n := held(); n != maxLiveCached {
		t.Fatalf("%d sessions kept, want the bound %d", n, maxLiveCached)
	}
	c.base = c.base.Add(-c.hot) // a hot period on: the generation turns
	c.keep("refused", 0, c.now(), -1, true, false)
	if n := held(); n != maxLiveCached {
		t.Fatalf("one period on, %d sessions kept, want the bound %d", n, maxLiveCached)
	}
	// A session it holds, checked again, is kept on, full or not.
	c.keep("5", 0, c.now(), -1, true, false)
	if _, ok := c.cur["5"]; !ok || held() != maxLiveCached {
		t.Fatalf("a held session checked again: in the newer generation %v, %d held", ok, held())
	}
	c.base = c.base.Add(-c.hot) // and another: the full generation goes
	c.keep("new", 0, c.now(), -1, true, false)
	if n := held(); n != 2 {
		t.Fatalf("two periods on, %d sessions kept, want 2 (the one checked again, and the new one)", n)
	}
	if _, hot, _ := c.lookup("0", c.now()); hot {
		t.Fatal("a session not checked for two periods is still hot")
	}
}

// A window never outlasts the record's expiry: a record that lapses
// within the millisecond (PTTL 0) or the next (1) opens none, and one that
// does not expire (-1) gets the whole window.
func TestLiveCacheWindowEndsBeforeTheRecordsExpiry(t *testing.T) {
	c := newLiveCache(10 * time.Millisecond)
	for _, tc := range []struct {
		ttl  time.Duration
		open bool
	}{{0, false}, {time.Millisecond, false}, {-time.Millisecond, true}, {5 * time.Millisecond, true}} {
		id := "s" + tc.ttl.String()
		now := c.now()
		c.keep(id, c.seq, now, tc.ttl, true, true)
		if open, _, _ := c.lookup(id, now); open != tc.open {
			t.Errorf("ttl %v: window open %v, want %v", tc.ttl, open, tc.open)
		}
		if tc.ttl > time.Millisecond {
			if open, _, _ := c.lookup(id, now+tc.ttl-time.Millisecond); open {
				t.Errorf("ttl %v: the window is open a millisecond before the expiry", tc.ttl)
			}
		}
	}
}
