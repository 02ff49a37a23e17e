package streamable

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// hotCounts are the counts most requests make: lifeline.http.responses
// (every answer), lifeline.messages.queued (every notification a tool
// sends), lifeline.events.recorded (every message a resumable stream
// records) and lifeline.store.calls (a session's store touch). Each is an asynchronous counter: the transport adds to an
// atomic, and one callback reports them when the provider collects. A
// count costs a request one atomic add with an SDK installed too, where a
// synchronous counter's Add runs the SDK's whole recording path (the
// attribute set resolved and deduplicated, the aggregator's map,
// exemplars). The rest of lifeline's counters count rarer things and stay
// synchronous.
//
// Counted from New: an SDK installed later as the global provider reports
// these totals from the handler's start (a synchronous counter's from the
// install).
type hotCounts struct {
	responses [numCauses]atomic.Int64
	queued    atomic.Int64
	recorded  atomic.Int64
	storeOK   [numStoreOps]atomic.Int64
	storeErr  [numStoreOps][numStoreErrs]atomic.Int64

	// view lists what the callback reports: every count, or after stop
	// the totals of those that counted. The callback holds only view.
	view *atomic.Pointer[[]hotCount]
	reg  metric.Registration // nil when nothing was registered
}

// hotCount is one value the callback reports: a count under one attribute
// set of one instrument.
type hotCount struct {
	inst metric.Int64ObservableCounter
	n    *atomic.Int64
	opts []metric.ObserveOption
}

// newHotCounts makes the three instruments from mt and registers their
// callback. An instrument the provider refuses loses its own count only:
// it is left out of the registration.
func newHotCounts(mt metric.Meter) *hotCounts {
	h := &hotCounts{view: new(atomic.Pointer[[]hotCount])}
	var view []hotCount
	var insts []metric.Observable
	counter := func(name, unit, desc string) (metric.Int64ObservableCounter, bool) {
		c, err := mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			return nil, false
		}
		insts = append(insts, c)
		return c, true
	}
	if c, ok := counter("lifeline.http.responses", "{response}", "HTTP answers, by http.response.status_code and lifeline.cause."); ok {
		for cause := causeNone + 1; cause < numCauses; cause++ {
			view = append(view, hotCount{inst: c, n: &h.responses[cause],
				opts: observeSet(semconv.HTTPResponseStatusCode(causes[cause].status), keyCause.String(causes[cause].token))})
		}
	}
	if c, ok := counter("lifeline.messages.queued", "{message}", "Messages queued for a stream (notifications and server-to-client requests)."); ok {
		view = append(view, hotCount{inst: c, n: &h.queued})
	}
	if c, ok := counter("lifeline.events.recorded", "{event}", "Messages recorded in the event log for resumption."); ok {
		view = append(view, hotCount{inst: c, n: &h.recorded})
	}
	if c, ok := counter("lifeline.store.calls", "{call}", "Session store calls, by lifeline.store.operation, with error.type when they failed."); ok {
		for op := range numStoreOps {
			name := keyStoreOp.String(storeOpNames[op])
			view = append(view, hotCount{inst: c, n: &h.storeOK[op], opts: observeSet(name)})
			for e := range numStoreErrs {
				view = append(view, hotCount{inst: c, n: &h.storeErr[op][e], opts: observeSet(name, semconv.ErrorTypeKey.String(storeErrTokens[e]))})
			}
		}
	}
	h.view.Store(&view)
	if len(insts) > 0 {
		h.reg, _ = mt.RegisterCallback(observeHot(h.view), insts...)
	}
	return h
}

// observeSet is the observation options of one precomputed attribute set.
func observeSet(kvs ...attribute.KeyValue) []metric.ObserveOption {
	return []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// observeHot is the callback reporting view: it runs on the goroutine
// collecting (the reader's or the exporter's; lifeline starts none), reads
// atomics and allocates nothing. A count that never counted has no point,
// as a synchronous counter never added to has none.
func observeHot(view *atomic.Pointer[[]hotCount]) metric.Callback {
	return func(_ context.Context, o metric.Observer) error {
		for _, c := range *view.Load() {
			if n := c.n.Load(); n > 0 {
				o.ObserveInt64(c.inst, n, c.opts...)
			}
		}
		return nil
	}
}

// stop (Shutdown) narrows the view to the totals of the counts that
// counted and keeps the registration for them, so that the provider's
// later collections (its own Shutdown's, after the server's) still report
// them, as they would a synchronous counter's. What stays registered is
// the view: those totals and their attribute sets (with the provider's
// own record of the registration, 1-2 KB), not hotCounts or the Handler. With nothing counted, the registration
// goes too. A count made after stop (by a request Shutdown gave up
// waiting for) is not reported.
func (h *hotCounts) stop() {
	var kept []hotCount
	for _, c := range *h.view.Load() {
		if n := c.n.Load(); n > 0 {
			total := new(atomic.Int64)
			total.Store(n)
			kept = append(kept, hotCount{inst: c.inst, n: total, opts: c.opts})
		}
	}
	h.view.Store(&kept)
	if len(kept) == 0 && h.reg != nil {
		_ = h.reg.Unregister()
	}
}
