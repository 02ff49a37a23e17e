package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// BenchmarkToolsCallStore compares the latency of a tools/call (JSON
// answer, loopback, one client making one call at a time) on the memory store with the
// same on Redis, where every request also touches the session's record:
// on one replica, and spread round-robin over three replicas, each call on
// a different one (compare that with memory-behind-proxy, the same proxy
// hop in front of one memory replica). Run side by side: the ratio is the
// figure.
func BenchmarkToolsCallStore(b *testing.B) { benchStoreSetups(b, benchToolsCall) }

// BenchmarkToolsCallStoreParallel is BenchmarkToolsCallStore with 16
// clients calling at once (each on its own session): the time per call
// under load, where the store's round trips overlap with other work.
func BenchmarkToolsCallStoreParallel(b *testing.B) { benchStoreSetups(b, benchToolsCallParallel) }

// benchStoreSetups runs bench on each setup compared: memory, memory behind
// the round-robin proxy, Redis on one replica, Redis on three replicas
// behind the proxy. newClient makes a client for the setup's endpoint.
func benchStoreSetups(b *testing.B, bench func(b *testing.B, newClient func() *testutil.Client)) {
	cfg := streamable.Config{HeartbeatInterval: 20 * time.Second}
	b.Run("memory", func(b *testing.B) {
		r := newBenchRig(b, cfg)
		bench(b, func() *testutil.Client {
			c := testutil.NewClient(r.ts.URL)
			c.HTTP = r.ts.Client()
			return c
		})
	})
	b.Run("memory-behind-proxy", func(b *testing.B) {
		url := benchProxy(b, newBenchRig(b, cfg).ts.URL)
		bench(b, func() *testutil.Client { return testutil.NewClient(url) })
	})
	b.Run("redis-1-replica", func(b *testing.B) {
		url := newBenchCluster(b).replicas[0].ts.URL
		bench(b, func() *testutil.Client { return testutil.NewClient(url) })
	})
	b.Run("redis-3-replicas-round-robin", func(b *testing.B) {
		url := newBenchCluster(b).proxy
		bench(b, func() *testutil.Client { return testutil.NewClient(url) })
	})
}

func benchToolsCallParallel(b *testing.B, newClient func() *testutil.Client) {
	b.SetParallelism(8) // 8 x GOMAXPROCS clients
	b.RunParallel(func(pb *testing.PB) {
		c := newClient()
		ctx := context.Background()
		if _, err := c.Initialize(ctx); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
			if err != nil || resp.Status != http.StatusOK {
				b.Errorf("tools/call: %v %v", err, resp)
				return
			}
		}
	})
}

func benchToolsCall(b *testing.B, newClient func() *testutil.Client) {
	c := newClient()
	ctx := context.Background()
	if _, err := c.Initialize(ctx); err != nil {
		b.Fatal(err)
	}
	// Warm up: every replica behind a proxy has adopted the session.
	for range 3 {
		if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
		if err != nil || resp.Status != http.StatusOK {
			b.Fatalf("tools/call: %v %v", err, resp)
		}
	}
}

// BenchmarkCrossReplicaNotification measures the delivery of a session
// notification sent by a tool on replica B to the client reading the
// session's GET stream on replica A: from the tool's send to the client's
// read of the event. It reports p50 and p99 over b.N notifications, with
// the event log (the default with a Redis store: A records each message
// before it writes it) and without.
func BenchmarkCrossReplicaNotification(b *testing.B) {
	b.Run("log-on", func(b *testing.B) { benchCrossReplicaNotification(b, false) })
	b.Run("log-off", func(b *testing.B) { benchCrossReplicaNotification(b, true) })
}

func benchCrossReplicaNotification(b *testing.B, noLog bool) {
	cfg := streamable.Config{HeartbeatInterval: 20 * time.Second, DisableEventLog: noLog}
	c := newClusterTB(b, cfg, redisstore.Options{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("bench_stamp"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id := server.ClientSessionFromContext(ctx).SessionID()
			err := s.SendNotificationToSpecificClient(id, "notifications/message", map[string]any{
				"level": "info", "data": map[string]any{"sent": time.Now().UnixNano()}})
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText("ok"), nil
		})
	})
	ctx := context.Background()
	a := testutil.NewClient(c.replicas[0].ts.URL)
	if _, err := a.Initialize(ctx); err != nil {
		b.Fatal(err)
	}
	st, err := a.OpenStream(ctx)
	if err != nil || st.Status != http.StatusOK {
		b.Fatalf("GET: %v", err)
	}
	defer st.Close()
	st.AnswerPings(true)
	onB := testutil.NewClient(c.replicas[1].ts.URL)
	onB.SessionID, onB.ProtocolVersion = a.SessionID, a.ProtocolVersion
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		resp, err := onB.CallTool(ctx, "bench_stamp", nil)
		if err != nil || resp.Status != http.StatusOK {
			b.Fatalf("tools/call on B: %v", err)
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		m, err := st.NextMatching(wctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		cancel()
		got := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		var p struct {
			Data struct{ Sent int64 } `json:"data"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, got.Sub(time.Unix(0, p.Data.Sent)))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// benchProxy serves a round-robin proxy to the one backend, for the cost
// of the proxy hop that the three-replica figures include.
func benchProxy(b *testing.B, backend string) string {
	return testutil.StartRoundRobinProxy(b, backend)
}

// newBenchCluster is newCluster for benchmarks: three replicas on a real
// redis-server behind a round-robin proxy, heartbeats at their default.
func newBenchCluster(b *testing.B, setup ...func(*server.MCPServer)) *cluster {
	return newClusterTB(b, streamable.Config{HeartbeatInterval: 20 * time.Second}, redisstore.Options{}, setup...)
}
