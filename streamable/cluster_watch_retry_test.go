package streamable_test

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// failFirstSubscribe fails its first Subscribe, as a store blip would.
type failFirstSubscribe struct {
	sessionstore.Store
	failed atomic.Bool
}

func (s *failFirstSubscribe) Subscribe(ctx context.Context, id string) (sessionstore.Subscription, error) {
	if s.failed.CompareAndSwap(false, true) {
		return nil, errors.New("redisstore: redis is unavailable: a blip")
	}
	return s.Store.Subscribe(ctx, id)
}

// A session's watch whose Subscribe fails tries again while the session
// runs requests, so a DELETE on another replica still cancels them.
func TestClusterWatchRetriesAFailedSubscribe(t *testing.T) {
	started := make(chan struct{}, 1)
	cancelled := make(chan error, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := &cluster{t: t, redis: testutil.StartRedisServer(t), setup: []func(*server.MCPServer){func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("wait_for_cancel"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cancelled <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			case <-release:
				return mcp.NewToolResultText("released"), nil
			}
		})
	}}}
	c.wrap = func(name string, s sessionstore.Store) sessionstore.Store {
		if name == "B" {
			return &failFirstSubscribe{Store: s}
		}
		return s
	}
	prefix := "t" + rand.Text()[:8] + ":"
	for _, name := range []string{"A", "B"} {
		c.replicas = append(c.replicas, c.start(name, streamable.Config{HeartbeatInterval: clusterHeartbeat}, redisstore.Options{Prefix: prefix}))
	}
	a := c.session(0)
	ctx := testutil.Context(t, 3*wait)
	go func() { _, _ = c.client(1, a).CallTool(ctx, "wait_for_cancel", nil) }()
	<-started
	del, err := c.client(0, a).Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE on A", del.Status, http.StatusOK, del.Body)
	select {
	case cause := <-cancelled:
		t.Logf("cancelled: %v", cause)
	case <-time.After(3 * time.Second):
		t.Fatal("3 s after DELETE on A, the request on B still runs: B's watch gave up after one failed Subscribe")
	}
}
