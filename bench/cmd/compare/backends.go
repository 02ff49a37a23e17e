package main

import (
	"context"
	"errors"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifeline-mcp/lifeline/bench"
)

// noRedisServer is what the Redis cells say when redis-server is not on
// PATH: never a number.
const noRedisServer = "n/a: redis-server not found"

// backends are what some variants run on: a real redis-server for the Redis
// variant, and the SDK telemetry providers for the telemetry variants.
type backends struct {
	redis    *bench.RedisBackend
	redisErr error // why redis is nil
	meter    *sdkmetric.MeterProvider
	tracer   *sdktrace.TracerProvider
}

// dropExporter is a span exporter that drops what it is given.
type dropExporter struct{}

// ExportSpans drops spans.
func (dropExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }

// Shutdown does nothing.
func (dropExporter) Shutdown(context.Context) error { return nil }

// startBackends starts what the variants of vs need: redis-server when the
// Redis variant is among them, the providers when a telemetry variant is.
// The SDK providers are the ones cmd/otelcost installs: a MeterProvider
// with a ManualReader (every measurement aggregated in memory) and an
// always-sample TracerProvider batching to an exporter that drops spans.
func startBackends(vs []variant) *backends {
	be := &backends{}
	for _, v := range vs {
		switch v.with {
		case onRedis:
			if be.redis, be.redisErr = bench.StartRedis(); be.redisErr != nil {
				logf("redis: %v", be.redisErr)
			}
		case sdkMetrics:
			if be.meter == nil {
				be.meter = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			}
		case sdkTracing: // lifeline's and the floor's tracing variants share one
			if be.tracer == nil {
				be.tracer = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(dropExporter{}))
			}
		}
	}
	return be
}

// close stops what startBackends started.
func (be *backends) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if be.tracer != nil {
		_ = be.tracer.Shutdown(ctx)
	}
	if be.meter != nil {
		_ = be.meter.Shutdown(ctx)
	}
	if be.redis != nil {
		be.redis.Close()
	}
}

// start starts variant v's server and returns the peer its measurements
// speak to (in v's era).
func (be *backends) start(v variant, s settings) (*bench.Peer, error) {
	o := bench.Options{Heartbeat: s.heartbeat, WriteTimeout: s.writeTime}
	switch v.with {
	case onRedis:
		if be.redis == nil {
			if bench.IsNoRedisServer(be.redisErr) {
				return nil, errors.New(noRedisServer)
			}
			return nil, be.redisErr
		}
		o.Redis = be.redis
	case noEventLog:
		o.DisableEventLog = true
	case sdkMetrics:
		o.MeterProvider = be.meter
	case sdkTracing:
		o.TracerProvider = be.tracer
	case floorChecks:
		o.FloorHeaderChecks = true
	case floorSession:
		o.FloorSession = true
	case floorTwin: // the floor's own options: it differs from the floor only in being another server
	}
	p, err := bench.StartPeer(v.peer, o)
	if err != nil {
		return nil, err
	}
	return p.InEra(v.modern), nil
}
