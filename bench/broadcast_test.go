package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// listenersPerReplica is how many listen streams each replica holds in
// BenchmarkBroadcastAcrossReplicas.
const listenersPerReplica = 10

// arrivalWait bounds the wait for one broadcast to reach every stream.
const arrivalWait = 5 * time.Second

// broadcastReplica is one lifeline replica of the broadcast benchmark.
type broadcastReplica struct {
	mcp *server.MCPServer
	url string
}

// startBroadcastReplica serves a lifeline replica on store (127.0.0.1) and
// registers its shutdown with b.Cleanup.
func startBroadcastReplica(b *testing.B, store sessionstore.Store) broadcastReplica {
	s := newMCPGoServer()
	h := streamable.New(s, streamable.Config{Store: store, HeartbeatInterval: 20 * time.Second, Logger: discard})
	p, err := serve("replica", "/mcp", h, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), arrivalWait)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = p.srv.Close()
	})
	return broadcastReplica{mcp: s, url: p.URL}
}

// arrival is one stream's receipt of broadcast seq.
type arrival struct {
	stream, seq int
	at          time.Time
}

// readArrivals reads l's events and sends an arrival for every
// tools/list_changed carrying a seq, until the stream ends.
func readArrivals(l *Listen, stream int, out chan<- arrival) {
	r := io.MultiReader(bytes.NewReader(l.Rest), l.Resp.Body)
	_ = ReadSSE(r, func(data []byte) bool {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Seq *int `json:"seq"`
			} `json:"params"`
		}
		if json.Unmarshal(data, &m) == nil && m.Method == "notifications/tools/list_changed" && m.Params.Seq != nil {
			out <- arrival{stream: stream, seq: *m.Params.Seq, at: time.Now()}
		}
		return true
	})
}

// BenchmarkBroadcastAcrossReplicas measures a broadcast's latency from
// MCPServer.SendNotificationToAllClients on replica A until a client reads
// it on a 2026-07-28 subscriptions/listen stream: three lifeline replicas
// on a real redis-server, ten listen streams on each. Broadcasts are paced
// (the next is raised when every stream got the last), so that none is
// coalesced; each carries its sequence number. It reports p50 and p99 over
// every arrival, and separately for the streams on A (local) and on B and C
// (remote). memory-1-replica is the same with one replica on the memory
// store, for reference.
func BenchmarkBroadcastAcrossReplicas(b *testing.B) {
	b.Run("redis-3-replicas", func(b *testing.B) {
		rs := testutil.StartRedisServer(b)
		prefix := "bench" + rand.Text()[:8] + ":"
		var reps []broadcastReplica
		for range 3 {
			rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
			store := redisstore.New(rc, redisstore.Options{Prefix: prefix})
			b.Cleanup(func() { _ = store.Close(); _ = rc.Close() }) // runs after the replica's shutdown
			reps = append(reps, startBroadcastReplica(b, store))
		}
		benchBroadcast(b, reps)
	})
	b.Run("memory-1-replica", func(b *testing.B) {
		benchBroadcast(b, []broadcastReplica{startBroadcastReplica(b, nil)})
	})
}

// benchBroadcast opens listenersPerReplica listen streams on each replica
// of reps, raises b.N paced broadcasts on reps[0] and reports the latencies.
func benchBroadcast(b *testing.B, reps []broadcastReplica) {
	tr := NewTransport(0)
	defer tr.CloseIdleConnections()
	arrivals := make(chan arrival, 1024)
	var streams []*Listen
	done := make(chan struct{})
	readers := 0
	defer func() {
		for _, l := range streams {
			l.Close()
		}
		for range readers {
			<-done
		}
	}()
	for i, r := range reps {
		for range listenersPerReplica {
			c := NewClient(r.url, tr)
			c.Modern = true
			l, err := c.OpenListen(context.Background(), ListenFilter)
			if err != nil {
				b.Fatalf("replica %d: %v", i, err)
			}
			streams = append(streams, l)
			readers++
			go func(l *Listen, n int) {
				defer func() { done <- struct{}{} }()
				readArrivals(l, n, arrivals)
			}(l, len(streams)-1)
		}
	}
	// Every stream is registered once its acknowledgement arrived; on a
	// cluster each replica's broadcast listener subscribes when it starts.
	var all, local, remote []time.Duration
	b.ResetTimer()
	for seq := range b.N {
		t0 := time.Now()
		reps[0].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"seq": seq})
		got := 0
		timeout := time.NewTimer(arrivalWait)
		for got < len(streams) {
			select {
			case a := <-arrivals:
				if a.seq != seq {
					b.Fatalf("stream %d got broadcast %d while waiting for %d", a.stream, a.seq, seq)
				}
				d := a.at.Sub(t0)
				all = append(all, d)
				if a.stream < listenersPerReplica {
					local = append(local, d)
				} else {
					remote = append(remote, d)
				}
				got++
			case <-timeout.C:
				b.Fatalf("broadcast %d reached %d of %d streams in %v", seq, got, len(streams), arrivalWait)
			}
		}
		timeout.Stop()
	}
	b.StopTimer()
	report := func(d []time.Duration, what string) {
		if len(d) == 0 {
			return
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds())/1000, what+"p50-ms")
		b.ReportMetric(float64(d[min(len(d)-1, len(d)*99/100)].Microseconds())/1000, what+"p99-ms")
	}
	report(all, "")
	if len(reps) > 1 {
		report(local, "local-")
		report(remote, "remote-")
	}
}
