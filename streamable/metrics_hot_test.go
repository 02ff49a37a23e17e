package streamable_test

import (
	"context"
	"errors"
	"fmt"
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

// shutDownByTheTest serves the demo server through a handler metered by
// a new meter rig, leaving Shutdown to the test (made again, a no-op then,
// when the test ends, before its server closes).
func shutDownByTheTest(t *testing.T) (*meterRig, *streamable.Handler, *httptest.Server) {
	mr := newMeterRig(t)
	h := streamable.New(demotools.NewServer("lifeline-test", "1"), streamable.Config{
		MeterProvider: mr.mp, HeartbeatInterval: testHeartbeat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	return mr, h, ts
}

// The counts of a handler that was shut down are still reported, as a
// synchronous counter's would be: the provider's last collection (its own
// Shutdown's, after the server's) sees the requests served, the sessions
// that Shutdown ended and the answers given after it.
func TestHotCountsOutliveShutdown(t *testing.T) {
	mr, h, ts := shutDownByTheTest(t)
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

	// The handler still behind its listener (lifeline.Server shuts the
	// handler down first) answers a new client 503, and counts it.
	if _, err := testutil.NewClient(ts.URL).Initialize(ctx); err == nil {
		t.Fatal("an initialize after Shutdown succeeded")
	}

	ms := mr.collect()
	ms.check(t, 1, "lifeline.http.responses", attrStatus(503), attrCause("shutting_down"))
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
// synchronous counters made from it.
type syncCounterSpy struct {
	noop.MeterProvider
	mu    sync.Mutex
	names map[string]bool
}

func (p *syncCounterSpy) Meter(string, ...metric.MeterOption) metric.Meter {
	return spyMeter{Meter: noop.Meter{}, p: p}
}

func (p *syncCounterSpy) made(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names[name] = true
}

type spyMeter struct {
	noop.Meter
	p *syncCounterSpy
}

func (m spyMeter) Int64Counter(name string, o ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	m.p.made(name)
	return m.Meter.Int64Counter(name, o...)
}

// hotCountNames are the counts most requests make.
var hotCountNames = []string{"lifeline.http.responses", "lifeline.messages.queued", "lifeline.events.recorded", "lifeline.store.calls"}

// The counts most requests make cost them no SDK recording path: the
// handler makes none of them a synchronous counter (each is an atomic the
// provider reads when it collects). The rarer counts stay synchronous.
func TestHotCountsAreAsynchronous(t *testing.T) {
	spy := &syncCounterSpy{names: map[string]bool{}}
	r := newRig(t, streamable.Config{MeterProvider: spy})
	c := r.session()
	if _, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"}); err != nil {
		t.Fatal(err)
	}
	spy.mu.Lock()
	defer spy.mu.Unlock()
	for _, name := range hotCountNames {
		if spy.names[name] {
			t.Errorf("%s is a synchronous counter", name)
		}
	}
	if !spy.names["lifeline.sessions.created"] {
		t.Errorf("the spy saw no synchronous counter at all: %v", spy.names)
	}
}

// refusingProvider refuses one asynchronous counter with an error, giving
// either a no-op instrument (the SDK then refuses a registration that
// names it, whole) or foreign: one of another meter (the SDK registers the
// rest and returns the registration with an error).
type refusingProvider struct {
	metric.MeterProvider
	name    string
	foreign bool
}

func (p refusingProvider) Meter(n string, o ...metric.MeterOption) metric.Meter {
	return refusingMeter{Meter: p.MeterProvider.Meter(n, o...), other: p.MeterProvider.Meter("elsewhere"), p: p}
}

type refusingMeter struct {
	metric.Meter
	other metric.Meter
	p     refusingProvider
}

func (m refusingMeter) Int64ObservableCounter(name string, o ...metric.Int64ObservableCounterOption) (metric.Int64ObservableCounter, error) {
	switch {
	case name != m.p.name:
		return m.Meter.Int64ObservableCounter(name, o...)
	case m.p.foreign:
		c, _ := m.other.Int64ObservableCounter(name, o...)
		return c, errors.New("refused")
	}
	return noop.Int64ObservableCounter{}, errors.New("refused")
}

// A hot count the provider refuses loses its own points only: the others
// are still reported, each once, whether the provider refused the
// callback's registration whole (each instrument is then registered alone)
// or made it in part (it is kept, not made again).
func TestRefusedHotCountLosesOnlyItself(t *testing.T) {
	for _, foreign := range []bool{false, true} {
		t.Run(fmt.Sprintf("foreign=%v", foreign), func(t *testing.T) {
			mr := newMeterRig(t)
			r := newRig(t, streamable.Config{MeterProvider: refusingProvider{MeterProvider: mr.mp, name: "lifeline.messages.queued", foreign: foreign}})
			c := r.session()
			if _, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"}); err != nil {
				t.Fatal(err)
			}
			ms := mr.collect()
			ms.check(t, 2, "lifeline.http.responses", attrStatus(200), attrCause("ok"))
			ms.check(t, 1, "lifeline.sessions.created")
		})
	}
}

// A handler shut down before it served anything (a replica stopped early
// in a deploy) counts the 503s it gives while still behind its listener.
func TestHotCountsOfAnUnusedHandlerCountAfterShutdown(t *testing.T) {
	mr, h, ts := shutDownByTheTest(t)
	ctx := testutil.Context(t, wait)
	if err := h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := testutil.NewClient(ts.URL).Initialize(ctx); err == nil {
			t.Fatal("an initialize after Shutdown succeeded")
		}
	}
	mr.collect().check(t, 3, "lifeline.http.responses", attrStatus(503), attrCause("shutting_down"))
}
