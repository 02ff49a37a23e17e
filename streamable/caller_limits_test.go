package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// initializeAs sends initialize as caller and returns the answer (with
// the session id set on the client when it succeeded).
func initializeAs(t *testing.T, url, caller string) (*testutil.Client, *testutil.Response) {
	t.Helper()
	c := testutil.NewClient(url)
	if caller != "" {
		c.Header = map[string]string{callerHeader: caller}
	}
	resp, err := c.Call(testutil.Context(t, wait), "initialize", map[string]any{"protocolVersion": testutil.ProtocolVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	c.SessionID, c.ProtocolVersion = resp.Header.Get("Mcp-Session-Id"), testutil.ProtocolVersion
	return c, resp
}

// wantTooMany requires a 429 with Retry-After whose JSON-RPC error echoes
// id and says what ran out.
func wantTooMany(t *testing.T, what string, resp *testutil.Response, id, says string) {
	t.Helper()
	wantStatus(t, what, resp.Status, http.StatusTooManyRequests, resp.Body)
	if resp.Header.Get("Retry-After") == "" {
		t.Fatalf("%s: 429 without Retry-After", what)
	}
	var m testutil.Message
	if err := json.Unmarshal(resp.Body, &m); err != nil || m.Error == nil {
		t.Fatalf("%s: body %q is not a JSON-RPC error", what, resp.Body)
	}
	if string(m.ID) != id || !strings.Contains(m.Error.Message, says) {
		t.Fatalf("%s: error %s %q, want id %s and %q", what, m.ID, m.Error.Message, id, says)
	}
}

// One caller looping on initialize cannot keep another from getting a
// session: past MaxSessionsPerCaller its initialize gets 429, well before
// MaxSessions, and a session it ends makes room for it again.
func TestMaxSessionsPerCaller(t *testing.T) {
	r := newRig(t, streamable.Config{Identify: identifyByHeader, MaxSessions: 10, MaxSessionsPerCaller: 3})
	var held []*testutil.Client
	for i := range 50 {
		c, resp := initializeAs(t, r.ts.URL, "greedy")
		if i < 3 {
			wantStatus(t, "greedy initialize", resp.Status, http.StatusOK, resp.Body)
			held = append(held, c)
			continue
		}
		wantTooMany(t, "greedy initialize past its bound", resp, "1", "maximum of 3 sessions")
	}
	if got := r.h.Stats().CallerSessionsRefused; got != 47 {
		t.Fatalf("Stats.CallerSessionsRefused = %d, want 47", got)
	}
	_, resp := initializeAs(t, r.ts.URL, "other")
	wantStatus(t, "another caller's initialize", resp.Status, http.StatusOK, resp.Body)
	// Anonymous callers have no per-caller bound, only MaxSessions.
	for range 6 {
		_, resp := initializeAs(t, r.ts.URL, "")
		wantStatus(t, "anonymous initialize", resp.Status, http.StatusOK, resp.Body)
	}
	_, resp = initializeAs(t, r.ts.URL, "")
	wantStatus(t, "initialize past MaxSessions", resp.Status, http.StatusServiceUnavailable, resp.Body)
	// Ending one of its sessions gives the caller room for one more (and
	// frees one of MaxSessions).
	del, err := held[0].Delete(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", del.Status, http.StatusOK, del.Body)
	_, resp = initializeAs(t, r.ts.URL, "greedy")
	wantStatus(t, "greedy initialize after a DELETE", resp.Status, http.StatusOK, resp.Body)
}

// toolBlock is a tool that says it started on entered, then runs until
// release is closed or its request ends.
const toolBlock = "test_block"

func addBlockTool(entered chan<- struct{}, release <-chan struct{}) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool(toolBlock), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return mcp.NewToolResultText("done"), nil
		})
	}
}

// A session runs at most MaxRequestsPerSession requests at once: one more
// gets 429 echoing its id, notifications still pass, other sessions are
// not limited, and once one request is answered the next one runs.
func TestMaxRequestsPerSession(t *testing.T) {
	entered, release := make(chan struct{}, 8), make(chan struct{})
	r := newRig(t, streamable.Config{MaxRequestsPerSession: 2}, addBlockTool(entered, release))
	c := r.session()
	ctx := testutil.Context(t, wait)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	for range 2 {
		wg.Go(func() {
			resp, err := c.CallTool(ctx, toolBlock, nil)
			if err != nil {
				t.Error(err)
				return
			}
			if resp.Status != http.StatusOK {
				t.Errorf("blocked call: status %d (%s)", resp.Status, resp.Body)
			}
		})
	}
	for range 2 {
		select {
		case <-entered:
		case <-ctx.Done():
			t.Fatal("the two calls did not start")
		}
	}
	resp, err := c.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":"third","method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantTooMany(t, "a third request", resp, `"third"`, "maximum of 2 requests running")
	if got := resp.Header.Get("Retry-After"); got != "1" {
		t.Fatalf("Retry-After = %q, want 1", got)
	}
	resp, err = c.Notify(ctx, "notifications/roots/list_changed", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "a notification", resp.Status, http.StatusAccepted, resp.Body)
	other := r.session()
	resp, err = other.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "another session's request", resp.Status, http.StatusOK, resp.Body)
	if got := r.h.Stats().SessionRequestsRefused; got != 1 {
		t.Fatalf("Stats.SessionRequestsRefused = %d, want 1", got)
	}
	releaseOnce.Do(func() { close(release) })
	wg.Wait()
	resp, err = c.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "a request once the others ended", resp.Status, http.StatusOK, resp.Body)
}
