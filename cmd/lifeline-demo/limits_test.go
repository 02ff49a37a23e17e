package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// The limit flags reach the transport: -max-sessions bounds the sessions
// (503 past it), -max-requests-per-session the requests one session runs
// at once (429 past it).
func TestDemoLimitFlags(t *testing.T) {
	addr, _ := startDemo(t, io.Discard, "-addr", "127.0.0.1:0",
		"-max-sessions", "2", "-max-sessions-per-caller", "1", "-max-requests-per-session", "1")
	url := "http://" + addr + "/mcp"
	ctx := testutil.Context(t, wait)
	c := testutil.NewClient(url)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	// Anonymous callers have no per-caller bound: a second session is
	// fine, a third is past -max-sessions.
	if _, err := testutil.NewClient(url).Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	third := testutil.NewClient(url)
	resp, err := third.Call(ctx, "initialize", map[string]any{"protocolVersion": testutil.ProtocolVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusServiceUnavailable {
		t.Fatalf("third initialize: status %d (%s), want 503", resp.Status, resp.Body)
	}

	// One call runs (a long step), so the next request of the session is
	// refused. (The call itself is retried while it finds the poll below
	// running: the bound refuses whichever request comes second.)
	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for callCtx.Err() == nil {
			resp, err := c.CallTool(callCtx, "lifeline_progress", map[string]any{"steps": 1, "delay_ms": 10000})
			if err != nil || resp.Status != http.StatusTooManyRequests {
				return
			}
		}
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(wait)
	for {
		resp, err := c.Call(ctx, "tools/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(resp.Body), "maximum of 1 requests running") {
				t.Fatalf("429 without Retry-After or reason: %q", resp.Body)
			}
			break
		}
		if resp.Status != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("tools/list while a call runs: status %d (%s), want 429 in time", resp.Status, resp.Body)
		}
	}
}

func TestDemoRefusesBadLimitFlags(t *testing.T) {
	ctx := testutil.Context(t, wait)
	for _, args := range [][]string{
		{"-max-sessions", "0"},
		{"-max-sessions-per-caller", "0"},
		{"-max-requests-per-session", "-2"},
	} {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "-max-sessions must be positive") {
			t.Errorf("run %q = %v, want a flag error", args, err)
		}
	}
}
