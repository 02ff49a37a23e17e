package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// gatedCall is one call of the "gated" tool: the answer it returns once the
// test lets it, and what the client got.
type gatedCall struct {
	size   int  // bytes of result text: up to 4 KiB is a small JSON answer
	stream bool // send a notification first: the answer is SSE
	honor  bool // return at once, with an error, when the request is cancelled
}

// answerGatedTool adds "gated": it optionally sends a notification (which makes
// its answer SSE), reports on started, then waits at gate, ignoring the
// request's cancellation unless asked to honor it, and answers with size
// bytes of text.
func answerGatedTool(started chan<- struct{}, gate *testutil.Barrier) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("gated"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if req.GetBool("stream", false) {
				if err := s.SendNotificationToClient(ctx, "notifications/message",
					map[string]any{"level": "info", "data": "working"}); err != nil {
					return nil, err
				}
			}
			started <- struct{}{}
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), wait)
			defer cancel()
			if req.GetBool("honor", false) {
				wctx = ctx
			}
			if err := gate.Wait(wctx); err != nil {
				return nil, fmt.Errorf("gated tool gave up: %w", context.Cause(wctx))
			}
			return mcp.NewToolResultText(strings.Repeat("z", req.GetInt("size", 0))), nil
		})
	}
}

const gatedID = 42

// start posts the call with id gatedID and returns where its answer will
// arrive, once the tool has started.
// startCancellableCall starts, on a new rig, a call of the gated tool that
// returns only when cancelled (its gate is never passed), answering on JSON
// or, with stream, on SSE; it returns once the tool runs.
func startCancellableCall(t *testing.T, stream bool) (*rig, *testutil.Client, <-chan *testutil.Response) {
	t.Helper()
	started := make(chan struct{}, 1)
	gate := testutil.NewBarrier(2) // never passed
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, answerGatedTool(started, gate))
	c := r.session()
	call := gatedCall{size: 10, stream: stream, honor: true}
	return r, c, call.start(t, c, started)
}

func (g gatedCall) start(t *testing.T, c *testutil.Client, started <-chan struct{}) <-chan *testutil.Response {
	t.Helper()
	ctx := testutil.Context(t, wait)
	answer := make(chan *testutil.Response, 1)
	go func() {
		resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": gatedID, "method": "tools/call",
			"params": map[string]any{"name": "gated", "arguments": map[string]any{
				"size": g.size, "stream": g.stream, "honor": g.honor}}})
		if err != nil {
			t.Logf("tools/call: %v", err)
		}
		answer <- resp
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool did not start")
	}
	return answer
}

// wantResult requires the answer to carry the tool's result, whole, with
// the request's id.
func (g gatedCall) wantResult(t *testing.T, resp *testutil.Response) {
	t.Helper()
	m := wantAnswer(t, resp, g.stream)
	if m.Error != nil {
		t.Fatalf("answer is an error %+v, want the tool's result", *m.Error)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) != 1 || len(res.Content[0].Text) != g.size {
		t.Fatalf("result %.200s (%v), want %d bytes of text", m.Result, err, g.size)
	}
}

// wantAnswer requires a 200 whose last message answers the request: its id,
// a result or an error.
func wantAnswer(t *testing.T, resp *testutil.Response, sse bool) testutil.Message {
	t.Helper()
	if resp == nil {
		t.Fatal("no answer: the connection failed")
	}
	m, err := resp.Last()
	if err != nil {
		t.Fatalf("status %d, no message: %v (body %q)", resp.Status, err, resp.Body)
	}
	wantStatus(t, "tools/call", resp.Status, http.StatusOK, resp.Body)
	if resp.IsSSE() != sse {
		t.Fatalf("answer SSE %v, want %v", resp.IsSSE(), sse)
	}
	if string(m.ID) != fmt.Sprint(gatedID) || m.Method != "" || (m.Result == nil) == (m.Error == nil) {
		t.Fatalf("last message %+v, want the answer to request %d", m, gatedID)
	}
	return m
}

var gatedCases = []struct {
	name string
	call gatedCall
}{
	{"small JSON", gatedCall{size: 100}},
	{"large JSON", gatedCall{size: 64 << 10}},
	{"SSE", gatedCall{size: 100, stream: true}},
}

// An answer that exists when, or after, Shutdown begins is delivered, with
// its id, whatever its size or form: Shutdown lets running requests finish
// (within its context) instead of replacing their answers by a 503.
func TestShutdownDeliversTheAnswersOfRunningRequests(t *testing.T) {
	// A tool that honors cancellation is not cancelled while Shutdown's
	// context leaves time.
	cases := append(gatedCases[:len(gatedCases):len(gatedCases)],
		struct {
			name string
			call gatedCall
		}{"honors cancellation", gatedCall{size: 100, honor: true}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			gate := testutil.NewBarrier(2)
			r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, answerGatedTool(started, gate))
			c := r.session()
			answer := tc.call.start(t, c, started)
			down := shutdownInBackground(t, r, 5*time.Second)
			// The tool answers only once Shutdown has begun.
			if err := gate.Wait(testutil.Context(t, wait)); err != nil {
				t.Fatal(err)
			}
			tc.call.wantResult(t, <-answer)
			if err := <-down; err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
		})
	}
}

