package redisstore

import (
	"errors"
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
// alone and in batches.
func TestCheckLiveThroughTheScript(t *testing.T) {
	rs := testutil.StartRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	defer c.Close()
	s := New(c, Options{Prefix: "script:"})
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
// FLUSH) resends each check that failed with NOSCRIPT: every answer is the
// session's.
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
	b := &liveBatch{ids: []string{"live", "unknown"}, done: make(chan struct{})}
	s.runLiveBatch(b)
	for i, want := range []string{stateLive, ""} {
		if b.errs[i] != nil || b.states[i] != want {
			t.Fatalf("check %d (%s): state %q, err %v; want %q", i, b.ids[i], b.states[i], b.errs[i], want)
		}
	}
	if b.ttls[0] <= 0 || b.ttls[0] > time.Minute {
		t.Fatalf("the live record's ttl: %v, want within a minute", b.ttls[0])
	}
}

// An answer in flight while the session was forgotten (this Store's own
// Terminate) is not kept: only answers begun after it are.
func TestLiveCacheDropsAnswersAForgetOvertook(t *testing.T) {
	c := newLiveCache(time.Hour)
	seq := c.begin()
	sent := c.now()
	c.forget("s")
	c.keep("s", seq, sent, 0)
	if c.live("s", c.now()) {
		t.Fatal("an answer begun before forget was kept")
	}
	seq = c.begin()
	c.keep("s", seq, c.now(), 0)
	if !c.live("s", c.now()) {
		t.Fatal("an answer begun after forget was not kept")
	}
	c.keep("t", c.begin(), c.now(), time.Nanosecond)
	if c.live("t", c.now()+time.Millisecond) {
		t.Fatal("a window outlasted the record's ttl")
	}
}

// The cache holds at most maxLiveCached sessions; windows that closed make
// room again.
func TestLiveCacheIsBounded(t *testing.T) {
	c := newLiveCache(time.Hour)
	now := c.now()
	for i := range maxLiveCached + 10 {
		c.keep(strconv.Itoa(i), c.begin(), now, 0)
	}
	if n := len(c.until); n != maxLiveCached {
		t.Fatalf("%d sessions kept, want the bound %d", n, maxLiveCached)
	}
	c.window = time.Nanosecond // every window kept from now on closes at once
	c.base = c.base.Add(-2 * time.Hour)
	c.keep("new", c.begin(), c.now(), 0)
	if n := len(c.until); n != 1 {
		t.Fatalf("after every window closed, %d sessions kept, want 1", n)
	}
}
