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
// records) and lifeline.store.calls (a session's store touch). Each is an
// asynchronous counter: the transport adds to an atomic, and a callback
// reports the atomics when the provider collects. A count costs a request
// one atomic add with an SDK installed too, where a synchronous counter's
// Add runs the SDK's whole recording path (the attribute set resolved and
// deduplicated, the aggregator's map, exemplars). The rest of lifeline's
// counters count rarer things and stay synchronous.
//
// The callback stays registered for the provider's life, Shutdown or
// not, and reports the live atomics, so that an answer given after
// Shutdown (503, shutting down, by a handler still behind its listener)
// is counted and a later collection (the provider's own Shutdown's, after
// the server's) reports the totals, as it would a synchronous counter's.
// What stays registered is this struct (its atomics, about 1.7 KB) and
// the callback, not the Handler: the attribute sets are the package's
// tables.
//
// Counted from New: an SDK installed later as the global provider reports
// these totals from the handler's start (a synchronous counter's from the
// install). As for any asynchronous counter, a reader with delta
// temporality gets a zero point for a count that did not move.
type hotCounts struct {
	responses [numCauses]atomic.Int64
	queued    atomic.Int64
	recorded  atomic.Int64
	storeOK   [numStoreOps]atomic.Int64
	storeErr  [numStoreOps][numStoreErrs]atomic.Int64
}

// The attribute sets the hot counts are reported with: fixed tables, made
// once for the package and never written after, shared by every handler.
var (
	responseSets = func() (t [numCauses][]metric.ObserveOption) {
		for c := causeNone + 1; c < numCauses; c++ {
			t[c] = observeSet(semconv.HTTPResponseStatusCode(causes[c].status), keyCause.String(causes[c].token))
		}
		return t
	}()
	storeOKSets = func() (t [numStoreOps][]metric.ObserveOption) {
		for op := range numStoreOps {
			t[op] = observeSet(keyStoreOp.String(storeOpNames[op]))
		}
		return t
	}()
	storeErrSets = func() (t [numStoreOps][numStoreErrs][]metric.ObserveOption) {
		for op := range numStoreOps {
			for e := range numStoreErrs {
				t[op][e] = observeSet(keyStoreOp.String(storeOpNames[op]), semconv.ErrorTypeKey.String(storeErrTokens[e]))
			}
		}
		return t
	}()
)

// observeSet is the observation options of one attribute set.
func observeSet(kvs ...attribute.KeyValue) []metric.ObserveOption {
	return []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// newHotCounts makes the four instruments from mt and registers their
// callback: it runs on the goroutine collecting (the reader's or the
// exporter's; lifeline starts none), reads atomics and allocates
// nothing; a count that never counted has no point, as a synchronous
// counter never added to has none. An instrument the provider returns with
// an error is kept (the SDK's works for the readers that could take it);
// when the provider refuses the registration whole (an instrument of
// another implementation among them, say), each is registered alone, so
// that the refused one loses its own count only.
func newHotCounts(mt metric.Meter) *hotCounts {
	h := &hotCounts{}
	type instrument struct {
		c      metric.Int64ObservableCounter
		report func(metric.Observer, metric.Int64ObservableCounter)
	}
	var insts []instrument
	observe := func(name, unit, desc string, report func(metric.Observer, metric.Int64ObservableCounter)) {
		if c, _ := mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc)); c != nil {
			insts = append(insts, instrument{c, report})
		}
	}
	observe("lifeline.http.responses", "{response}", "HTTP answers, by http.response.status_code and lifeline.cause.",
		func(o metric.Observer, c metric.Int64ObservableCounter) {
			for cause := causeNone + 1; cause < numCauses; cause++ {
				if n := h.responses[cause].Load(); n > 0 {
					o.ObserveInt64(c, n, responseSets[cause]...)
				}
			}
		})
	observe("lifeline.messages.queued", "{message}", "Messages queued for a stream (notifications and server-to-client requests).",
		func(o metric.Observer, c metric.Int64ObservableCounter) {
			if n := h.queued.Load(); n > 0 {
				o.ObserveInt64(c, n)
			}
		})
	observe("lifeline.events.recorded", "{event}", "Messages recorded in the event log for resumption.",
		func(o metric.Observer, c metric.Int64ObservableCounter) {
			if n := h.recorded.Load(); n > 0 {
				o.ObserveInt64(c, n)
			}
		})
	observe("lifeline.store.calls", "{call}", "Session store calls, by lifeline.store.operation, with error.type when they failed.",
		func(o metric.Observer, c metric.Int64ObservableCounter) {
			for op := range numStoreOps {
				if n := h.storeOK[op].Load(); n > 0 {
					o.ObserveInt64(c, n, storeOKSets[op]...)
				}
				for e := range numStoreErrs {
					if n := h.storeErr[op][e].Load(); n > 0 {
						o.ObserveInt64(c, n, storeErrSets[op][e]...)
					}
				}
			}
		})
	register := func(insts []instrument) bool {
		observables := make([]metric.Observable, len(insts))
		for i, in := range insts {
			observables[i] = in.c
		}
		reg, err := mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
			for _, in := range insts {
				in.report(o, in.c)
			}
			return nil
		}, observables...)
		// A provider may register what it could take and report what it
		// refused: a registration is kept whenever there is one, so that
		// nothing is registered twice.
		return reg != nil || err == nil
	}
	if len(insts) > 0 && !register(insts) {
		for i := range insts { // refused whole: each alone
			register(insts[i : i+1])
		}
	}
	return h
}
