package streamable_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// BenchmarkServePostMetrics is BenchmarkServePost/lifeline with the
// default MeterProvider (the global one, no SDK: what every application
// that installs none runs) and with an SDK MeterProvider and a manual
// reader installed: the cost of recording.
func BenchmarkServePostMetrics(b *testing.B) {
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}
	request := func(id string) (*http.Request, context.CancelFunc) {
		ctx := context.WithValue(context.Background(), http.LocalAddrContextKey, net.Addr(local))
		ctx, cancel := context.WithCancel(ctx)
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://127.0.0.1:8080/mcp", bytes.NewReader([]byte(call)))
		r.ContentLength = int64(len(call))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("MCP-Protocol-Version", "2025-11-25")
		if id != "" {
			r.Header.Set("Mcp-Session-Id", id)
		}
		return r, cancel
	}
	for _, bc := range []struct {
		name string
		mp   func(b *testing.B) metric.MeterProvider
	}{
		{"default", func(*testing.B) metric.MeterProvider { return nil }},
		{"sdk", func(b *testing.B) metric.MeterProvider { return newMeterRig(b).mp }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h := streamable.New(demotools.NewServer("bench", "1"), streamable.Config{
				HeartbeatInterval: 20 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
				MeterProvider: bc.mp(b)})
			defer h.Close()
			id := benchInitialize(b, h, request)
			w := &sinkWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				r, cancel := request(id)
				w.reset()
				h.ServeHTTP(w, r)
				cancel()
				if w.status != http.StatusOK {
					b.Fatalf("status %d: %s", w.status, w.body.String())
				}
			}
		})
	}
}
