package streamable

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meters holds every instrument of a Handler, made once by New from
// Config.MeterProvider, and the attribute sets they are recorded with,
// precomputed so that recording allocates nothing. Its methods are what
// the transport calls at each point; with the default (global, no SDK)
// provider they cost a call each. The counts most requests make
// (lifeline.http.responses, lifeline.messages.queued,
// lifeline.events.recorded, lifeline.store.calls) are asynchronous instead
// (hot): an atomic add a count, with an SDK too (metrics_hot.go).
type meters struct {
	sessionsOpen    metric.Int64UpDownCounter
	sessionsCreated metric.Int64Counter
	sessionsEnded   metric.Int64Counter
	streamsOpen     metric.Int64UpDownCounter
	pings           metric.Int64Counter
	pongs           metric.Int64Counter
	deadPeers       metric.Int64Counter
	takeovers       metric.Int64Counter
	conflicts       metric.Int64Counter
	deadlines       metric.Int64Counter
	squeezes        metric.Int64Counter
	refusals        metric.Int64Counter
	carried         metric.Int64Counter
	storeDuration   metric.Float64Histogram
	busPublished    metric.Int64Counter
	busReceived     metric.Int64Counter
	eventsReplayed  metric.Int64Counter
	opDuration      metric.Float64Histogram
	sessionDuration metric.Float64Histogram

	dropsReg metric.Registration // lifeline.bus.dropped's callback, or nil
	hot      *hotCounts          // the asynchronous counts

	endCauses   [numEndCauses][]metric.AddOption
	streamKinds [numStreamKinds][]metric.AddOption
	storeRecord [numStoreOps][]metric.RecordOption

	// The attribute sets of the MCP conventions' two metrics, built on
	// first use (metrics_operation.go).
	ops operationSets
}

// Ends of a session (lifeline.end_cause).
type endCause uint8

const (
	endDelete endCause = iota
	endExpired
	endShutdown
	endInitFailed
	endElsewhere
	endOther
	numEndCauses
)

var endCauseTokens = [numEndCauses]string{"delete", "expired", "shutdown", "init_failed", "ended_elsewhere", "other"}

// endCauseOf names the cause a session's termination was given.
func endCauseOf(cause error) endCause {
	switch cause {
	case errDeleted, errDeletedInStore:
		return endDelete
	case errExpired, errExpiredInStore:
		return endExpired
	case errShutdown:
		return endShutdown
	case errDiscarded:
		return endInitFailed
	case errEndedElsewhere:
		return endElsewhere
	}
	return endOther
}

// Kinds of stream (lifeline.stream.kind).
type streamKind uint8

const (
	streamGet     streamKind = iota // a session's standalone GET stream
	streamPostSSE                   // a POST's response upgraded to SSE
	streamListen                    // a 2026-07-28 subscriptions/listen stream
	streamResume                    // a GET resuming a POST's stream (Last-Event-ID)
	numStreamKinds
)

var streamKindTokens = [numStreamKinds]string{"get", "post_sse", "listen", "resume"}

