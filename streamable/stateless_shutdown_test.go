package streamable_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// In stateless mode a request that finishes while Shutdown waits for another
// one gets its answer at once: its deferred termination, which lost the race
// to Shutdown's, does not wait for Shutdown to finish.
func TestStatelessAnswerNotHeldByShutdown(t *testing.T) {
	holdStarted := make(chan struct{}, 1)
	quickStarted := make(chan struct{}, 1)
	releaseHold := make(chan struct{})
	releaseQuick := make(chan struct{})
	r := newRig(t, streamable.Config{Stateless: true, HeartbeatInterval: streamable.Disabled, CleanupTimeout: 3 * time.Second},
		func(s *server.MCPServer) {
			s.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				holdStarted <- struct{}{}
				<-releaseHold
				return mcp.NewToolResultText("held"), nil
			})
			s.AddTool(mcp.NewTool("quick"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				quickStarted <- struct{}{}
				<-releaseQuick
				return mcp.NewToolResultText("quick"), nil
			})
		})
	defer close(releaseHold)
	ctx := testutil.Context(t, wait)
	go func() { _, _ = r.client().CallTool(ctx, "hold", nil) }()
	<-holdStarted
	type res struct {
		resp *testutil.Response
		err  error
		at   time.Time
	}
	quick := make(chan res, 1)
	go func() {
		resp, err := r.client().CallTool(ctx, "quick", nil)
		quick <- res{resp, err, time.Now()}
	}()
	<-quickStarted
	down := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		down <- r.h.Shutdown(sctx)
	}()
	probe := r.client()
	testutil.Eventually(t, wait, "Shutdown to refuse new requests", func() bool {
		resp, err := probe.Call(ctx, "ping", nil)
		return err == nil && resp.Status == http.StatusServiceUnavailable
	})
	released := time.Now()
	close(releaseQuick)
	q := <-quick
	if q.err != nil {
		t.Fatal(q.err)
	}
	if last, _ := q.resp.Last(); !strings.Contains(string(last.Result), "quick") {
		t.Fatalf("quick: %d %s", q.resp.Status, q.resp.Body)
	}
	if d := q.at.Sub(released); d > time.Second {
		t.Fatalf("a stateless answer that existed during Shutdown reached its client %v after it was made (held by the handler's deferred end of its session)", d)
	}
}
