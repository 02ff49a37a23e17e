package streamable_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// BenchmarkToolsCallJSON measures a tools/call answered as JSON over
// loopback, from parallel clients each on its own session.
func BenchmarkToolsCallJSON(b *testing.B) {
	r := newBenchRig(b, streamable.Config{HeartbeatInterval: 20 * time.Second})
	b.RunParallel(func(pb *testing.PB) {
		c := testutil.NewClient(r.ts.URL)
		c.HTTP = r.ts.Client()
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

// BenchmarkIdleGetStream reports what one idle GET stream costs the server:
// heap bytes, goroutine stack bytes and goroutines per stream, with
// heartbeats on (client and server are in one process: the stacks include
// the client's, 2 KiB, and net/http's reader, 2 KiB; the handler's
// goroutine waits in a stack of 8 KiB, which the runtime shrinks it to
// once the stream is idle: serveGet, startGet and getLoop keep the
// waiting frames small).
func BenchmarkIdleGetStream(b *testing.B) {
	const streams = 500
	for range b.N {
		r := newBenchRig(b, streamable.Config{HeartbeatInterval: 20 * time.Second})
		clients := make([]*testutil.Client, streams)
		for i := range clients {
			clients[i] = testutil.NewClient(r.ts.URL)
			clients[i].HTTP = r.ts.Client()
			if _, err := clients[i].Initialize(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		goroutines0, heap0, stack0 := settle()
		// Raw GETs whose bodies are not read: the client side costs only
		// net/http's transport goroutines and buffers.
		bodies := make([]io.Closer, 0, streams)
		for _, c := range clients {
			req, err := c.NewRequest(context.Background(), http.MethodGet, nil)
			if err != nil {
				b.Fatal(err)
			}
			resp, err := c.HTTP.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("GET: %v", err)
			}
			bodies = append(bodies, resp.Body)
		}
		deadline := time.Now().Add(10 * time.Second)
		for r.h.Stats().GetStreams < streams && time.Now().Before(deadline) {
			runtime.Gosched()
		}
		goroutines1, heap1, stack1 := settle()
		// Per stream, net/http runs two client goroutines (read and write
		// loops) and two server goroutines (the connection's, which runs the
		// handler, and its background reader). The rest would be lifeline's.
		const netHTTP = 4
		b.ReportMetric(float64(goroutines1-goroutines0)/streams-netHTTP, "lifeline-goroutines/stream")
		b.ReportMetric(float64(heap1-heap0)/streams, "heap-bytes/stream(client+server)")
		b.ReportMetric(float64(stack1-stack0)/streams, "stack-bytes/stream(client+server)")
		for _, body := range bodies {
			body.Close()
		}
		r.shutdown()
	}
}

func settle() (goroutines int, heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc, ms.StackInuse
}
