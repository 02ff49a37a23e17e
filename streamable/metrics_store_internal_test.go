package streamable

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// onlyStore is a Store that is nothing more: no Broadcaster, no event log
// provider, no Sweep.
type onlyStore struct{ sessionstore.Store }

// The metered store hides nothing a store can do beyond Store: for each
// kind of store, what the transport finds (shared or not, broadcasts
// across replicas, the store's event log, the broadcast drop count,
// Sweep) is what it finds without metrics, and calls reach the store.
func TestMeteredStoreKeepsWhatTheStoreCan(t *testing.T) {
	addr := testutil.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rc.Close() })
	rs := redisstore.New(rc, redisstore.Options{Prefix: "mt:"})
	t.Cleanup(func() { _ = rs.Close() })
	for _, tc := range []struct {
		name                                   string
		store                                  sessionstore.Store
		shared, bcast, log, drops, sweep, meta bool
	}{
		{name: "default memory", store: nil, log: true, drops: true, sweep: true},
		{name: "redisstore", store: rs, shared: true, bcast: true, log: true, drops: true},
		{name: "plain shared store", store: onlyStore{sessionstore.NewMemory(time.Now)}, shared: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(server.NewMCPServer("t", "1"), Config{Store: tc.store, HeartbeatInterval: Disabled})
			defer h.Close()
			if tc.store != nil && h.cfg.Store != tc.store {
				t.Fatal("Config.Store was replaced")
			}
			if h.shared != tc.shared {
				t.Errorf("shared = %v, want %v", h.shared, tc.shared)
			}
			if got := h.clusterBroadcaster() != nil; got != tc.bcast {
				t.Errorf("broadcasts across replicas = %v, want %v", got, tc.bcast)
			}
			if got := h.cfg.EventLog != nil; got != tc.log {
				t.Errorf("event log = %v, want %v", got, tc.log)
			}
			_, drops := h.cfg.Store.(sessionstore.BroadcastDropCounter)
			if drops != tc.drops {
				t.Errorf("BroadcastDropCounter = %v, want %v", drops, tc.drops)
			}
			_, sweep := h.cfg.Store.(interface{ Sweep() })
			if sweep != tc.sweep {
				t.Errorf("Sweep = %v, want %v", sweep, tc.sweep)
			}
			// Calls go through to the store.
			ctx := context.Background()
			if err := h.store.Create(ctx, sessionstore.Record{ID: "s-" + tc.name}, time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := h.cfg.Store.Get(ctx, "s-"+tc.name); err != nil {
				t.Fatalf("the record the metered store created: %v", err)
			}
			if _, err := h.store.Get(ctx, "nobody"); !errors.Is(err, sessionstore.ErrNotFound) {
				t.Fatalf("Get of an unknown id: %v", err)
			}
			_ = h.store.Remove(ctx, "s-"+tc.name)
		})
	}
}
