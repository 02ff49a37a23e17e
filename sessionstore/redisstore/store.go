package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Defaults for Options.
const (
	DefaultOpTimeout     = 2 * time.Second
	DefaultCheckInterval = 15 * time.Second
)

// DefaultPrefix was the prefix of a Store made without one.
//
// Deprecated: New requires Options.Prefix. A prefix shared by default let
// two unrelated applications on one Redis serve, and delete, each other's
// sessions; name the prefix after the application instead.
const DefaultPrefix = "lifeline:"

// Options configure a Store. The zero value gives the defaults.
type Options struct {
	// Prefix starts every key and channel name; it is required (New
	// panics without one). Stores that share sessions (the replicas of
	// one application) use the same prefix, and nothing else on the Redis
	// may: a Store sees, serves and can terminate every session under its
	// prefix. Name it after the application, e.g. "myapp:". On Redis
	// Cluster it must contain a hash tag, e.g. "{myapp}:", so that every
	// key is in one slot: the scripts touch several keys at once.
	Prefix string
	// OpTimeout bounds every call to Redis, on top of the caller's context
	// (DefaultOpTimeout when <= 0). It bounds a hung server only if the
	// client was built with ContextTimeoutEnabled; otherwise the client's
	// own read and write timeouts apply.
	OpTimeout time.Duration
	// BusBuffer is how many messages a subscription buffers before the bus
	// drops messages for it (sessionstore.MemoryBusBuffer when <= 0).
	BusBuffer int
	// BroadcastBuffer is how many broadcasts a broadcast subscription
	// buffers before the bus drops broadcasts for it, counted in
	// BroadcastsDropped (DefaultBroadcastBuffer when <= 0). Redis pub/sub
	// has no backpressure: a burst larger than this that a replica cannot
	// take as fast as it comes loses broadcasts on that replica.
	BroadcastBuffer int
	// CheckInterval is how often the bus pings its idle pub/sub connection
	// and re-checks that the sessions it is subscribed to are still live,
	// closing the subscriptions of any that expired or whose termination
	// broadcast was missed while Redis was unreachable
	// (DefaultCheckInterval when <= 0).
	CheckInterval time.Duration
	// LiveCacheWindow is how long a Store answers CheckLive for a session
	// from memory after Redis answered live (DefaultLiveCacheWindow when
	// 0; none, every CheckLive asking Redis, when negative; at most
	// MaxLiveCacheWindow). No termination is missed for it: Terminate and
	// Remove wait until no other Store's window for the session is open,
	// so a CheckLive that begins after one returns answers ErrTerminated
	// on every Store; that wait, up to the longest window of the replicas
	// plus a millisecond, is what a DELETE costs when another replica
	// served the session within it. Every replica must run a version that
	// knows the windows before any turns them on (see live_cache.go).
	LiveCacheWindow time.Duration
}

func (o Options) withDefaults() Options {
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.BusBuffer <= 0 {
		o.BusBuffer = sessionstore.MemoryBusBuffer
	}
	if o.BroadcastBuffer <= 0 {
		o.BroadcastBuffer = DefaultBroadcastBuffer
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = DefaultCheckInterval
	}
	switch {
	case o.LiveCacheWindow == 0:
		o.LiveCacheWindow = DefaultLiveCacheWindow
	case o.LiveCacheWindow < 0:
		o.LiveCacheWindow = 0
	}
	o.LiveCacheWindow = min(o.LiveCacheWindow, MaxLiveCacheWindow)
	return o
}

// Store is a sessionstore.Store on Redis, shared by every replica that uses
// the same Redis and prefix. It is safe for concurrent use. Call Close when
// done with it; the client stays the caller's to close.
type Store struct {
	client  redis.UniversalClient
	opts    Options
	scripts scripts
	bus     *bus
	checks  *tripShare[liveCall, checkAnswer]    // CheckLive's calls in flight and the batch forming (records_check.go)
	evals   *tripShare[scriptCall, scriptAnswer] // the event log's stores in flight and the batch forming (eval_shared.go)
	behind  *tripShare[scriptCall, scriptAnswer] // StoreStream's, each batch lingering first (eval_shared.go)
	live    *liveCache                           // CheckLive's answers kept for LiveCacheWindow (live_cache.go)
	// checkOnPrimary: the client may read from replicas, so CheckLive
	// reads through a script, which runs on the primary.
	checkOnPrimary bool
}

