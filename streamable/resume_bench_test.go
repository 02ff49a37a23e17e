package streamable_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// BenchmarkGetStreamNotifications measures notifications sent to a session
// and read off its GET stream over loopback, with the event log (the
// default) and without it: what recording every message costs.
func BenchmarkGetStreamNotifications(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  streamable.Config
	}{
		{"log-on", streamable.Config{}},
		{"log-off", streamable.Config{DisableEventLog: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.HeartbeatInterval = 20 * time.Second
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			mcp := demotools.NewServer("lifeline-bench", "1")
			h := streamable.New(mcp, cfg)
			ts := httptest.NewServer(h)
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_ = h.Shutdown(ctx)
				ts.Close()
			}()
			c := testutil.NewClient(ts.URL)
			c.HTTP = ts.Client()
			ctx := testutil.Context(b, time.Minute)
			if _, err := c.Initialize(ctx); err != nil {
				b.Fatal(err)
			}
			s, err := c.OpenStream(ctx)
			if err != nil || s.Status != http.StatusOK {
				b.Fatalf("GET: %v", err)
			}
			defer s.Close()
			params := map[string]any{"level": "info", "data": "a notification of about a hundred bytes, as progress or log lines are"}
			const batch = 256 // under the session queue (512)
			b.ReportAllocs()
			b.ResetTimer()
			for sent := 0; sent < b.N; {
				n := min(batch, b.N-sent)
				for range n {
					if err := mcp.SendNotificationToSpecificClient(c.SessionID, "notifications/message", params); err != nil {
						b.Fatal(err)
					}
				}
				for range n {
					if _, err := s.NextMatching(ctx, isLog); err != nil {
						b.Fatal(err)
					}
				}
				sent += n
			}
		})
	}
}
