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

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// dropExporter is a span exporter that drops what it is given.
type dropExporter struct{}

func (dropExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkServePostTelemetry is BenchmarkServePost/lifeline with nothing
// installed (default) and with an SDK MeterProvider (a ManualReader, which
// aggregates every measurement) and an SDK TracerProvider that samples
// every span and batches them to an exporter that drops them (sdk), and
// with each alone (sdk-metrics, sdk-traces): what telemetry costs the
// handler per tools/call, allocations included.
func BenchmarkServePostTelemetry(b *testing.B) {
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
		name            string
		metrics, traces bool
	}{{"default", false, false}, {"sdk-metrics", true, false}, {"sdk-traces", false, true}, {"sdk", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := streamable.Config{HeartbeatInterval: 20 * time.Second,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if bc.metrics {
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
				defer func() { _ = mp.Shutdown(context.Background()) }()
				cfg.MeterProvider = mp
			}
			if bc.traces {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(dropExporter{}))
				defer func() { _ = tp.Shutdown(context.Background()) }()
				cfg.TracerProvider = tp
			}
			h := streamable.New(demotools.NewServer("bench", "1"), cfg)
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
