package redisstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// The record's state field.
const (
	stateLive       = "live"
	stateTerminated = "terminated"
)

// Create implements sessionstore.Store.
func (s *Store) Create(ctx context.Context, rec sessionstore.Record, ttl time.Duration) error {
	const op = "create a session"
	var created string
	if !rec.CreatedAt.IsZero() {
		created = strconv.FormatInt(rec.CreatedAt.UnixNano(), 10)
	}
	_, _, err := s.status(ctx, op, s.scripts.create,
		[]string{s.keyRecord(rec.ID), s.keyIndex(), s.keyLease(rec.ID)},
		s.opts.Prefix, rec.ID, rec.ProtocolVersion, rec.ClientInfo, created, ms(ttl), rand.Text(), rec.Caller)
	if err == nil {
		// Subscriptions left from an earlier session of this id are not
		// this one's.
		s.bus.end(s.channel(rec.ID))
	}
	return err
}

// Get implements sessionstore.Store.
func (s *Store) Get(ctx context.Context, id string) (sessionstore.Record, error) {
	const op = "get a session"
	octx, cancel := s.opCtx(ctx)
	defer cancel()
	h, err := s.client.HGetAll(octx, s.keyRecord(id)).Result()
	if err != nil {
		return sessionstore.Record{}, fail(ctx, op, err)
	}
	if err := s.lookupErr(op, id, h["s"]); err != nil {
		return sessionstore.Record{}, err
	}
	// A record written before the caller field existed has none: anonymous.
	rec := sessionstore.Record{ID: id, ProtocolVersion: h["v"], Caller: h["u"]}
	if ci := h["ci"]; ci != "" {
		rec.ClientInfo = []byte(ci)
	}
	created, err1 := strconv.ParseInt(h["c"], 10, 64)
	expires, err2 := strconv.ParseInt(h["e"], 10, 64)
	if err1 != nil || err2 != nil {
		return sessionstore.Record{}, fmt.Errorf("redisstore: %s: malformed record %q", op, h)
	}
	rec.CreatedAt = time.Unix(0, created)
	if expires > 0 {
		rec.ExpiresAt = time.UnixMilli(expires)
	}
	return rec, nil
}

// lookupErr maps a record's state field ("" when the record is absent) to
// ErrNotFound or ErrTerminated. Like Memory's lookup, finding a session
// gone closes this Store's subscriptions to it.
func (s *Store) lookupErr(op, id, state string) error {
	var err error
	switch state {
	case stateLive:
		return nil
	case "":
		err = sessionstore.ErrNotFound
	default:
		err = sessionstore.ErrTerminated
	}
	s.bus.end(s.channel(id))
	return fmt.Errorf("redisstore: %s: %w", op, err)
}

// gone closes this Store's subscriptions to id if err says the session is
// not live, and returns err.
func (s *Store) gone(id string, err error) error {
	if isGone(err) {
		s.bus.end(s.channel(id))
	}
	return err
}

// Update implements sessionstore.Store.
func (s *Store) Update(ctx context.Context, rec sessionstore.Record) error {
	_, _, err := s.status(ctx, "update a session", s.scripts.update,
		[]string{s.keyRecord(rec.ID)}, rec.ProtocolVersion, rec.ClientInfo)
	return s.gone(rec.ID, err)
}

// Touch implements sessionstore.Store.
func (s *Store) Touch(ctx context.Context, id string, ttl time.Duration) error {
	_, _, err := s.status(ctx, "touch a session", s.scripts.touch,
		[]string{s.keyRecord(id), s.keyIndex()}, id, ms(ttl))
	return s.gone(id, err)
}

// Terminate implements sessionstore.Store. It returns once this Store's own
// subscriptions to the session are closed, after the messages published
// before the termination (other Stores close theirs when the broadcast
// reaches them), and once no other Store answers the session live from
// memory (live_cache.go): a CheckLive that begins after it, on any Store,
// answers ErrTerminated.
func (s *Store) Terminate(ctx context.Context, id string) error {
	const op = "terminate a session"
	st, res, err := s.status(ctx, op, s.scripts.terminate,
		[]string{s.keyRecord(id), s.keyIndex(), s.keyLease(id)},
		id, s.channel(id), ms(sessionstore.TombstoneTTL), frameTerminate, s.live.name)
	s.live.forget(id) // whatever the answer: a lost one may have ended it
	windows := s.windowsEnd(waitOf(res))
	switch st {
	case statusOK:
		wctx, cancel := s.opCtx(ctx)
		defer cancel()
		s.bus.awaitEnd(wctx, s.channel(id))
		s.awaitWindows(windows)
		return nil
	case statusTerminated:
		// Idempotent; the broadcast went out with the first Terminate.
		s.bus.end(s.channel(id))
		s.awaitWindows(windows)
		return nil
	}
	return s.gone(id, err)
}

// waitOf reads the wait Terminate's or Remove's script answered (0 from a
// script without one).
func waitOf(res []any) int64 {
	if len(res) < 2 {
		return 0
	}
	ms, _ := res[1].(int64)
	return ms
}

// Remove implements sessionstore.Store. Like Terminate, it returns once
// this Store's own subscriptions to the session are closed and no other
// Store answers it live from memory.
func (s *Store) Remove(ctx context.Context, id string) error {
	st, res, err := s.status(ctx, "remove a session", s.scripts.remove,
		[]string{s.keyRecord(id), s.keyIndex(), s.keyLease(id)}, id, s.channel(id), frameTerminate, s.live.name)
	s.live.forget(id)
	windows := s.windowsEnd(waitOf(res))
	s.bus.end(s.channel(id))
	if st == statusOK {
		s.awaitWindows(windows)
	}
	return err
}

// Count implements sessionstore.Store. It prunes the index of sessions that
// lapsed (and their leases) as it goes.
func (s *Store) Count(ctx context.Context) (int, error) {
	const op = "count sessions"
	_, res, err := s.status(ctx, op, s.scripts.count, []string{s.keyIndex()}, s.opts.Prefix)
	if err != nil {
		return 0, err
	}
	n, err := field[int64](op, res, 1)
	return int(n), err
}
