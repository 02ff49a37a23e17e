package streamable_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

const testIdleTTL = 100 * time.Millisecond

func countUnregisters(n *atomic.Int64) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddOnUnregisterSession(func(context.Context, server.ClientSession) { n.Add(1) })
		server.WithHooks(hooks)(s)
	}
}

func TestIdleSessionExpiresLikeDelete(t *testing.T) {
	var unregistered atomic.Int64
	r := newRig(t, streamable.Config{IdleTTL: testIdleTTL}, countUnregisters(&unregistered))
	c := r.session()
	testutil.Eventually(t, wait, "the idle session to expire", func() bool {
		return r.h.Stats().Sessions == 0
	})
	ctx := testutil.Context(t, wait)
	post, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "POST after expiry", post.Status, post.Body)
	get, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "GET after expiry", get.Status, get.Body)
	if unregistered.Load() != 1 {
		t.Fatalf("unregister hooks: %d, want 1", unregistered.Load())
	}
}

// A session whose requests come closer together than its idle TTL never
// expires. Clock time, not the machine's: a request that a loaded machine
// delays past the TTL (as under -race on 2 cores) does not fail the test.
func TestRequestsKeepASessionAlive(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	r := newRig(t, streamable.Config{Clock: clock, IdleTTL: testIdleTTL})
	c := r.session()
	ctx := testutil.Context(t, wait)
	// Each request 0.6 of the TTL after the one before: ten span six TTLs.
	for range 10 {
		clock.Advance(testIdleTTL * 6 / 10)
		resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "echo on a busy session", resp.Status, http.StatusOK, resp.Body)
	}
	// The clock drives expiry here: a request after a TTL without one
	// finds the session gone.
	clock.Advance(testIdleTTL + time.Millisecond)
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "echo after a TTL without a request", resp.Status, resp.Body)
}

func TestOpenStreamKeepsASessionAliveAndItsEndLetsItExpire(t *testing.T) {
	r := newRig(t, streamable.Config{IdleTTL: testIdleTTL})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	// Pings every 5 ms: 100 of them span five idle TTLs with no request.
	for range 100 {
		if _, err := s.NextMatching(ctx, isPing); err != nil {
			t.Fatalf("stream ended while open: %v", err)
		}
	}
	if got := r.h.Stats().Sessions; got != 1 {
		t.Fatalf("a session with an open GET stream expired (Sessions = %d)", got)
	}
	s.Close()
	testutil.Eventually(t, wait, "the session to expire once its stream closed", func() bool {
		return r.h.Stats().Sessions == 0
	})
}

func TestRunningRequestKeepsASessionAlive(t *testing.T) {
	gate := make(chan struct{})
	r := newRig(t, streamable.Config{IdleTTL: testIdleTTL}, gatedTool(gate))
	c := r.session()
	ctx := testutil.Context(t, wait)
	call := callGated(t, ctx, c)
	// Keep-alive comments arrive while the call runs; 50 of them (5 ms
	// apart) span more than two idle TTLs.
	for range 50 {
		ev, err := call.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ev.IsComment() && !ev.IsPriming() {
			t.Fatalf("got %+v while the call was running, want keep-alive comments (after a priming event)", ev)
		}
	}
	if got := r.h.Stats().Sessions; got != 1 {
		t.Fatalf("a session with a running request expired (Sessions = %d)", got)
	}
	close(gate)
	m, err := call.NextMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Result == nil {
		t.Fatalf("gated call answered %+v", m)
	}
}
