package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifeline-mcp/lifeline/server"
)

// metricsPath is where -metrics serves the Prometheus text format.
const metricsPath = "/metrics"

// serviceName names the demo in its traces.
const serviceName = "lifeline-demo"

// telemetry is what -metrics and -otlp set up: the OpenTelemetry SDK and its
// exporters live here, in the demo; the library uses the API only.
type telemetry struct {
	opts     []server.Option // the providers, for the transport
	metrics  http.Handler    // the Prometheus scrape handler; nil without -metrics
	shutdown []func(context.Context) error
}

// newTelemetry makes an SDK MeterProvider read by a Prometheus exporter
// (with metrics) and an SDK TracerProvider that batches spans to an
// OTLP/HTTP collector at otlpEndpoint (when not empty), with the W3C trace
// context propagator.
func newTelemetry(metrics bool, otlpEndpoint string) (*telemetry, error) {
	t := &telemetry{}
	if metrics {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			return nil, fmt.Errorf("-metrics: Prometheus exporter: %w", err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		t.opts = append(t.opts, server.WithMeterProvider(mp))
		t.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		t.shutdown = append(t.shutdown, mp.Shutdown)
	}
	if otlpEndpoint != "" {
		endpoint, err := otlpURL(otlpEndpoint)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(endpoint))
		if err != nil {
			return nil, fmt.Errorf("-otlp: exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", serviceName))))
		t.opts = append(t.opts, server.WithTracerProvider(tp), server.WithPropagator(propagation.TraceContext{}))
		t.shutdown = append(t.shutdown, tp.Shutdown) // flushes the spans still batched
	}
	return t, nil
}

// otlpURL turns -otlp's value, host:port or an http(s) URL, into the URL
// spans are posted to: /v1/traces when it names no path.
func otlpURL(v string) (string, error) {
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("-otlp: %q is not host:port or an http(s) URL of an OTLP/HTTP collector", v)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/traces"
	}
	return u.String(), nil
}

// close flushes and stops the providers, bounded by ctx.
func (t *telemetry) close(ctx context.Context) error {
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}
