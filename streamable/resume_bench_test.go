package streamable_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The figures of issue 12 (resumability): what recording every message
// costs, on the memory store (the default memory log) and on Redis (the
// store's log, the default with a Redis store), against the same setup with
// DisableEventLog; and how long a replay of 1,000 missed events takes. Run:
//
//	go test -run '^$' -bench 'Resumability' -count 5 ./streamable/

// resumeTarget is one replica under a resumability benchmark.
type resumeTarget struct {
	mcp *server.MCPServer
	h   *streamable.Handler
	url string
}

// client returns a client of the target's endpoint.
func (t resumeTarget) client() *testutil.Client { return testutil.NewClient(t.url) }

// resumeSetups runs bench on one replica with the memory store and on one
// of three replicas sharing a redis-server, each with its default event log
// ("log-on") and with DisableEventLog ("log-off"). bounds, when not nil,
// replaces the default log by one with those bounds (memory or Redis).
func resumeSetups(b *testing.B, offToo bool, bounds *sessionstore.EventLogOptions, bench func(*testing.B, resumeTarget)) {
	base := streamable.Config{HeartbeatInterval: 20 * time.Second}
	modes := []bool{true}
	if offToo {
		modes = append(modes, false)
	}
	for _, on := range modes {
		name := "log-on"
		if !on {
			name = "log-off"
		}
		b.Run("memory/"+name, func(b *testing.B) {
			cfg := base
			cfg.DisableEventLog = !on
			if on && bounds != nil {
				cfg.EventLog = sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{EventLogOptions: *bounds})
			}
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			mcp := demotools.NewServer("lifeline-bench", "1")
			h := streamable.New(mcp, cfg)
			ts := httptest.NewServer(h)
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				_ = h.Shutdown(ctx)
				ts.Close()
			})
			bench(b, resumeTarget{mcp: mcp, h: h, url: ts.URL})
		})
		b.Run("redis/"+name, func(b *testing.B) {
			cfg := base
			cfg.DisableEventLog = !on
			cl := newConfiguredCluster(b, cfg, redisstore.Options{}, func(s *redisstore.Store, cfg *streamable.Config) {
				if on && bounds != nil {
					cfg.EventLog = s.EventLog(*bounds)
				}
			})
			r := cl.replicas[0]
			bench(b, resumeTarget{mcp: r.mcp, h: r.h, url: r.ts.URL})
		})
	}
}

// BenchmarkGetStreamNotifications measures notifications sent to a session
// and read off its GET stream over loopback, with the event log (the
// default) and without it: what recording every message costs. It reports
// notifications/s.
func BenchmarkGetStreamNotifications(b *testing.B) {
	resumeSetups(b, true, nil, func(b *testing.B, t resumeTarget) {
		c := t.client()
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
				if err := t.mcp.SendNotificationToSpecificClient(c.SessionID, "notifications/message", params); err != nil {
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
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "notifications/s")
	})
}

// BenchmarkResumabilityToolsCallSSE measures tools/call answered as SSE
// (lifeline_progress: three notifications on the call's own stream, then
// the result) by 16 clients at once, each on its own session, with the
// event log and without. It reports calls/s.
func BenchmarkResumabilityToolsCallSSE(b *testing.B) {
	resumeSetups(b, true, nil, func(b *testing.B, t resumeTarget) {
		const parallelism = 8 // 8 x GOMAXPROCS clients
		b.SetParallelism(parallelism)
		ctx := testutil.Context(b, time.Minute)
		clients := make(chan *testutil.Client, parallelism*runtime.GOMAXPROCS(0))
		for range cap(clients) {
			c := t.client()
			if _, err := c.Initialize(ctx); err != nil {
				b.Fatal(err)
			}
			clients <- c
		}
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			c := <-clients
			for pb.Next() {
				resp, err := c.CallTool(ctx, "lifeline_progress", map[string]any{"steps": 3})
				if err != nil || resp.Status != http.StatusOK || len(resp.Messages) != 4 {
					b.Errorf("tools/call: %v %+v", err, resp)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	})
}

// replayMissed is how many events BenchmarkResumabilityReplay1000 replays.
const replayMissed = 1000

// BenchmarkResumabilityReplay1000 measures a resume that replays 1,000
// missed notifications of about 200 bytes each: from the GET with
// Last-Event-ID to the client's read of the 1,000th replayed event. The
// log holds them all (its per-stream bound raised past the default 1,000,
// which the stream's priming event would otherwise push the first one out
// of). It reports the median in ms.
func BenchmarkResumabilityReplay1000(b *testing.B) {
	bounds := &sessionstore.EventLogOptions{MaxStreamEvents: 4 * replayMissed}
	resumeSetups(b, false, bounds, func(b *testing.B, t resumeTarget) {
		c := t.client()
		ctx := testutil.Context(b, time.Minute)
		if _, err := c.Initialize(ctx); err != nil {
			b.Fatal(err)
		}
		cursor := fillStream(b, ctx, t, c, replayMissed+1)
		lat := make([]time.Duration, 0, b.N)
		c.Header = map[string]string{"Last-Event-ID": cursor}
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			s, err := c.OpenStream(ctx)
			if err != nil || s.Status != http.StatusOK {
				b.Fatalf("resume: %v %+v", err, s)
			}
			for i := range replayMissed {
				if _, err := s.NextMatching(ctx, isLog); err != nil {
					b.Fatalf("replayed %d of %d: %v", i, replayMissed, err)
				}
			}
			lat = append(lat, time.Since(t0))
			b.StopTimer()
			s.Close()
			testutil.Eventually(b, wait, "the resumed stream to exit", func() bool { return t.h.Stats().GetStreams == 0 })
			b.StartTimer()
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms/replay")
	})
}

// fillStream opens c's GET stream, sends it n notifications of about 200
// bytes (their JSON-RPC message) and reads them, closes it once its
// handler has exited, and returns the first notification's event id.
func fillStream(b *testing.B, ctx context.Context, t resumeTarget, c *testutil.Client, n int) string {
	b.Helper()
	s, err := c.OpenStream(ctx)
	if err != nil || s.Status != http.StatusOK {
		b.Fatalf("GET: %v", err)
	}
	params := map[string]any{"level": "info", "data": strings.Repeat("x", 140)}
	first := ""
	const batch = 256 // under the session queue (512)
	for sent := 0; sent < n; {
		k := min(batch, n-sent)
		for range k {
			if err := t.mcp.SendNotificationToSpecificClient(c.SessionID, "notifications/message", params); err != nil {
				b.Fatal(err)
			}
		}
		for got := 0; got < k; {
			ev, err := s.NextMessageEvent(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if m, err := ev.Message(); err != nil || !isLog(m) {
				continue
			}
			got++
			if ev.ID == "" {
				b.Fatal("a notification without an event id")
			}
			if first == "" {
				first = ev.ID
			}
		}
		sent += k
	}
	s.Close()
	testutil.Eventually(b, wait, "the stream to exit", func() bool { return t.h.Stats().GetStreams == 0 })
	return first
}