// newMeters makes the instruments from mp (nil: the global provider).
// Instrument errors (a name the SDK refuses) leave a working no-op
// instrument, which the API returns alongside the error; they are ignored.
func newMeters(mp metric.MeterProvider) *meters {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	mt := mp.Meter(scopeName)
	m := &meters{}
	i64 := func(name, unit, desc string) metric.Int64Counter {
		c, _ := mt.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	updown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, _ := mt.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	seconds := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, _ := mt.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		return h
	}
	m.sessionsOpen = updown("lifeline.sessions.open", "{session}", "Sessions this handler holds (created here or adopted from a shared store).")
	m.sessionsCreated = i64("lifeline.sessions.created", "{session}", "Sessions created by a successful initialize on this handler.")
	m.sessionsEnded = i64("lifeline.sessions.ended", "{session}", "Sessions this handler held that ended, by lifeline.end_cause.")
	m.streamsOpen = updown("lifeline.streams.open", "{stream}", "Open SSE streams, by lifeline.stream.kind.")
	m.pings = i64("lifeline.heartbeat.pings", "{ping}", "JSON-RPC pings written on GET streams.")
	m.pongs = i64("lifeline.heartbeat.pongs", "{pong}", "Clients' answers to those pings.")
	m.deadPeers = i64("lifeline.heartbeat.dead_peers", "{peer}", "GET streams closed because their client stopped answering pings.")
	m.takeovers = i64("lifeline.streams.takeovers", "{stream}", "GET streams closed as dead so that a reconnecting client's new GET could take the session's stream.")
	m.conflicts = i64("lifeline.streams.conflicts", "{request}", "GETs answered 409 Conflict (the session's stream is live, or too many resumed streams).")
	m.deadlines = i64("lifeline.writes.deadline_exceeded", "{write}", "Stream and response writes that failed on their write deadline (a client that stopped reading).")
	m.squeezes = i64("lifeline.streams.squeezed", "{stream}", "Streams whose write deadline was cut because their queue overflowed.")
	m.refusals = i64("lifeline.messages.refused", "{message}", "Messages refused because their queue was full.")
	m.carried = i64("lifeline.messages.carried", "{message}", "Messages a GET stream took but could not write, carried over to the session's next stream.")
	m.storeDuration = seconds("lifeline.store.duration", "Duration of session store calls, by lifeline.store.operation.",
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
	m.busPublished = i64("lifeline.bus.published", "{message}", "Messages published on the shared store's buses (session, stream and broadcast).")
	m.busReceived = i64("lifeline.bus.received", "{message}", "Messages received from the shared store's buses.")
	m.eventsReplayed = i64("lifeline.events.replayed", "{event}", "Events replayed to clients resuming a stream (Last-Event-ID).")
	// The MCP conventions' advice for both: these boundaries.
	mcpBounds := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	m.opDuration = seconds(metricOperationDuration, "Duration of MCP requests, as the transport ran them through the MCPServer.", mcpBounds...)
	m.sessionDuration = seconds(metricSessionDuration, "Duration of MCP sessions, from initialize (or adoption) to their end.", mcpBounds...)

	for c := range numEndCauses {
		m.endCauses[c] = addSet(keyEndCause.String(endCauseTokens[c]))
	}
	for k := range numStreamKinds {
		m.streamKinds[k] = addSet(keyStreamKind.String(streamKindTokens[k]))
	}
	m.hot = newHotCounts(mt)
	for op := range numStoreOps {
		m.storeRecord[op] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(keyStoreOp.String(storeOpNames[op])))}
	}
	m.ops.init()
	return m
}

// addSet is the measurement options of one precomputed attribute set.
func addSet(kvs ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
}

// observeDrops reports lifeline.bus.dropped from d, the store's own count
// of broadcasts its subscriptions missed; stop unregisters it (Shutdown).
func (m *meters) observeDrops(mp metric.MeterProvider, d interface{ BroadcastsDropped() uint64 }) {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	mt := mp.Meter(scopeName)
	c, err := mt.Int64ObservableCounter("lifeline.bus.dropped", metric.WithUnit("{message}"),
		metric.WithDescription("Broadcasts the shared store's subscriptions missed because their buffer was full."))
	if err != nil {
		return
	}
	m.dropsReg, _ = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(c, int64(d.BroadcastsDropped()))
		return nil
	}, c)
}

// stop unregisters lifeline.bus.dropped's callback, which reads the
// store (Shutdown); the hot counts' stays (hotCounts).
func (m *meters) stop() {
	if m.dropsReg != nil {
		_ = m.dropsReg.Unregister()
	}
}

var bg = context.Background()

func (m *meters) sessionOpened()   { m.sessionsOpen.Add(bg, 1) }
func (m *meters) sessionCreated()  { m.sessionsCreated.Add(bg, 1) }
func (m *meters) ping()            { m.pings.Add(bg, 1) }
func (m *meters) pong()            { m.pongs.Add(bg, 1) }
func (m *meters) deadPeer()        { m.deadPeers.Add(bg, 1) }
func (m *meters) takeover()        { m.takeovers.Add(bg, 1) }
func (m *meters) squeezed()        { m.squeezes.Add(bg, 1) }
func (m *meters) queuedMessage()   { m.hot.queued.Add(1) }
func (m *meters) refusedMessage()  { m.refusals.Add(bg, 1) }
func (m *meters) carriedMessage()  { m.carried.Add(bg, 1) }
func (m *meters) published()       { m.busPublished.Add(bg, 1) }
func (m *meters) received()        { m.busReceived.Add(bg, 1) }
func (m *meters) recorded()        { m.hot.recorded.Add(1) }
func (m *meters) replayed(n int64) { m.eventsReplayed.Add(bg, n) }

