package streamable_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A failed initialize leaves no tombstone: its record is removed, not
// terminated, so with Memory at its MemoryTombstones bound it cannot cost
// a really terminated session its tombstone.
func TestFailedInitializeLeavesNoTombstone(t *testing.T) {
	store := sessionstore.NewMemory(nil)
	ctx := context.Background()
	// A terminated session, its tombstone the closest to lapsing...
	if err := store.Create(ctx, sessionstore.Record{ID: "victim"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := store.Terminate(ctx, "victim"); err != nil {
		t.Fatal(err)
	}
	// ...among as many tombstones as Memory keeps.
	for i := range sessionstore.MemoryTombstones - 1 {
		id := fmt.Sprintf("other-%d", i)
		if err := store.Create(ctx, sessionstore.Record{ID: id}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := store.Terminate(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Get(ctx, "victim"); !errors.Is(err, sessionstore.ErrTerminated) {
		t.Fatalf("setup: victim: %v", err)
	}
	r := newRig(t, streamable.Config{Store: store})
	c := r.client()
	// An initialize mcp-go fails (its params do not parse).
	resp, err := c.Call(testutil.Context(t, wait), "initialize", map[string]any{"protocolVersion": 12345})
	if err != nil {
		t.Fatal(err)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		t.Fatalf("the initialize did not fail (session %s): %s", sid, resp.Body)
	}
	t.Logf("failed initialize: %d %s", resp.Status, resp.Body)
	if _, err := store.Get(ctx, "victim"); !errors.Is(err, sessionstore.ErrTerminated) {
		t.Fatalf("after one failed initialize, the terminated session's Get: %v, want ErrTerminated (its tombstone was evicted by the discarded session's Terminate)", err)
	}
}
