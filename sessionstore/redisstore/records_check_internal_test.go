package redisstore

import (
	"errors"
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
