package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

var _ sessionstore.Broadcaster = (*Store)(nil)

// PublishBroadcast implements sessionstore.Broadcaster on the channel
// Prefix+"broadcast". It returns once Redis has taken the message, which
// reaches every Store under the same prefix and Redis whose pub/sub
// connection is up; as with Publish, a subscription whose buffer
// (Options.BroadcastBuffer) is full misses it, counted in Dropped and
// BroadcastsDropped. Having no
// subscriber is not an error. It works on a closed Store while the client
// is open.
func (s *Store) PublishBroadcast(ctx context.Context, msg []byte) error {
	frame := append(append(make([]byte, 0, len(frameData)+len(msg)), frameData...), msg...)
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	if err := s.client.Publish(octx, s.bus.broadcast, frame).Err(); err != nil {
		return fail(ctx, "publish a broadcast", err)
	}
	return nil
}

// SubscribeBroadcasts implements sessionstore.Broadcaster. The
// subscription shares the Store's pub/sub connection, which subscribes the
// broadcast channel once however many local subscriptions it has; it is in
// place on the server when SubscribeBroadcasts returns. It ends on Close,
// or when the Store closes (then SubscribeBroadcasts fails with
// ErrClosed). An outage does not end it: go-redis resubscribes when Redis
// is back, and what was published meanwhile is lost for this Store.
// During an outage SubscribeBroadcasts fails with ErrUnavailable, unless
// the Store has another broadcast subscription, which the new one joins.
func (s *Store) SubscribeBroadcasts(ctx context.Context) (sessionstore.Subscription, error) {
	const op = "subscribe to broadcasts"
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	sub, err := s.bus.subscribe(octx, s.bus.broadcast)
	if errors.Is(err, ErrClosed) {
		return nil, fmt.Errorf("redisstore: %s: %w", op, err)
	}
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	return sub, nil
}

// DefaultBroadcastBuffer is Options.BroadcastBuffer's default.
const DefaultBroadcastBuffer = 4096

var _ sessionstore.BroadcastDropCounter = (*Store)(nil)

// BroadcastsDropped implements sessionstore.BroadcastDropCounter: how many
// broadcasts this Store's broadcast subscriptions missed because their
// buffer was full.
func (s *Store) BroadcastsDropped() uint64 { return s.bus.bcastDropped.Load() }
