// Package sessionstore is where a transport keeps its session records and
// the ownership of each session's standalone stream.
//
// The transport holds live objects (streams, queues, the MCPServer's
// registration) in its own process; a Store holds what must be agreed on by
// every process that serves the same sessions: whether a session exists,
// when it expires, whether it was terminated, which process holds its
// stream, and a bus for messages bound for a stream held elsewhere. Memory
// is the default, for a single process; a shared implementation (Redis) lets
// several replicas serve one session.
package sessionstore

import (
	"context"
	"errors"
	"time"
)

// Errors returned by every Store.
var (
	// ErrNotFound: no such session, or it has expired.
	ErrNotFound = errors.New("sessionstore: session not found")
	// ErrTerminated: the session existed and was terminated.
	ErrTerminated = errors.New("sessionstore: session terminated")
	// ErrExists: Create was called with an id already in use.
	ErrExists = errors.New("sessionstore: session already exists")
	// ErrStreamHeld: another holder owns the session's stream lease.
	ErrStreamHeld = errors.New("sessionstore: stream is held by another holder")
	// ErrLeaseLost: the lease expired or was taken over before it was renewed.
	ErrLeaseLost = errors.New("sessionstore: stream lease lost")
	// ErrNoSubscribers: Publish found nobody subscribed to the session's
	// bus, so the message was delivered to no one.
	ErrNoSubscribers = errors.New("sessionstore: no subscriber on the session's bus")
)

// Record is what a store knows of a session.
type Record struct {
	// ID is the session id the client carries in Mcp-Session-Id.
	ID string
	// ProtocolVersion is the version negotiated by initialize.
	ProtocolVersion string
	// ClientInfo is the client's initialize parameters (clientInfo and
	// capabilities) as raw JSON, so another replica can rebuild the session.
	ClientInfo []byte
	// CreatedAt is when the session was created.
	CreatedAt time.Time
	// ExpiresAt is when the session expires unless touched; zero means never.
	ExpiresAt time.Time
	// Caller names the caller the session is bound to, set by Create and
	// never changed (Update leaves it): the transport stores a digest of
	// the caller's identity (streamable: hex SHA-256), never the identity
	// itself. Empty means the session is bound to no one (anonymous), as
	// is every record written before the field existed.
	Caller string
}

// Lease is the ownership of a session's standalone stream by one holder.
type Lease struct {
	// SessionID is the session whose stream is held.
	SessionID string
	// Holder names the holder (a replica and stream).
	Holder string
	// ExpiresAt is when the lease lapses unless renewed; zero means never.
	ExpiresAt time.Time
}

// Store keeps session records, stream leases and the per-session bus.
// Implementations are safe for concurrent use.
type Store interface {
	// Create stores a new record that expires after ttl (never when ttl <= 0).
	// It returns ErrExists if the id is in use, terminated ids included.
	Create(ctx context.Context, rec Record, ttl time.Duration) error
	// Get returns the record, ErrNotFound for an unknown or expired id, and
	// ErrTerminated for a terminated one.
	Get(ctx context.Context, id string) (Record, error)
	// Update replaces the mutable fields (ProtocolVersion, ClientInfo) of a
	// live record; CreatedAt and Caller stay as Create set them.
	Update(ctx context.Context, rec Record) error
	// Touch extends a live record's expiry to ttl from now.
	Touch(ctx context.Context, id string, ttl time.Duration) error
	// Terminate marks the session terminated, releases its lease and tells
	// every subscriber of its bus; afterwards Get returns ErrTerminated until
	// the tombstone lapses after the record's last ttl. It returns ErrNotFound
	// for an unknown or expired id and is idempotent for terminated ones.
	Terminate(ctx context.Context, id string) error
	// Remove deletes the session's record or tombstone and its lease, and
	// ends every subscription of its bus, leaving no tombstone: afterwards
	// Get returns ErrNotFound. It is for a session that was created but
	// never served (its initialize was refused or failed). Removing an
	// unknown id is not an error.
	Remove(ctx context.Context, id string) error
	// Count reports how many live (not expired, not terminated) sessions exist.
	Count(ctx context.Context) (int, error)

	// AcquireStream gives holder the session's stream lease for ttl (no
	// expiry when ttl <= 0). It returns ErrStreamHeld with the current lease
	// if someone else holds an unexpired one, ErrNotFound or ErrTerminated
	// for a session that is not live.
	AcquireStream(ctx context.Context, id, holder string, ttl time.Duration) (Lease, error)
	// RenewStream extends a lease still held by its holder, else ErrLeaseLost.
	RenewStream(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error)
	// ReleaseStream drops the lease if, and only if, lease.Holder still holds
	// it (compare-and-delete). Releasing a lost lease is not an error.
	ReleaseStream(ctx context.Context, lease Lease) error
	// StreamHolder returns the current unexpired lease, or ok=false.
	StreamHolder(ctx context.Context, id string) (lease Lease, ok bool, err error)

	// Publish sends msg to every current subscriber of the session's bus.
	// It returns ErrNoSubscribers when there was none (nobody got msg).
	Publish(ctx context.Context, id string, msg []byte) error
	// Subscribe returns a subscription to the session's bus.
	Subscribe(ctx context.Context, id string) (Subscription, error)

	// PublishTopic is Publish to one topic of the session's bus: only the
	// subscriptions to that topic get msg, and ErrNoSubscribers says there
	// was none. A topic is any non-empty string (a stream's lease holder,
	// say), so that a message can be addressed to one listener and its
	// publisher learn whether that listener was there.
	PublishTopic(ctx context.Context, id, topic string, msg []byte) error
	// SubscribeTopic returns a subscription to one topic of the session's
	// bus. It ends like any subscription: on Close, and when the session is
	// terminated (a shared store may notice that only at its next check of
	// the session).
	SubscribeTopic(ctx context.Context, id, topic string) (Subscription, error)
}

