package streamable_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With replicas, the open counters (summed over the replicas, which share
// one MeterProvider) return to 0 once a session adopted by the others and
// streamed on two of them is deleted, and once they shut down.
func TestMetricsClusterOpenCountersReturnToZero(t *testing.T) {
	mr := newMeterRig(t)
	c := newCluster(t, streamable.Config{MeterProvider: mr.mp, IdleTTL: 2 * time.Second}, redisstore.Options{})
	ctx := testutil.Context(t, wait)
	a := c.session(0)
	onB := c.stream(c.client(1, a))
	toolText(t, c.client(2, a), "echo", map[string]any{"text": "x"})
	ms := mr.collect()
	ms.check(t, 3, "lifeline.sessions.open") // A's, and B's and C's copies
	ms.check(t, 1, "lifeline.streams.open", attrKind("get"))
	onB.Close()
	testutil.Eventually(t, wait, "B's stream to end", func() bool { return c.replicas[1].h.Stats().GetStreams == 0 })
	onC := c.stream(c.client(2, a))
	if resp, err := c.client(0, a).Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE on A: %v %+v", err, resp)
	}
	select {
	case <-onC.Ended():
	case <-ctx.Done():
		t.Fatal("C's stream did not end after the DELETE on A")
	}
	testutil.Eventually(t, wait, "every replica to drop the session", func() bool {
		for _, r := range c.replicas {
			if r.h.Stats().Sessions != 0 {
				return false
			}
		}
		return true
	})
	ms = mr.collect()
	ms.check(t, 0, "lifeline.sessions.open")
	ms.check(t, 0, "lifeline.streams.open")

	// A second session adopted everywhere, then every replica shuts down.
	b := c.session(1)
	c.stream(c.client(0, b))
	toolText(t, c.client(2, b), "echo", map[string]any{"text": "x"})
	for _, r := range c.replicas {
		sctx, cancel := context.WithTimeout(context.Background(), wait)
		if err := r.h.Shutdown(sctx); err != nil {
			t.Errorf("replica %s: Shutdown: %v", r.name, err)
		}
		cancel()
	}
	ms = mr.collect()
	ms.check(t, 0, "lifeline.sessions.open")
	ms.check(t, 0, "lifeline.streams.open")
}

// With a shared store, a session that expires (its idle TTL lapses in the
// store) is counted as expired, and its duration recorded, by the replica
// that created it, as on a single process; the other replicas' copies end
// as ended_elsewhere.
func TestMetricsClusterExpiryIsCountedAsExpired(t *testing.T) {
	mr := newMeterRig(t)
	c := newCluster(t, streamable.Config{MeterProvider: mr.mp, IdleTTL: 400 * time.Millisecond}, redisstore.Options{})
	a := c.session(0)
	toolText(t, c.client(1, a), "echo", map[string]any{"text": "x"}) // B adopts a copy
	testutil.Eventually(t, wait, "the session to expire everywhere", func() bool {
		for _, r := range c.replicas {
			if r.h.Stats().Sessions != 0 {
				return false
			}
		}
		return true
	})
	ms := mr.collect()
	ms.check(t, 0, "lifeline.sessions.open")
	ms.check(t, 1, "lifeline.sessions.ended", attrEnd("expired"))
	if ms.value("mcp.server.session.duration") != 1 {
		t.Errorf("the expired session's duration was not recorded\n%s", ms.dump("mcp.server.session.duration"))
	}
}
