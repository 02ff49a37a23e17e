package redisstore_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
)

func TestAcquireStream(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", 0)
	before := time.Now()
	l := acquire(t, s, "s", "a", 10*time.Second, nil)
	after := time.Now()
	if l.SessionID != "s" || l.Holder != "a" {
		t.Fatalf("lease = %+v", l)
	}
	within(t, "lease ExpiresAt", l.ExpiresAt, before.Add(10*time.Second), after.Add(10*time.Second))
	if d := e.pttl(t, prefix+"lease:s"); d <= 9*time.Second || d > 10*time.Second {
		t.Fatalf("lease PTTL = %v, want about 10s", d)
	}
	// The same holder may re-acquire, which restarts the ttl.
	before = time.Now()
	l = acquire(t, s, "s", "a", 20*time.Second, nil)
	within(t, "re-acquired ExpiresAt", l.ExpiresAt, before.Add(20*time.Second), time.Now().Add(20*time.Second))
	held := acquire(t, s, "s", "b", 10*time.Second, sessionstore.ErrStreamHeld)
	if held.Holder != "a" || held.SessionID != "s" {
		t.Fatalf("ErrStreamHeld lease = %+v, want holder a", held)
	}
	within(t, "held ExpiresAt", held.ExpiresAt, l.ExpiresAt, l.ExpiresAt)
	wantHolder(t, s, "s", "a")

	// Once a's lease lapses b can take it over.
	acquire(t, s, "s", "a", 200*time.Millisecond, nil)
	holds(t, "the lease to lapse", func() bool {
		_, ok, err := s.StreamHolder(t.Context(), "s")
		return err == nil && !ok
	})
	if l = acquire(t, s, "s", "b", 0, nil); l.Holder != "b" || !l.ExpiresAt.IsZero() {
		t.Fatalf("takeover lease = %+v", l)
	}
	// A ttl<=0 lease never lapses.
	if d := e.pttl(t, prefix+"lease:s"); d != -1 {
		t.Fatalf("lease without ttl: PTTL = %v, want none", d)
	}
	acquire(t, s, "s", "a", time.Second, sessionstore.ErrStreamHeld)
	wantHolder(t, s, "s", "b")
	acquire(t, s, "nope", "a", time.Second, sessionstore.ErrNotFound)
	_, _, err := s.StreamHolder(t.Context(), "nope")
	wantErr(t, "StreamHolder unknown", err, sessionstore.ErrNotFound)
}

func TestRenewStream(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Hour)
	la := acquire(t, s, "s", "a", 10*time.Second, nil)
	before := time.Now()
	r := renew(t, s, la, 20*time.Second, nil)
	if r.Holder != "a" || r.SessionID != "s" {
		t.Fatalf("renewed = %+v", r)
	}
	within(t, "renewed ExpiresAt", r.ExpiresAt, before.Add(20*time.Second), time.Now().Add(20*time.Second))
	if d := e.pttl(t, prefix+"lease:s"); d <= 19*time.Second {
		t.Fatalf("renewed lease PTTL = %v, want about 20s", d)
	}
	// The wrong holder cannot renew it (compare-and-set).
	renew(t, s, sessionstore.Lease{SessionID: "s", Holder: "b"}, time.Second, sessionstore.ErrLeaseLost)
	wantHolder(t, s, "s", "a")
	// Renewing with ttl<=0 drops the expiry.
	if r = renew(t, s, la, 0, nil); !r.ExpiresAt.IsZero() || e.pttl(t, prefix+"lease:s") != -1 {
		t.Fatalf("renewed without ttl = %+v, PTTL %v", r, e.pttl(t, prefix+"lease:s"))
	}
	// After a lapse renew fails, even with nobody else holding the stream.
	renew(t, s, la, 200*time.Millisecond, nil)
	holds(t, "the lease to lapse", func() bool { return !e.exists(t, prefix+"lease:s") })
	renew(t, s, la, 10*time.Second, sessionstore.ErrLeaseLost)
	// After a takeover the old holder has lost it too.
	acquire(t, s, "s", "b", 10*time.Second, nil)
	renew(t, s, la, 10*time.Second, sessionstore.ErrLeaseLost)
	wantHolder(t, s, "s", "b")
	renew(t, s, sessionstore.Lease{SessionID: "nope", Holder: "a"}, time.Second, sessionstore.ErrLeaseLost)
}

func TestReleaseStream(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Hour)
	la := acquire(t, s, "s", "a", time.Minute, nil)
	// A non-holder's release leaves the lease in place (compare-and-delete).
	wantErr(t, "Release by b", s.ReleaseStream(t.Context(), sessionstore.Lease{SessionID: "s", Holder: "b"}), nil)
	wantHolder(t, s, "s", "a")
	acquire(t, s, "s", "b", time.Minute, sessionstore.ErrStreamHeld)
	wantErr(t, "Release by a", s.ReleaseStream(t.Context(), la), nil)
	wantHolder(t, s, "s", "")
	wantErr(t, "Release again", s.ReleaseStream(t.Context(), la), nil)
	wantErr(t, "Release unknown", s.ReleaseStream(t.Context(), sessionstore.Lease{SessionID: "x", Holder: "a"}), nil)
	lb := acquire(t, s, "s", "b", time.Minute, nil)
	// a's stale lease cannot release b's.
	wantErr(t, "stale Release by a", s.ReleaseStream(t.Context(), la), nil)
	wantHolder(t, s, "s", lb.Holder)
}

// TestAcquireReleaseRace: holders on two Stores race for one stream, and
// at no time may two of them believe they hold it.
func TestAcquireReleaseRace(t *testing.T) {
	const workers, iters = 8, 100
	e := newEnv(t)
	stores := []*redisstore.Store{e.store(t, redisstore.Options{}), e.store(t, redisstore.Options{})}
	mustCreate(t, stores[0], "s", 0)
	var holding, wins atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		holder, s := fmt.Sprintf("h%d", w), stores[w%len(stores)]
		wg.Go(func() {
			for range iters {
				l, err := s.AcquireStream(t.Context(), "s", holder, time.Minute)
				if errors.Is(err, sessionstore.ErrStreamHeld) {
					continue
				}
				if err != nil {
					t.Errorf("%s: AcquireStream: %v", holder, err)
					return
				}
				if n := holding.Add(1); n > 1 {
					t.Errorf("%s: %d holders believe they hold the stream", holder, n)
				}
				wins.Add(1)
				holding.Add(-1)
				if err := s.ReleaseStream(t.Context(), l); err != nil {
					t.Errorf("%s: ReleaseStream: %v", holder, err)
				}
			}
		})
	}
	wg.Wait()
	if wins.Load() == 0 {
		t.Fatal("no AcquireStream ever succeeded")
	}
	wantHolder(t, stores[1], "s", "")
}
