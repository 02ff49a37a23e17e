package lifelineclient_test

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/redis/go-redis/v9"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Two replicas share a Redis that restarts empty: every session is lost.
// 64 calls at once go on with one initialize, counted in front of the
// replicas, and the GET stream follows the new session.
func TestRedisRestartLosesSessions(t *testing.T) {
	rs := testutil.StartRedisServer(t)
	prefix := "t" + rand.Text()[:8] + ":"
	var handlers []*streamable.Handler
	var urls []string
	for range 2 {
		rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
		store := redisstore.New(rc, redisstore.Options{Prefix: prefix})
		h := streamable.New(demotools.NewServer("lifelineclient-cluster", "1"), streamable.Config{
			Store: store, HeartbeatInterval: streamable.Disabled, Logger: testLogger(),
		})
		ts := httptest.NewServer(h)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := h.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			ts.Close()
			_ = store.Close()
			_ = rc.Close()
		})
		handlers = append(handlers, h)
		urls = append(urls, ts.URL)
	}
	rr, err := testutil.NewRoundRobinProxy(urls...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rr.Close)
	cnt := count(rr)
	front := newFront(t, cnt)

	c := connect(t, front.URL, lifelineclient.Config{Resume: fastResume},
		[]transport.StreamableHTTPCOption{transport.WithContinuousListening()})
	c.echo("before")
	notifyAndWait(t, c, "before", 2)
	old := c.tr.GetSessionId()
	if err := rs.Restart(); err != nil {
		t.Fatal(err)
	}
	concurrentEchoes(t, c, 64)
	wantReplacedOnce(t, cnt, c, old)
	notifyAndWait(t, c, "after", 2)
}
