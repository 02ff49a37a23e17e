package streamable

import (
	"context"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// storeErrTargets are the errors storeErrOf names, in storeErr's order.
var storeErrTargets = [...]error{sessionstore.ErrNotFound, sessionstore.ErrTerminated, sessionstore.ErrExists,
	sessionstore.ErrStreamHeld, sessionstore.ErrLeaseLost, sessionstore.ErrNoSubscribers,
	context.DeadlineExceeded, context.Canceled}

// meteredStore is the Store the transport calls (Handler.store): each call
// counted in lifeline.store.calls and timed in lifeline.store.duration, and
// each message published counted in lifeline.bus.published. It wraps
// Config.Store, which stays as the caller gave it: every check for what the
// store can do beyond Store (sessionstore.Broadcaster,
// sessionstore.BroadcastDropCounter, sessionstore.EventLogProvider, Sweep,
// and whether it is the process-local Memory) looks at Config.Store, so the
// wrapper hides none of it. Broadcasts go through broadcaster, which meters
// them too.
type meteredStore struct {
	inner sessionstore.Store
	m     *meters
}

var _ sessionstore.Store = meteredStore{}

func (s meteredStore) Create(ctx context.Context, rec sessionstore.Record, ttl time.Duration) error {
	t := s.m.storeStart()
	err := s.inner.Create(ctx, rec, ttl)
	s.m.storeCall(opCreate, t, err)
	return err
}

func (s meteredStore) Get(ctx context.Context, id string) (sessionstore.Record, error) {
	t := s.m.storeStart()
	rec, err := s.inner.Get(ctx, id)
	s.m.storeCall(opGet, t, err)
	return rec, err
}

func (s meteredStore) Update(ctx context.Context, rec sessionstore.Record) error {
	t := s.m.storeStart()
	err := s.inner.Update(ctx, rec)
	s.m.storeCall(opUpdate, t, err)
	return err
}

func (s meteredStore) Touch(ctx context.Context, id string, ttl time.Duration) error {
	t := s.m.storeStart()
	err := s.inner.Touch(ctx, id, ttl)
	s.m.storeCall(opTouch, t, err)
	return err
}

// CheckLive is the inner store's sessionstore.LivenessChecker (which
// Handler.checker says it has).
func (s meteredStore) CheckLive(ctx context.Context, id string) error {
	t := s.m.storeStart()
	err := s.inner.(sessionstore.LivenessChecker).CheckLive(ctx, id)
	s.m.storeCall(opCheckLive, t, err)
	return err
}

func (s meteredStore) Terminate(ctx context.Context, id string) error {
	t := s.m.storeStart()
	err := s.inner.Terminate(ctx, id)
	s.m.storeCall(opTerminate, t, err)
	return err
}

func (s meteredStore) Remove(ctx context.Context, id string) error {
	t := s.m.storeStart()
	err := s.inner.Remove(ctx, id)
	s.m.storeCall(opRemove, t, err)
	return err
}

func (s meteredStore) Count(ctx context.Context) (int, error) {
	t := s.m.storeStart()
	n, err := s.inner.Count(ctx)
	s.m.storeCall(opCount, t, err)
	return n, err
}

func (s meteredStore) AcquireStream(ctx context.Context, id, holder string, ttl time.Duration) (sessionstore.Lease, error) {
	t := s.m.storeStart()
	l, err := s.inner.AcquireStream(ctx, id, holder, ttl)
	s.m.storeCall(opAcquireStream, t, err)
	return l, err
}

func (s meteredStore) RenewStream(ctx context.Context, lease sessionstore.Lease, ttl time.Duration) (sessionstore.Lease, error) {
	t := s.m.storeStart()
	l, err := s.inner.RenewStream(ctx, lease, ttl)
	s.m.storeCall(opRenewStream, t, err)
	return l, err
}

func (s meteredStore) ReleaseStream(ctx context.Context, lease sessionstore.Lease) error {
	t := s.m.storeStart()
	err := s.inner.ReleaseStream(ctx, lease)
	s.m.storeCall(opReleaseStream, t, err)
	return err
}

func (s meteredStore) StreamHolder(ctx context.Context, id string) (sessionstore.Lease, bool, error) {
	t := s.m.storeStart()
	l, ok, err := s.inner.StreamHolder(ctx, id)
	s.m.storeCall(opStreamHolder, t, err)
	return l, ok, err
}

func (s meteredStore) Publish(ctx context.Context, id string, msg []byte) error {
	t := s.m.storeStart()
	err := s.inner.Publish(ctx, id, msg)
	s.m.storeCall(opPublish, t, err)
	if err == nil {
		s.m.published()
	}
	return err
}

func (s meteredStore) Subscribe(ctx context.Context, id string) (sessionstore.Subscription, error) {
	t := s.m.storeStart()
	sub, err := s.inner.Subscribe(ctx, id)
	s.m.storeCall(opSubscribe, t, err)
	return sub, err
}

func (s meteredStore) PublishTopic(ctx context.Context, id, topic string, msg []byte) error {
	t := s.m.storeStart()
	err := s.inner.PublishTopic(ctx, id, topic, msg)
	s.m.storeCall(opPublishTopic, t, err)
	if err == nil {
		s.m.published()
	}
	return err
}

func (s meteredStore) SubscribeTopic(ctx context.Context, id, topic string) (sessionstore.Subscription, error) {
	t := s.m.storeStart()
	sub, err := s.inner.SubscribeTopic(ctx, id, topic)
	s.m.storeCall(opSubscribeTopic, t, err)
	return sub, err
}

// broadcaster returns the store's broadcast bus, metered, or nil when
// Config.Store is not a sessionstore.Broadcaster.
func (s meteredStore) broadcaster() sessionstore.Broadcaster {
	b, ok := s.inner.(sessionstore.Broadcaster)
	if !ok {
		return nil
	}
	return meteredBroadcaster{inner: b, m: s.m}
}

// meteredBroadcaster is a sessionstore.Broadcaster metered as
// meteredStore is.
type meteredBroadcaster struct {
	inner sessionstore.Broadcaster
	m     *meters
}

func (b meteredBroadcaster) PublishBroadcast(ctx context.Context, msg []byte) error {
	t := b.m.storeStart()
	err := b.inner.PublishBroadcast(ctx, msg)
	b.m.storeCall(opPublishBroadcast, t, err)
	if err == nil {
		b.m.published()
	}
	return err
}

func (b meteredBroadcaster) SubscribeBroadcasts(ctx context.Context) (sessionstore.Subscription, error) {
	t := b.m.storeStart()
	sub, err := b.inner.SubscribeBroadcasts(ctx)
	b.m.storeCall(opSubscribeBroadcasts, t, err)
	return sub, err
}
