package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// ErrUnavailable is wrapped by every error that comes from Redis being
// unreachable, timing out (OpTimeout) or not ready to serve (loading,
// failing over): a transport answers such a request with 503. The error
// also wraps the underlying cause.
var ErrUnavailable = errors.New("redisstore: redis is unavailable")

// ErrClosed is returned by Subscribe, SubscribeTopic and SubscribeBroadcasts
// on a closed Store.
var ErrClosed = errors.New("redisstore: store is closed")

// Redis error replies that mean "not now" rather than "wrong".
var transientReplies = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY "}

// unavailable reports whether err means Redis could not serve the call.
func unavailable(err error) bool {
	if errors.Is(err, redis.ErrClosed) {
		return false // the client was closed: a bug, not an outage
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		for _, p := range transientReplies {
			if redis.HasErrorPrefix(err, p) {
				return true
			}
		}
		return false
	}
	// Dial and I/O errors, timeouts (OpTimeout's included), pool timeouts.
	return true
}

// fail wraps err from the call op. ctx is the caller's: when it ended, the
// caller gave up and that is what the error says; otherwise a Redis outage
// wraps ErrUnavailable.
func fail(ctx context.Context, op string, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("redisstore: %s: %w (%v)", op, cerr, err)
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// Script statuses.
const (
	statusOK         = "OK"
	statusNotFound   = "NOTFOUND"
	statusTerminated = "TERMINATED"
	statusExists     = "EXISTS"
	statusHeld       = "HELD"
	statusLost       = "LOST"
	statusNone       = "NONE"
	statusNoSub      = "NOSUBSCRIBER"
)

// statusErr maps a script status to the sessionstore error, wrapped with op.
func statusErr(op, status string) error {
	var err error
	switch status {
	case statusOK, statusNone:
		return nil
	case statusNotFound:
		err = sessionstore.ErrNotFound
	case statusTerminated:
		err = sessionstore.ErrTerminated
	case statusExists:
		err = sessionstore.ErrExists
	case statusHeld:
		err = sessionstore.ErrStreamHeld
	case statusLost:
		err = sessionstore.ErrLeaseLost
	case statusNoSub:
		err = sessionstore.ErrNoSubscribers
	default:
		return fmt.Errorf("redisstore: %s: unexpected script status %q", op, status)
	}
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// field returns element i of a script's table as T, or an error naming op.
func field[T any](op string, res []any, i int) (T, error) {
	var zero T
	if i >= len(res) {
		return zero, fmt.Errorf("redisstore: %s: script answered %d values, want more than %d", op, len(res), i)
	}
	v, ok := res[i].(T)
	if !ok {
		return zero, fmt.Errorf("redisstore: %s: script value %d is %T, want %T", op, i, res[i], zero)
	}
	return v, nil
}

// status runs a script and turns its status into an error: the Redis
// failure (see fail) or the sessionstore error. It returns the table too.
func (s *Store) status(ctx context.Context, op string, sc *redis.Script, keys []string, args ...any) (string, []any, error) {
	res, err := s.eval(ctx, sc, keys, args...)
	if err != nil {
		return "", nil, fail(ctx, op, err)
	}
	st, err := field[string](op, res, 0)
	if err != nil {
		return "", nil, err
	}
	return st, res, statusErr(op, st)
}

// isGone reports whether err says the session is not live.
func isGone(err error) bool {
	return errors.Is(err, sessionstore.ErrNotFound) || errors.Is(err, sessionstore.ErrTerminated)
}