// shutdownInBackground starts Shutdown with a context of d and returns once
// new requests are refused; the channel gets Shutdown's result.
func shutdownInBackground(t *testing.T, r *rig, d time.Duration) <-chan error {
	t.Helper()
	down := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		down <- r.h.Shutdown(ctx)
	}()
	probe := r.client()
	testutil.Eventually(t, wait, "Shutdown to refuse new requests", func() bool {
		resp, err := probe.Call(testutil.Context(t, wait), "ping", nil)
		return err == nil && resp.Status == http.StatusServiceUnavailable
	})
	return down
}

// A request that honors cancellation and outlives Shutdown's context is
// cancelled before the context ends, early enough that its client still
// gets an answer with its id (here the tool's error).
func TestShutdownCancelsWhatOutlivesItsContextAndAnswersWithTheID(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			r, _, answer := startCancellableCall(t, stream)
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			if err := r.h.Shutdown(ctx); err != nil {
				t.Fatalf("Shutdown: %v (the cancelled request should have answered within it)", err)
			}
			m := wantAnswer(t, <-answer, stream)
			if m.Error == nil || !strings.Contains(m.Error.Message, "shutting down") {
				t.Fatalf("answer %+v, want the tool's error naming the shutdown", m)
			}
		})
	}
}

// DELETE cancels the session's running requests, but an answer that exists
// (the handler returned while DELETE waited for it) is still written, with
// its id, whatever its size or form, instead of a 404 with a null id.
func TestDeleteDeliversAnswersThatExist(t *testing.T) {
	for _, tc := range gatedCases {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 1)
			gate := testutil.NewBarrier(2)
			r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, answerGatedTool(started, gate))
			c := r.session()
			answer := tc.call.start(t, c, started)
			ctx := testutil.Context(t, wait)
			deleted := make(chan *testutil.Response, 1)
			go func() {
				resp, err := c.Delete(ctx)
				if err != nil {
					t.Logf("DELETE: %v", err)
				}
				deleted <- resp
			}()
			testutil.Eventually(t, wait, "the DELETE to start terminating", func() bool {
				resp, err := c.Call(ctx, "ping", nil)
				return err == nil && resp.Status == http.StatusNotFound
			})
			if err := gate.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			tc.call.wantResult(t, <-answer)
			if del := <-deleted; del == nil || del.Status != http.StatusOK {
				t.Fatalf("DELETE answered %+v", del)
			}
		})
	}
}

// A request that DELETE cancels answers its client with its id: the
// cancelled tool's error, on JSON or on its SSE stream.
func TestDeleteAnswersACancelledRequestWithItsID(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			_, c, answer := startCancellableCall(t, stream)
			del, err := c.Delete(testutil.Context(t, wait))
			if err != nil {
				t.Fatal(err)
			}
			wantStatus(t, "DELETE", del.Status, http.StatusOK, del.Body)
			m := wantAnswer(t, <-answer, stream)
			if m.Error == nil || !strings.Contains(m.Error.Message, "DELETE") {
				t.Fatalf("answer %+v, want the tool's error naming the DELETE", m)
			}
		})
	}
}

// The transport's own error answers to a request echo its id, except the
// 404 of a session that is gone, which must read as the session's end: the
// Go SDK's client takes a JSON-RPC error carrying the call's id for that
// call's own failure and would never replace its session
// (interop's TestGoSDKCallAfterIdleExpiry).
func TestTransportErrorsEchoTheRequestID(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	good := r.session()
	unknown := r.client()
	unknown.SessionID, unknown.ProtocolVersion = good.SessionID+"x", testutil.ProtocolVersion
	badVersion := r.client()
	badVersion.SessionID, badVersion.ProtocolVersion = good.SessionID, "1999-01-01"
	for _, tc := range []struct {
		name   string
		c      *testutil.Client
		status int
		id     string
	}{
		{"unknown session", unknown, http.StatusNotFound, "null"},
		{"unsupported version", badVersion, http.StatusBadRequest, `"req-7"`},
	} {
		resp, err := tc.c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": "req-7", "method": "tools/list"})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, tc.name, resp.Status, tc.status, resp.Body)
		var m testutil.Message
		if err := json.Unmarshal(resp.Body, &m); err != nil || m.Error == nil || string(m.ID) != tc.id {
			t.Fatalf("%s: body %s, want an error with id %s", tc.name, resp.Body, tc.id)
		}
	}
}

// A client that does not read its answer cannot pin Shutdown: its blocked
// write is squeezed when the grace ends and interrupted when Shutdown's
// context does, so the handler exits (here the server's Close, which waits
// for every handler, returns) long before the write timeout.
func TestShutdownInterruptsAStalledAnswer(t *testing.T) {
	r := newRig(t, slowConfig(), bigResultTool)
	c := r.session()
	ctx := testutil.Context(t, wait)
	stalledBigCall(t, r, c)
	sctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := r.h.Shutdown(sctx); err != nil {
		r.shutdownFailed = true // the write was still blocked when ctx ended
	}
	closed := make(chan struct{})
	go func() { r.ts.Close(); close(closed) }()
	select {
	case <-closed:
		t.Logf("Shutdown and Close took %v", time.Since(start))
	case <-ctx.Done():
		t.Fatal("the stalled client's handler was still running long after Shutdown")
	}
}