// deadlineExceeded counts a write that failed on its deadline.
func (m *meters) deadlineExceeded(err error) {
	if isTimeout(err) {
		m.deadlines.Add(bg, 1)
	}
}

// sessionEnded records a held session's end with its cause; opened is
// when this handler began holding it (zero: its duration is not recorded,
// as for a session that lives on for other replicas), version its
// protocol version.
func (m *meters) sessionEnded(cause error, version string, opened time.Time) {
	c := endCauseOf(cause)
	m.sessionsOpen.Add(bg, -1)
	m.sessionsEnded.Add(bg, 1, m.endCauses[c]...)
	if opened.IsZero() || c == endElsewhere || c == endInitFailed || !m.sessionDuration.Enabled(bg) {
		return
	}
	m.sessionDuration.Record(bg, time.Since(opened).Seconds(), m.ops.sessionSet(version, c)...)
}

// streamOpened and streamClosed count an SSE stream of kind k.
func (m *meters) streamOpened(k streamKind) { m.streamsOpen.Add(bg, 1, m.streamKinds[k]...) }
func (m *meters) streamClosed(k streamKind) { m.streamsOpen.Add(bg, -1, m.streamKinds[k]...) }

// answered counts an HTTP answer given for cause (a 409 also as a
// conflict).
func (m *meters) answered(c answerCause) {
	if c == causeNone {
		return
	}
	m.hot.responses[c].Add(1)
	if c == causeConflict || c == causeTooManyResumes {
		m.conflicts.Add(bg, 1)
	}
}

// Store operations (lifeline.store.operation): the Store's methods, and
// the Broadcaster's.
type storeOp uint8

const (
	opCreate storeOp = iota
	opGet
	opUpdate
	opTouch
	opTerminate
	opRemove
	opCount
	opAcquireStream
	opRenewStream
	opReleaseStream
	opStreamHolder
	opPublish
	opSubscribe
	opPublishTopic
	opSubscribeTopic
	opPublishBroadcast
	opSubscribeBroadcasts
	opCheckLive
	numStoreOps
)

var storeOpNames = [numStoreOps]string{"Create", "Get", "Update", "Touch", "Terminate", "Remove", "Count",
	"AcquireStream", "RenewStream", "ReleaseStream", "StreamHolder", "Publish", "Subscribe",
	"PublishTopic", "SubscribeTopic", "PublishBroadcast", "SubscribeBroadcasts", "CheckLive"}

// Store errors (error.type): the sessionstore sentinels, which are
// answers (a session that is gone, a stream held), the context's, and
// "_OTHER" for the rest (the store is unreachable or failing).
type storeErr uint8

const (
	errTypeNotFound storeErr = iota
	errTypeTerminated
	errTypeExists
	errTypeStreamHeld
	errTypeLeaseLost
	errTypeNoSubscribers
	errTypeTimeout
	errTypeCanceled
	errTypeOther
	numStoreErrs
)

var storeErrTokens = [numStoreErrs]string{"not_found", "terminated", "exists", "stream_held", "lease_lost",
	"no_subscribers", "timeout", "canceled", otherValue}

// storeCall records one store call of op that began at start (zero: its
// duration is not recorded) and returned err.
func (m *meters) storeCall(op storeOp, start time.Time, err error) {
	if err == nil {
		m.hot.storeOK[op].Add(1)
	} else {
		m.hot.storeErr[op][storeErrOf(err)].Add(1)
	}
	if !start.IsZero() {
		m.storeDuration.Record(bg, time.Since(start).Seconds(), m.storeRecord[op]...)
	}
}

// storeStart is when a store call begins, or zero when durations are not
// recorded (no SDK): the no-op path reads no clock.
func (m *meters) storeStart() time.Time {
	if m.storeDuration.Enabled(bg) {
		return time.Now()
	}
	return time.Time{}
}

func storeErrOf(err error) storeErr {
	for i, target := range storeErrTargets {
		if errors.Is(err, target) {
			return storeErr(i)
		}
	}
	if isTimeout(err) {
		return errTypeTimeout
	}
	return errTypeOther
}
