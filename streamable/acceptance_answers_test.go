package streamable_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

type bbGate struct {
	started      chan string
	release      chan struct{}
	cancelled    atomic.Int32
	progressErrs atomic.Int32
}

const bbBigResult = 64 << 10

// wait holds a tool until the test releases it, its context ends (DELETE
// cancels running requests), or, as a bound, a timer fires.
func (g *bbGate) wait(ctx context.Context) {
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	select {
	case <-g.release:
	case <-ctx.Done():
		g.cancelled.Add(1)
	case <-timer.C:
	}
}

func bbGateServer() (*server.MCPServer, *bbGate) {
	g := &bbGate{started: make(chan string, 4), release: make(chan struct{})}
	srv := server.NewMCPServer("bb-gate", "1", server.WithToolCapabilities(true))
	srv.AddTool(mcp.NewTool("bb_big"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g.started <- "big"
		g.wait(ctx)
		return mcp.NewToolResultText("BIG:" + strings.Repeat("b", bbBigResult)), nil
	})
	srv.AddTool(mcp.NewTool("bb_progress"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		send := func(i int) {
			err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": i, "total": 3,
			})
			if err != nil {
				g.progressErrs.Add(1)
			}
		}
		send(1)
		g.started <- "progress"
		g.wait(ctx)
		send(2)
		send(3)
		return mcp.NewToolResultText("PROG:" + strings.Repeat("p", bbBigResult)), nil
	})
	srv.AddTool(mcp.NewTool("bb_slow"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		g.started <- "slow"
		timer := time.NewTimer(200 * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
			return mcp.NewToolResultText("slow done"), nil
		case <-ctx.Done():
			return mcp.NewToolResultText("slow cancelled early"), nil
		}
	})
	return srv, g
}

func bbCheckBig(t *testing.T, what string, res bbResult, wantID string) {
	t.Helper()
	if res.err != nil {
		t.Errorf("%s: %v", what, res.err)
		return
	}
	if res.resp.Status != http.StatusOK {
		t.Errorf("%s: status %d, want 200: %.300s", what, res.resp.Status, res.resp.Body)
		return
	}
	m, err := res.resp.Last()
	if err != nil {
		t.Errorf("%s: no message: %v (body %.300s)", what, err, res.resp.Body)
		return
	}
	if got := bbCompact(m.ID); got != wantID {
		t.Errorf("%s: answer id %s, want %s", what, got, wantID)
	}
	if m.Error != nil {
		t.Errorf("%s: error answer %d %s", what, m.Error.Code, m.Error.Message)
		return
	}
	if text := bbToolText(t, m); len(text) < bbBigResult {
		t.Errorf("%s: result text of %d bytes, want over %d", what, len(text), bbBigResult)
	}
}

func bbCheckProgress(t *testing.T, what string, res bbResult, wantID string, g *bbGate) {
	t.Helper()
	bbCheckBig(t, what, res, wantID)
	if res.err != nil || res.resp.Status != http.StatusOK {
		return
	}
	if !res.resp.IsSSE() {
		t.Errorf("%s: answer is %q, want an SSE stream (progress was sent)", what, res.resp.Header.Get("Content-Type"))
	}
	progress := 0
	for _, m := range res.resp.Messages {
		if m.Method == "notifications/progress" {
			progress++
		}
	}
	t.Logf("%s: %d progress notifications received, %d sends refused", what, progress, g.progressErrs.Load())
	if progress < 1 {
		t.Errorf("%s: no progress notification on the answer", what)
	}
	if want := 3 - int(g.progressErrs.Load()); progress != want {
		t.Errorf("%s: %d progress notifications received, %d were sent successfully", what, progress, want)
	}
}

