package server_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// WithMeterProvider reaches the transport: a session created through the
// server is counted on the provider given.
func TestWithMeterProviderRecords(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	srv := newServer(t, server.WithMeterProvider(mp))
	base, _ := serve(t, srv)
	c := rawClient(t, base+"/mcp")
	if _, err := c.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "lifeline.sessions.created" {
				continue
			}
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && len(sum.DataPoints) == 1 && sum.DataPoints[0].Value == 1 {
				return
			}
			t.Fatalf("lifeline.sessions.created: %+v", m.Data)
		}
	}
	t.Fatal("lifeline.sessions.created was not recorded on the provider given")
}
