package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A client that leaves a request before anything went out on its
// response cancels the request, whether it leaves in the request's first
// moments (the requestWatch notices it at its next look) or later (the
// request has its own callback by then): a resumable request, and one
// whose context detachedContext detached from its client's, in the session
// era without an event log and in 2026-07-28.
func TestClientLeavingARunningRequestCancelsIt(t *testing.T) {
	for _, era := range []struct {
		name       string
		noEventLog bool
		modern     bool
	}{{"resumable", false, false}, {"without an event log", true, false}, {"2026-07-28", false, true}} {
		for _, tc := range []struct {
			name  string
			young bool // leaves while the watch still lists the request
		}{{"in its first moments", true}, {"once handed off", false}} {
			t.Run(era.name+"/"+tc.name, func(t *testing.T) {
				testClientLeaving(t, era.noEventLog, era.modern, tc.young)
			})
		}
	}
}

func testClientLeaving(t *testing.T, noEventLog, modern, young bool) {
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, DisableEventLog: noEventLog}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("blocked"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		})
	})
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
	c := testutil.NewClient(proxy.URL())
	ctx := testutil.Context(t, wait)
	var call func()
	if modern {
		req := r.modernRequest(ctx, t, modernMsg(1, "tools/call", map[string]any{"name": "blocked"}, nil), nil)
		req.URL.Host = strings.TrimPrefix(proxy.URL(), "http://")
		call = func() { _, _ = c.Do(req) }
	} else {
		if _, err := c.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		call = func() {
			_, _ = c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": "blocked"}})
		}
	}
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		call() // its connection is cut: no answer comes
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	if young {
		// Handed off already only on a machine so slow that a tick
		// passed since the tool started: the test then checks the other
		// path, and says so.
		if n := streamable.WatchListed(r.h); n != 1 {
			t.Logf("the watch lists %d requests (a tick passed): the client leaves a handed-off request", n)
		}
	} else {
		testutil.Eventually(t, wait, "the request handed off", func() bool { return streamable.WatchListed(r.h) == 0 })
	}
	proxy.CutAll()
	select {
	case cause := <-causes:
		// A context.Canceled, as a context derived from the client's would
		// end with.
		if cause == nil || !strings.Contains(cause.Error(), "client closed its connection") || !errors.Is(cause, context.Canceled) {
			t.Fatalf("the request was cancelled with %v, want its client's leaving, a context.Canceled", cause)
		}
	case <-ctx.Done():
		t.Fatal("the request still runs after its client left")
	}
	<-callDone
	testutil.Eventually(t, wait, "the watch lists nothing", func() bool { return streamable.WatchListed(r.h) == 0 })
}

// A request whose client left before it began (its request's context
// already ended) starts cancelled, in every era, as a context derived from
// its client's would: a tool that checks its context first does nothing.
func TestRequestOfAClientGoneAlreadyStartsCancelled(t *testing.T) {
	for _, era := range []struct {
		name       string
		noEventLog bool
		modern     bool
	}{{"without an event log", true, false}, {"2026-07-28", false, true}} {
		t.Run(era.name, func(t *testing.T) {
			errs := make(chan error, 1)
			r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, DisableEventLog: era.noEventLog}, func(s *server.MCPServer) {
				s.AddTool(mcp.NewTool("first"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					errs <- ctx.Err()
					return mcp.NewToolResultText("ran"), nil
				})
			})
			ctx := testutil.Context(t, wait)
			var req *http.Request
			if era.modern {
				req = r.modernRequest(ctx, t, modernMsg(1, "tools/call", map[string]any{"name": "first"}, nil), nil)
			} else {
				c := r.client()
				if _, err := c.Initialize(ctx); err != nil {
					t.Fatal(err)
				}
				body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "first"}})
				if err != nil {
					t.Fatal(err)
				}
				if req, err = c.NewRequest(ctx, http.MethodPost, body); err != nil {
					t.Fatal(err)
				}
			}
			// No deadline, as net/http's own request context has none: the
			// request's context is detached from it.
			gone, leave := context.WithCancel(context.Background())
			leave()
			r.h.ServeHTTP(httptest.NewRecorder(), req.WithContext(gone))
			select {
			case err := <-errs:
				if err == nil {
					t.Error("the tool of a request whose client had left ran with a live context")
				}
			default:
				t.Fatal("the tool did not run")
			}
		})
	}
}