var _ sessionstore.Store = (*Store)(nil)

// New returns a Store on client. It does not contact Redis: a Store made
// while Redis is unreachable works once Redis answers. It starts the bus's
// dispatcher goroutine, which Close stops. It panics when opts.Prefix is
// empty: which sessions a Store shares, and with whom, is the caller's to
// say.
func New(client redis.UniversalClient, opts Options) *Store {
	if opts.Prefix == "" {
		panic("redisstore: New without Options.Prefix: name one after the application (e.g. \"myapp:\"); " +
			"replicas sharing sessions use the same prefix, and nothing else on the Redis may")
	}
	opts = opts.withDefaults()
	s := &Store{client: client, opts: opts, scripts: newScripts(), live: newLiveCache(opts.LiveCacheWindow), checkOnPrimary: readsReplicas(client)}
	s.checks = newTripShare(s.liveSend(), opts.OpTimeout, maxLiveChecks, maxLiveBatch)
	s.evals = newTripShare(s.evalSend(), opts.OpTimeout, maxScriptsAlone, maxScriptBatch)
	s.behind = newTripShare(s.evalSend(), opts.OpTimeout, maxScriptsAlone, maxScriptBatch)
	s.behind.linger = behindLinger
	s.bus = newBus(client, busConfig{
		prefix:     opts.Prefix + "bus:",
		wakePrefix: opts.Prefix + "wake:",
		broadcast:  opts.Prefix + "broadcast",
		bcastBuf:   opts.BroadcastBuffer,
		buffer:     opts.BusBuffer,
		interval:   opts.CheckInterval,
		opTimeout:  opts.OpTimeout,
		notLive:    s.notLive,
	})
	return s
}

// Close stops the bus: it closes every subscription of this Store, closes
// its pub/sub connection and waits for the dispatcher to exit. It also
// waits for the round trips that calls made at once share (CheckLive's,
// the event log's stores) to end, each within OpTimeout of its last
// caller's call or of its going out. Subscribe fails afterwards with
// ErrClosed; the other methods keep working while the client is open,
// each call going out on its own. Close is idempotent.
func (s *Store) Close() error {
	s.bus.close()
	s.checks.markClosed()
	s.evals.markClosed()
	s.behind.markClosed()
	s.checks.close()
	s.evals.close()
	s.behind.close()
	return nil
}

// Dropped reports how many messages this Store's bus has dropped because a
// subscription's buffer was full: session, topic and broadcast
// subscriptions alike. Publish and PublishBroadcast cannot report those
// (see the package documentation).
func (s *Store) Dropped() uint64 { return s.bus.dropped.Load() }

// The key layout; the Lua prune helper builds the first two itself.
func (s *Store) keyRecord(id string) string { return s.opts.Prefix + "session:" + id }
func (s *Store) keyLease(id string) string  { return s.opts.Prefix + "lease:" + id }
func (s *Store) keyIndex() string           { return s.opts.Prefix + "sessions" }
func (s *Store) channel(id string) string   { return s.bus.prefix + id }

// topicChannel is the channel of a topic of a session's bus: the session's
// channel, a space (never part of a session id, which is visible ASCII),
// the topic.
func (s *Store) topicChannel(id, topic string) string { return s.bus.prefix + id + " " + topic }

// opCtx bounds one call to Redis by OpTimeout.
func (s *Store) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.OpTimeout)
}

// eval runs a script within OpTimeout and returns its table.
func (s *Store) eval(ctx context.Context, sc *redis.Script, keys []string, args ...any) ([]any, error) {
	ctx, cancel := s.opCtx(ctx)
	defer cancel()
	return sc.Run(ctx, s.client, keys, args...).Slice()
}

// ms converts a ttl to whole milliseconds, rounding up; 0 for none.
func ms(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return int64((ttl + time.Millisecond - 1) / time.Millisecond)
}
