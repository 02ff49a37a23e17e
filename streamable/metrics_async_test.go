package streamable_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The counts of a handler that was shut down are still reported, as a
// synchronous counter's would be: the provider's last collection (its own
// Shutdown's, after the server's) sees the requests served and the
// sessions that Shutdown ended.
func TestMetricCountsOutliveShutdown(t *testing.T) {
	mr := newMeterRig(t)
	h := streamable.New(demotools.NewServer("lifeline-test", "1"), streamable.Config{
		MeterProvider: mr.mp, HeartbeatInterval: testHeartbeat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx := testutil.Context(t, wait)
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "tools/call", resp.Status, http.StatusOK, resp.Body)
	shutCtx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := h.Shutdown(shutCtx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}

	ms := mr.collect()
	ms.check(t, 2, "lifeline.http.responses", attrStatus(200), attrCause("ok")) // initialize, tools/call
	ms.check(t, 1, "lifeline.http.responses", attrStatus(202), attrCause("accepted"))
	ms.check(t, 1, "lifeline.sessions.created")
	ms.check(t, 1, "lifeline.sessions.ended", attrEnd("shutdown"))
	ms.check(t, 0, "lifeline.sessions.open")
	if _, ok := ms.exact("lifeline.sessions.open"); !ok {
		t.Errorf("lifeline.sessions.open has no point at zero\n%s", ms.dump("lifeline.sessions.open"))
	}
}

// syncCounterSpy is a MeterProvider (no-op otherwise) that lists the
// synchronous counters and up-down counters made from it.
type syncCounterSpy struct {
	noop.MeterProvider
	mu    sync.Mutex
	names []string
}

func (p *syncCounterSpy) Meter(string, ...metric.MeterOption) metric.Meter {
	return spyMeter{Meter: noop.Meter{}, p: p}
}

func (p *syncCounterSpy) made(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names = append(p.names, name)
}

type spyMeter struct {
	noop.Meter
	p *syncCounterSpy
}

func (m spyMeter) Int64Counter(name string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.p.made(name)
	return m.Meter.Int64Counter(name, o...)
}

func (m spyMeter) Int64UpDownCounter(name string, o ...metric.Int64UpDownCounterOption) (metric.Int64UpDownCounter, error) {
	m.p.made(name)
	return m.Meter.Int64UpDownCounter(name, o...)
}

func (m spyMeter) Float64Counter(name string, o ...metric.Float64CounterOption) (metric.Float64Counter, error) {
	m.p.made(name)
	return m.Meter.Float64Counter(name, o...)
}

func (m spyMeter) Float64UpDownCounter(name string, o ...metric.Float64UpDownCounterOption) (metric.Float64UpDownCounter, error) {
	m.p.made(name)
	return m.Meter.Float64UpDownCounter(name, o...)
}

// No count costs a request the SDK's recording path: the handler makes no
// synchronous counter or up-down counter (each is an atomic the provider
// reads when it collects); only the durations are recorded as they happen.
func TestMetricCountsAreAsynchronous(t *testing.T) {
	spy := &syncCounterSpy{}
	r := newRig(t, streamable.Config{MeterProvider: spy})
	c := r.session()
	if _, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	if len(spy.names) > 0 {
		t.Errorf("synchronous counters made: %v", spy.names)
	}
}
