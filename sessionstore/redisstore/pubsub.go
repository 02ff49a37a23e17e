package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Frames on a session's channel: frameData followed by a message, or
// frameTerminate alone, which closes every subscription to the session.
const (
	frameData      = "d"
	frameTerminate = "t"
)

// Publish implements sessionstore.Store. It returns once Redis has taken
// the message; delivery to each subscriber is asynchronous, so unlike
// Memory it cannot report a subscriber whose buffer is full (the bus drops
// the message for that subscriber and counts it in Dropped). It reports
// ErrNoSubscribers when no Store had the channel subscribed.
func (s *Store) Publish(ctx context.Context, id string, msg []byte) error {
	return s.publish(ctx, id, s.channel(id), msg)
}

// PublishTopic implements sessionstore.Store, on the channel of the topic.
func (s *Store) PublishTopic(ctx context.Context, id, topic string, msg []byte) error {
	if topic == "" {
		return errors.New("redisstore: publish to a session's bus: empty topic")
	}
	return s.publish(ctx, id, s.topicChannel(id, topic), msg)
}

func (s *Store) publish(ctx context.Context, id, channel string, msg []byte) error {
	frame := append(append(make([]byte, 0, 1+len(msg)), frameData...), msg...)
	_, _, err := s.status(ctx, "publish to a session's bus", s.scripts.publish,
		[]string{s.keyRecord(id)}, channel, frame)
	return s.gone(id, err)
}

// Subscribe implements sessionstore.Store. The subscription is in place on
// the server when Subscribe returns: every later Publish reaches it.
func (s *Store) Subscribe(ctx context.Context, id string) (sessionstore.Subscription, error) {
	return s.subscribe(ctx, id, s.channel(id))
}

// SubscribeTopic implements sessionstore.Store, on the channel of the
// topic. The termination broadcast goes to the session's own channel only:
// a topic subscription of a terminated session ends at the bus's next
// check (Options.CheckInterval), or when this Store finds the session gone.
func (s *Store) SubscribeTopic(ctx context.Context, id, topic string) (sessionstore.Subscription, error) {
	if topic == "" {
		return nil, errors.New("redisstore: subscribe to a session's bus: empty topic")
	}
	return s.subscribe(ctx, id, s.topicChannel(id, topic))
}

func (s *Store) subscribe(ctx context.Context, id, channel string) (sessionstore.Subscription, error) {
	const op = "subscribe to a session's bus"
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	sub, err := s.bus.subscribe(octx, channel)
	if errors.Is(err, ErrClosed) {
		return nil, fmt.Errorf("redisstore: %s: %w", op, err)
	}
	if err != nil {
		return nil, fail(ctx, op, err)
	}
	// Checked once the server has the subscription: a termination before
	// this point shows here, one after it arrives on the channel.
	state, err := s.client.HGet(octx, s.keyRecord(id), "s").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		sub.Close()
		return nil, fail(ctx, op, err)
	}
	if err := s.lookupErr(op, id, state); err != nil {
		sub.Close()
		return nil, err
	}
	return sub, nil
}

// notLive returns those of ids whose session is not live, for the bus's
// re-checks.
func (s *Store) notLive(ctx context.Context, ids []string) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGet(ctx, s.keyRecord(id), "s")
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var dead []string
	for i, cmd := range cmds {
		state, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, err
		}
		if state != stateLive {
			dead = append(dead, ids[i])
		}
	}
	return dead, nil
}
