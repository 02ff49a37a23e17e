package streamable

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// observedCount is one value the counts' callback reports: a count of
// meters under one attribute set of one asynchronous instrument.
type observedCount struct {
	inst metric.Int64Observable
	n    *atomic.Int64
	opts []metric.ObserveOption
	// zero reports the count at zero too: an up-down counter's (no
	// session open is a value). A counter's is reported once it counted,
	// the point a synchronous counter would have had.
	zero bool
}

// countTable builds the instruments of meters' counts and what the
// callback reports of each.
type countTable struct {
	mt     metric.Meter
	insts  []metric.Observable
	counts []observedCount
}

// counter makes an asynchronous counter (upDown: up-down counter) and
// lists it; each of its counts is added with count.
func (t *countTable) counter(upDown bool, name, unit, desc string) metric.Int64Observable {
	var inst metric.Int64Observable
	if upDown {
		inst, _ = t.mt.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	} else {
		inst, _ = t.mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	}
	t.insts = append(t.insts, inst)
	return inst
}

// count lists n as inst's value under the set of kvs.
func (t *countTable) count(inst metric.Int64Observable, upDown bool, n *atomic.Int64, kvs ...attribute.KeyValue) {
	t.counts = append(t.counts, observedCount{inst: inst, n: n, zero: upDown,
		opts: []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}})
}

// one makes an instrument with a single count, n, without attributes.
func (t *countTable) one(upDown bool, n *atomic.Int64, name, unit, desc string) {
	t.count(t.counter(upDown, name, unit, desc), upDown, n)
}

// observeCounts makes every counter and up-down counter of m, as
// asynchronous instruments reporting m's atomics, and registers the one
// callback that reports them: it runs on the goroutine collecting (the
// reader's or exporter's), reads atomics and allocates nothing. It stays
// registered after Shutdown, so that the provider's last collection (its
// own Shutdown's, say) still reports the totals, as it would a synchronous
// counter's: it holds m's counts, not the Handler.
func (m *meters) observeCounts(mt metric.Meter) {
	t := &countTable{mt: mt}
	const counter, upDown = false, true

	t.one(upDown, &m.sessionsOpen, "lifeline.sessions.open", "{session}", "Sessions this handler holds (created here or adopted from a shared store).")
	t.one(counter, &m.sessionsCreated, "lifeline.sessions.created", "{session}", "Sessions created by a successful initialize on this handler.")
	ended := t.counter(counter, "lifeline.sessions.ended", "{session}", "Sessions this handler held that ended, by lifeline.end_cause.")
	for c := range numEndCauses {
		t.count(ended, counter, &m.sessionsEnded[c], keyEndCause.String(endCauseTokens[c]))
	}
	streams := t.counter(upDown, "lifeline.streams.open", "{stream}", "Open SSE streams, by lifeline.stream.kind.")
	for k := range numStreamKinds {
		t.count(streams, upDown, &m.streamsOpen[k], keyStreamKind.String(streamKindTokens[k]))
	}
	t.one(counter, &m.pings, "lifeline.heartbeat.pings", "{ping}", "JSON-RPC pings written on GET streams.")
	t.one(counter, &m.pongs, "lifeline.heartbeat.pongs", "{pong}", "Clients' answers to those pings.")
	t.one(counter, &m.deadPeers, "lifeline.heartbeat.dead_peers", "{peer}", "GET streams closed because their client stopped answering pings.")
	t.one(counter, &m.takeovers, "lifeline.streams.takeovers", "{stream}", "GET streams closed as dead so that a reconnecting client's new GET could take the session's stream.")
	t.one(counter, &m.conflicts, "lifeline.streams.conflicts", "{request}", "GETs answered 409 Conflict (the session's stream is live, or too many resumed streams).")
	responses := t.counter(counter, "lifeline.http.responses", "{response}", "HTTP answers, by http.response.status_code and lifeline.cause.")
	for c := causeNone + 1; c < numCauses; c++ {
		t.count(responses, counter, &m.responses[c], semconv.HTTPResponseStatusCode(causes[c].status), keyCause.String(causes[c].token))
	}
	t.one(counter, &m.deadlines, "lifeline.writes.deadline_exceeded", "{write}", "Stream and response writes that failed on their write deadline (a client that stopped reading).")
	t.one(counter, &m.squeezes, "lifeline.streams.squeezed", "{stream}", "Streams whose write deadline was cut because their queue overflowed.")
	t.one(counter, &m.queued, "lifeline.messages.queued", "{message}", "Messages queued for a stream (notifications and server-to-client requests).")
	t.one(counter, &m.refusals, "lifeline.messages.refused", "{message}", "Messages refused because their queue was full.")
	t.one(counter, &m.carried, "lifeline.messages.carried", "{message}", "Messages a GET stream took but could not write, carried over to the session's next stream.")
	calls := t.counter(counter, "lifeline.store.calls", "{call}", "Session store calls, by lifeline.store.operation, with error.type when they failed.")
	for op := range numStoreOps {
		name := keyStoreOp.String(storeOpNames[op])
		t.count(calls, counter, &m.storeOK[op], name)
		for e := range numStoreErrs {
			t.count(calls, counter, &m.storeErr[op][e], name, semconv.ErrorTypeKey.String(storeErrTokens[e]))
		}
	}
	t.one(counter, &m.busPublished, "lifeline.bus.published", "{message}", "Messages published on the shared store's buses (session, stream and broadcast).")
	t.one(counter, &m.busReceived, "lifeline.bus.received", "{message}", "Messages received from the shared store's buses.")
	t.one(counter, &m.eventsRecorded, "lifeline.events.recorded", "{event}", "Messages recorded in the event log for resumption.")
	t.one(counter, &m.eventsReplayed, "lifeline.events.replayed", "{event}", "Events replayed to clients resuming a stream (Last-Event-ID).")

	counts := t.counts
	m.countsReg, _ = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for i := range counts {
			c := &counts[i]
			if n := c.n.Load(); n != 0 || c.zero {
				o.ObserveInt64(c.inst, n, c.opts...)
			}
		}
		return nil
	}, t.insts...)
}
