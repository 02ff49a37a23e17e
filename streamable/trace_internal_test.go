package streamable

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracing is off, and the request path does no tracing work, while the
// provider is OpenTelemetry's default global one (its type is recognised:
// this fails if an otel upgrade renames it) or a noop one; on with any
// other.
func TestTracingIsOffWithoutAProvider(t *testing.T) {
	if !isDefaultGlobal(otel.GetTracerProvider()) {
		t.Fatalf("otel's default global provider (%T) is not recognised: every request would pay for non-recording spans",
			otel.GetTracerProvider())
	}
	for name, cfg := range map[string]Config{
		"default": {},
		"noop":    {TracerProvider: noop.NewTracerProvider()},
		"global":  {TracerProvider: otel.GetTracerProvider()},
	} {
		tr := newTracing(cfg)
		if tr.on() {
			t.Errorf("%s: tracing on", name)
		}
	}
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	if tr := newTracing(Config{TracerProvider: tp}); !tr.on() {
		t.Error("an SDK provider: tracing off")
	}
}
