package redisstore

import (
	"context"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// The stream lease of a session is the key keyLease(id) holding the
// holder's name, with a PX expiry for a lease with a ttl. The scripts take
// it with SET NX (or SET XX by its own holder), renew it with a
// compare-and-set and release it with a compare-and-delete.

// AcquireStream implements sessionstore.Store.
func (s *Store) AcquireStream(ctx context.Context, id, holder string, ttl time.Duration) (sessionstore.Lease, error) {
	const op = "acquire a session's stream"
	st, res, err := s.status(ctx, op, s.scripts.acquire,
		[]string{s.keyRecord(id), s.keyLease(id)}, holder, ms(ttl))
	switch st {
	case statusOK, statusHeld:
		l, lerr := leaseFrom(op, id, res)
		if lerr != nil {
			return sessionstore.Lease{}, lerr
		}
		return l, err
	}
	return sessionstore.Lease{}, s.gone(id, err)
}

// RenewStream implements sessionstore.Store.
func (s *Store) RenewStream(ctx context.Context, lease sessionstore.Lease, ttl time.Duration) (sessionstore.Lease, error) {
	const op = "renew a stream lease"
	st, res, err := s.status(ctx, op, s.scripts.renew,
		[]string{s.keyRecord(lease.SessionID), s.keyLease(lease.SessionID)}, lease.Holder, ms(ttl))
	if st != statusOK {
		return sessionstore.Lease{}, err
	}
	return leaseFrom(op, lease.SessionID, res)
}

// ReleaseStream implements sessionstore.Store.
func (s *Store) ReleaseStream(ctx context.Context, lease sessionstore.Lease) error {
	const op = "release a stream lease"
	_, _, err := s.status(ctx, op, s.scripts.release, []string{s.keyLease(lease.SessionID)}, lease.Holder)
	return err
}

// StreamHolder implements sessionstore.Store.
func (s *Store) StreamHolder(ctx context.Context, id string) (sessionstore.Lease, bool, error) {
	const op = "get a session's stream holder"
	st, res, err := s.status(ctx, op, s.scripts.holder, []string{s.keyRecord(id), s.keyLease(id)})
	switch st {
	case statusOK:
		l, err := leaseFrom(op, id, res)
		return l, err == nil, err
	case statusNone:
		return sessionstore.Lease{}, false, nil
	}
	return sessionstore.Lease{}, false, s.gone(id, err)
}

// leaseFrom reads a lease script's {status, holder, pttl, now}.
func leaseFrom(op, id string, res []any) (sessionstore.Lease, error) {
	holder, err := field[string](op, res, 1)
	if err != nil {
		return sessionstore.Lease{}, err
	}
	pttl, err := field[int64](op, res, 2)
	if err != nil {
		return sessionstore.Lease{}, err
	}
	now, err := field[int64](op, res, 3)
	if err != nil {
		return sessionstore.Lease{}, err
	}
	l := sessionstore.Lease{SessionID: id, Holder: holder}
	if pttl > 0 {
		l.ExpiresAt = time.UnixMilli(now + pttl)
	}
	return l, nil
}
