package streamable_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
	for _, bc := range []struct {
		name            string
		metrics, traces bool
	}{{"default", false, false}, {"sdk-metrics", true, false}, {"sdk-traces", false, true}, {"sdk", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			var cfg streamable.Config
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
			benchServePostLifeline(b, cfg)
		})
	}
}
