package streamable_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With a Redis store that is down, the store's errors reach the logs (and
// 503 bodies) without naming the session.
func TestLogsHoldNoSessionIDOnAStoreOutage(t *testing.T) {
	var logs lockedBuffer
	rs := testutil.StartRedisServer(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	store := redisstore.New(rc, redisstore.Options{Prefix: "r3log:", OpTimeout: 200 * time.Millisecond})
	h := streamable.New(demotools.NewServer("lifeline-test", "1"), streamable.Config{
		Store:       store,
		IdleTTL:     400 * time.Millisecond, // the sweeper runs every 100 ms
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		MaxSessions: 10,
	})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.Close()
		_ = store.Close()
		_ = rc.Close()
	})
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	rs.Stop() // a Redis outage
	testutil.Eventually(t, wait, "the sweeper to log a failed store check", func() bool {
		return strings.Contains(logs.String(), "store check failed")
	})
	if out := logs.String(); strings.Contains(out, c.SessionID) {
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, c.SessionID) {
				t.Fatalf("the session id %s is in the logs: %s", c.SessionID, line)
			}
		}
	}
}