func TestBlackboxAnswersDuringShutdown(t *testing.T) {
	srv, g := bbGateServer()
	rig := bbStart(t, srv, streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	big := bbPostAsync(ctx, c, bbToolCall("big-1", "bb_big", nil, nil))
	prog := bbPostAsync(ctx, c, bbToolCall("prog-1", "bb_progress", nil, map[string]any{"progressToken": "tok-1"}))
	bbAwait(t, g.started, 5*time.Second, "first tool started")
	bbAwait(t, g.started, 5*time.Second, "second tool started")

	shutCtx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	shutDone := make(chan error, 1)
	go func() { shutDone <- rig.h.Shutdown(shutCtx) }()

	// Shutdown is under way once new requests are refused.
	probe := rig.client()
	testutil.Eventually(t, 3*time.Second, "a new initialize gets 503 once Shutdown began", func() bool {
		_, err := probe.Initialize(ctx)
		return err != nil && strings.Contains(err.Error(), "status 503")
	})
	close(g.release)

	bbCheckBig(t, "JSON answer computed during Shutdown", bbAwait(t, big, 10*time.Second, "big answer"), `"big-1"`)
	bbCheckProgress(t, "SSE answer computed during Shutdown", bbAwait(t, prog, 10*time.Second, "progress answer"), `"prog-1"`, g)
	if err := bbAwait(t, shutDone, 10*time.Second, "Shutdown returned"); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if n := g.cancelled.Load(); n != 0 {
		t.Logf("note: %d tools saw their context cancelled", n)
	}
}

func TestBlackboxAnswersDuringDelete(t *testing.T) {
	srv, g := bbGateServer()
	rig := bbStart(t, srv, streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	big := bbPostAsync(ctx, c, bbToolCall(11, "bb_big", nil, nil))
	prog := bbPostAsync(ctx, c, bbToolCall(12, "bb_progress", nil, map[string]any{"progressToken": 99}))
	bbAwait(t, g.started, 5*time.Second, "first tool started")
	bbAwait(t, g.started, 5*time.Second, "second tool started")

	// DELETE cancels running requests: the tools compute their results
	// when their context ends, i.e. while DELETE is in progress (or, as a
	// bound, when their timer fires, DELETE still waiting).
	delDone := make(chan bbResult, 1)
	go func() {
		r, err := c.Delete(ctx)
		delDone <- bbResult{r, err}
	}()

	bbCheckBig(t, "JSON answer computed during DELETE", bbAwait(t, big, 10*time.Second, "big answer"), `11`)
	bbCheckProgress(t, "SSE answer computed during DELETE", bbAwait(t, prog, 10*time.Second, "progress answer"), `12`, g)
	del := bbAwait(t, delDone, 10*time.Second, "DELETE answered")
	if del.err != nil || del.resp.Status != http.StatusOK {
		t.Errorf("DELETE: %v %+v", del.err, del.resp)
	}
	t.Logf("tools that saw their context cancelled by DELETE: %d of 2", g.cancelled.Load())
	close(g.release)
}

// Tools that answer only when Shutdown cancels them (when what remains of
// its context falls to a quarter) still get their answers, with their ids,
// to the client before Shutdown's context ends.
func TestBlackboxAnswersWhenShutdownCancels(t *testing.T) {
	srv, g := bbGateServer()
	rig := bbStart(t, srv, streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	big := bbPostAsync(ctx, c, bbToolCall("big-2", "bb_big", nil, nil))
	prog := bbPostAsync(ctx, c, bbToolCall("prog-2", "bb_progress", nil, map[string]any{"progressToken": "tok-2"}))
	bbAwait(t, g.started, 5*time.Second, "first tool started")
	bbAwait(t, g.started, 5*time.Second, "second tool started")

	shutCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	err := rig.h.Shutdown(shutCtx)
	took := time.Since(start)
	t.Logf("Shutdown returned %v after %v; %d tools saw their context cancelled", err, took, g.cancelled.Load())
	if err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if g.cancelled.Load() != 2 {
		t.Errorf("%d of 2 tools were cancelled by Shutdown", g.cancelled.Load())
	}
	bbCheckBig(t, "JSON answer computed when Shutdown cancelled", bbAwait(t, big, 10*time.Second, "big answer"), `"big-2"`)
	bbCheckProgress(t, "SSE answer computed when Shutdown cancelled", bbAwait(t, prog, 10*time.Second, "progress answer"), `"prog-2"`, g)
	close(g.release)
}

func TestBlackboxShutdownLetsRunningRequestFinish(t *testing.T) {
	srv, g := bbGateServer()
	rig := bbStart(t, srv, streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)
	c := rig.session(t, ctx)

	slow := bbPostAsync(ctx, c, bbToolCall("slow-1", "bb_slow", nil, nil))
	bbAwait(t, g.started, 5*time.Second, "slow tool started")

	shutCtx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	start := time.Now()
	err := rig.h.Shutdown(shutCtx)
	took := time.Since(start)
	if err != nil {
		t.Errorf("Shutdown: %v (after %v)", err, took)
	}
	res := bbAwait(t, slow, 5*time.Second, "slow answer")
	if res.err != nil {
		t.Fatalf("slow call: %v", res.err)
	}
	if res.resp.Status != http.StatusOK {
		t.Fatalf("slow call: status %d: %s", res.resp.Status, res.resp.Body)
	}
	m, err := res.resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	if got := bbCompact(m.ID); got != `"slow-1"` {
		t.Errorf("answer id %s, want \"slow-1\"", got)
	}
	if m.Error != nil {
		t.Fatalf("error answer: %+v", m.Error)
	}
	if text := bbToolText(t, m); text != "slow done" {
		t.Errorf("tool result %q, want \"slow done\" (the request must be let finish)", text)
	}
	t.Logf("Shutdown took %v", took)
}

// ---------------------------------------------------------------- 3: withdrawn sampling