// Broadcaster is a bus shared by every replica using the store, not tied to
// a session: what any replica publishes reaches the broadcast subscriptions
// of all of them, its own included. Memory and redisstore.Store implement
// it; a transport uses it for what must reach every stream of every
// replica (mcp-go's notifications to all clients, such as a changed tools
// list).
type Broadcaster interface {
	// PublishBroadcast sends msg to every current broadcast subscription,
	// of every replica, in publication order per publisher: the messages of
	// one goroutine's successive calls arrive on every subscription in that
	// order (calls made concurrently have no order between them). Each
	// subscription gets msg at most once, except that a shared store's
	// client may repeat a call whose connection broke mid-way. Having no
	// subscriber is not an error. A subscription whose buffer is full
	// misses msg, and the store counts it (Memory.Dropped,
	// redisstore.Store.Dropped) without reporting it here: a shared store
	// delivers after PublishBroadcast returns. An error means msg may have
	// reached no one. PublishBroadcast does not keep msg; subscribers get
	// a copy, which they must not modify.
	PublishBroadcast(ctx context.Context, msg []byte) error
	// SubscribeBroadcasts returns a subscription receiving every message
	// published from now on (its own replica's included): every
	// PublishBroadcast that starts after SubscribeBroadcasts returned
	// reaches it. It may also get a message published just before, which
	// its replica was still delivering to its other broadcast
	// subscriptions. It ends on Close (and when the store is closed, for a
	// store that has a Close); Messages is closed then. A shared store
	// loses the messages published while its replica's connection is down
	// (they reach the replicas still connected); the subscription stays
	// and receives again once the connection is back.
	SubscribeBroadcasts(ctx context.Context) (Subscription, error)
}

// BroadcastDropCounter is implemented by a Broadcaster that counts the
// broadcasts its subscriptions missed because their buffer was full.
type BroadcastDropCounter interface {
	// BroadcastsDropped reports how many broadcasts were missed so far.
	BroadcastsDropped() uint64
}

// Subscription receives the messages published on one session's bus, or
// on the broadcast bus (Broadcaster).
type Subscription interface {
	// Messages delivers published messages in order; it is closed when the
	// subscription is closed or the session is terminated.
	Messages() <-chan []byte
	// Close ends the subscription. It is idempotent.
	Close() error
}

// LivenessChecker is a Store that tells whether a session is live more
// cheaply than Touch, without extending its expiry. A transport calls it
// for a session its replica touched less than a fraction of the idle TTL
// ago, and Touch otherwise (redisstore.Store: one HGET instead of a script
// that also writes the record's expiry and the index).
type LivenessChecker interface {
	// CheckLive returns nil for a live session, ErrTerminated for a
	// terminated one and ErrNotFound for an unknown or expired id. An
	// implementation may answer live from a short-lived memory of its own
	// (redisstore: Options.LiveCacheWindow) only if no termination is
	// missed for it: a CheckLive that begins after Terminate or Remove
	// returned, on any Store sharing the session, reports the session gone.
	CheckLive(ctx context.Context, id string) error
}
