package streamable

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// meters holds every instrument of a Handler, made once by New from
// Config.MeterProvider, and the attribute sets they are recorded with,
// precomputed so that recording allocates nothing. Its methods are what
// the transport calls at each point.
//
// Every counter and up-down counter is asynchronous: the transport adds to
// an atomic, one per attribute set, and countsReg's callback reports them
// all when the provider collects (metrics_counts.go). A measurement costs
// the transport one atomic add, with or without an SDK, where a
// synchronous instrument's costs the SDK's whole recording path (the
// attribute set resolved and deduplicated, the aggregator's map,
// exemplars) on the request that makes it. The durations are histograms,
// recorded synchronously, and only while an SDK wants them (Enabled).
type meters struct {
	sessionsOpen    atomic.Int64
	sessionsCreated atomic.Int64
	sessionsEnded   [numEndCauses]atomic.Int64
	streamsOpen     [numStreamKinds]atomic.Int64
	pings           atomic.Int64
	pongs           atomic.Int64
	deadPeers       atomic.Int64
	takeovers       atomic.Int64
	conflicts       atomic.Int64
	responses       [numCauses]atomic.Int64
	deadlines       atomic.Int64
	squeezes        atomic.Int64
	queued          atomic.Int64
	refusals        atomic.Int64
	carried         atomic.Int64
	storeOK         [numStoreOps]atomic.Int64
	storeErr        [numStoreOps][numStoreErrs]atomic.Int64
	busPublished    atomic.Int64
	busReceived     atomic.Int64
	eventsRecorded  atomic.Int64
	eventsReplayed  atomic.Int64
	countsReg       metric.Registration // the counts' callback, or nil

	storeDuration   metric.Float64Histogram
	opDuration      metric.Float64Histogram
	sessionDuration metric.Float64Histogram
	storeRecord     [numStoreOps][]metric.RecordOption

	dropsReg metric.Registration // lifeline.bus.dropped's callback, or nil

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
	seconds := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, _ := mt.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		return h
	}
	m.storeDuration = seconds("lifeline.store.duration", "Duration of session store calls, by lifeline.store.operation.",
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
	// The MCP conventions' advice for both: these boundaries.
	mcpBounds := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}
	m.opDuration = seconds(metricOperationDuration, "Duration of MCP requests, as the transport ran them through the MCPServer.", mcpBounds...)
	m.sessionDuration = seconds(metricSessionDuration, "Duration of MCP sessions, from initialize (or adoption) to their end.", mcpBounds...)
	for op := range numStoreOps {
		m.storeRecord[op] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(keyStoreOp.String(storeOpNames[op])))}
	}
	m.observeCounts(mt)
	m.ops.init()
	return m
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
// store (Shutdown); the counts' stays (observeCounts).
func (m *meters) stop() {
	if m.dropsReg != nil {
		_ = m.dropsReg.Unregister()
	}
}

var bg = context.Background()

func (m *meters) sessionOpened()   { m.sessionsOpen.Add(1) }
func (m *meters) sessionCreated()  { m.sessionsCreated.Add(1) }
func (m *meters) ping()            { m.pings.Add(1) }
func (m *meters) pong()            { m.pongs.Add(1) }
func (m *meters) deadPeer()        { m.deadPeers.Add(1) }
func (m *meters) takeover()        { m.takeovers.Add(1) }
func (m *meters) squeezed()        { m.squeezes.Add(1) }
func (m *meters) queuedMessage()   { m.queued.Add(1) }
func (m *meters) refusedMessage()  { m.refusals.Add(1) }
func (m *meters) carriedMessage()  { m.carried.Add(1) }
func (m *meters) published()       { m.busPublished.Add(1) }
func (m *meters) received()        { m.busReceived.Add(1) }
func (m *meters) recorded()        { m.eventsRecorded.Add(1) }
func (m *meters) replayed(n int64) { m.eventsReplayed.Add(n) }

// deadlineExceeded counts a write that failed on its deadline.
func (m *meters) deadlineExceeded(err error) {
	if isTimeout(err) {
		m.deadlines.Add(1)
	}
}

// sessionEnded records a held session's end with its cause; opened is
// when this handler began holding it (zero: its duration is not recorded,
// as for a session that lives on for other replicas), version its
// protocol version.
func (m *meters) sessionEnded(cause error, version string, opened time.Time) {
	c := endCauseOf(cause)
	m.sessionsOpen.Add(-1)
	m.sessionsEnded[c].Add(1)
	if opened.IsZero() || c == endElsewhere || c == endInitFailed || !m.sessionDuration.Enabled(bg) {
		return
	}
	m.sessionDuration.Record(bg, time.Since(opened).Seconds(), m.ops.sessionSet(version, c)...)
}

// streamOpened and streamClosed count an SSE stream of kind k.
func (m *meters) streamOpened(k streamKind) { m.streamsOpen[k].Add(1) }
func (m *meters) streamClosed(k streamKind) { m.streamsOpen[k].Add(-1) }

// answered counts an HTTP answer given for cause (a 409 also as a
// conflict).
func (m *meters) answered(c answerCause) {
	if c == causeNone {
		return
	}
	m.responses[c].Add(1)
	if c == causeConflict || c == causeTooManyResumes {
		m.conflicts.Add(1)
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
		m.storeOK[op].Add(1)
	} else {
		m.storeErr[op][storeErrOf(err)].Add(1)
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
