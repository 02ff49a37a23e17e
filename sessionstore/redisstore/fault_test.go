package redisstore_test

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// TestRedisDown stops redis-server under a Store: every call fails within
// OpTimeout with ErrUnavailable, without goroutines piling up; after a
// restart (which lost every key) calls work again by themselves.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	awaitDialProbers(t)
	const opTimeout = 500 * time.Millisecond
	srv := testutil.StartRedisServer(t)
	e := &env{addr: srv.Addr(), raw: newClient(t, srv.Addr())}
	s := e.store(t, redisstore.Options{OpTimeout: opTimeout, CheckInterval: 200 * time.Millisecond})
	mustCreate(t, s, "s", time.Hour)
	lease := acquire(t, s, "s", "a", time.Minute, nil)
	before := subscribe(t, s, "s")
	// Another Store that never looks the session up.
	other := subscribe(t, e.store(t, redisstore.Options{OpTimeout: opTimeout, CheckInterval: 200 * time.Millisecond}), "s")

	srv.Stop()
	ctx := t.Context()
	calls := map[string]func() error{
		"Create": func() error { return s.Create(ctx, sessionstore.Record{ID: "new"}, time.Minute) },
		"Get":    func() error { _, err := s.Get(ctx, "s"); return err },
		"Update": func() error { return s.Update(ctx, sessionstore.Record{ID: "s"}) },
		"Touch":  func() error { return s.Touch(ctx, "s", time.Minute) },
		"Terminate": func() error {
			return s.Terminate(ctx, "s")
		},
		"Count":         func() error { _, err := s.Count(ctx); return err },
		"AcquireStream": func() error { _, err := s.AcquireStream(ctx, "s", "b", time.Minute); return err },
		"RenewStream":   func() error { _, err := s.RenewStream(ctx, lease, time.Minute); return err },
		"ReleaseStream": func() error { return s.ReleaseStream(ctx, lease) },
		"StreamHolder":  func() error { _, _, err := s.StreamHolder(ctx, "s"); return err },
		"Publish":       func() error { return s.Publish(ctx, "s", []byte("x")) },
		"Subscribe": func() error {
			sub, err := s.Subscribe(ctx, "s")
			if err == nil {
				sub.Close()
			}
			return err
		},
	}
	// Every call at once, three times over: each is bounded by OpTimeout,
	// which go-redis's own dial retries would otherwise exceed.
	goroutines := runtime.NumGoroutine()
	for round := range 3 {
		var wg sync.WaitGroup
		for name, call := range calls {
			wg.Go(func() {
				start := time.Now()
				err := call()
				if el := time.Since(start); el > opTimeout+300*time.Millisecond {
					t.Errorf("round %d: %s took %v with Redis down, want at most OpTimeout (%v)", round, name, el, opTimeout)
				}
				if !errors.Is(err, redisstore.ErrUnavailable) {
					t.Errorf("round %d: %s with Redis down: %v, want ErrUnavailable", round, name, err)
				}
			})
		}
		wg.Wait()
	}
	// go-redis's dials finish in the background, and it starts a dial
	// prober per client; nothing else may remain.
	holds(t, "the goroutines of the failed calls to end", func() bool {
		return runtime.NumGoroutine() <= goroutines+5
	})
	if t.Failed() {
		return
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// The restart lost the session; the Store notices by itself.
	holds(t, "Get to answer ErrNotFound after the restart", gone(t, s, "s"))
	closed(t, before) // Get found the session gone
	closed(t, other)  // its bus re-checked the sessions after reconnecting
	mustCreate(t, s, "s2", time.Hour)
	var sub sessionstore.Subscription
	holds(t, "Subscribe to work again", func() bool {
		var err error
		sub, err = s.Subscribe(ctx, "s2")
		return err == nil
	})
	defer sub.Close()
	for i := range 3 {
		publish(t, s, "s2", fmt.Sprint(i))
		if got := next(t, sub); got != fmt.Sprint(i) {
			t.Fatalf("got %q after the restart, want %d", got, i)
		}
	}
}

// TestRedisHung pauses redis-server: calls fail within OpTimeout with
// ErrUnavailable, also once the bus has found its connection dead and is
// reconnecting; once it resumes, with nothing lost, calls and existing
// subscriptions work again by themselves.
func TestRedisHung(t *testing.T) {
	t.Parallel()
	awaitDialProbers(t)
	const opTimeout, interval = 300 * time.Millisecond, 100 * time.Millisecond
	srv := testutil.StartRedisServer(t)
	e := &env{addr: srv.Addr(), raw: newClient(t, srv.Addr())}
	s := e.store(t, redisstore.Options{OpTimeout: opTimeout, CheckInterval: interval})
	for _, id := range []string{"s", "t", "u"} {
		mustCreate(t, s, id, time.Hour)
	}
	sub := subscribe(t, s, "s")

	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	subscribeClose := func(id string) func() error {
		return func() error {
			sub, err := s.Subscribe(t.Context(), id)
			if err == nil {
				sub.Close()
			}
			return err
		}
	}
	calls := map[string]func() error{
		"Get":             func() error { _, err := s.Get(t.Context(), "s"); return err },
		"AcquireStream":   func() error { _, err := s.AcquireStream(t.Context(), "s", "a", time.Minute); return err },
		"Publish":         func() error { return s.Publish(t.Context(), "s", []byte("sent while hung")) },
		"Subscribe (s)":   subscribeClose("s"), // its channel is subscribed already
		"Subscribe (t)":   subscribeClose("t"),
		"Subscribe again": subscribeClose("t"),
		"Subscribe (u)":   subscribeClose("u"),
	}
	check := func(round string) {
		var wg sync.WaitGroup
		for name, call := range calls {
			wg.Go(func() {
				start := time.Now()
				err := call()
				if el := time.Since(start); el > opTimeout+200*time.Millisecond {
					t.Errorf("%s: %s took %v with Redis hung, want at most OpTimeout (%v)", round, name, el, opTimeout)
				}
				if !errors.Is(err, redisstore.ErrUnavailable) {
					t.Errorf("%s: %s with Redis hung: %v, want ErrUnavailable", round, name, err)
				}
			})
		}
		wg.Wait()
	}
	check("at once")
	// By now the bus's ping went unanswered and it is reconnecting; that
	// holds nobody up either.
	holds(t, "the bus to give up on its connection", func() bool {
		return time.Since(pausedAt) > interval+2*opTimeout
	})
	check("later")
	if t.Failed() {
		return
	}
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed = true

	holds(t, "Get to work again", func() bool {
		_, err := s.Get(t.Context(), "s")
		return err == nil
	})
	// The subscription survived; skip what the hung calls left.
	holds(t, "the subscription to deliver again", func() bool {
		if err := s.Publish(t.Context(), "s", []byte("ping")); err != nil {
			return false
		}
		for {
			select {
			case msg, ok := <-sub.Messages():
				if !ok {
					t.Fatal("the subscription closed")
				}
				if string(msg) == "ping" {
					return true
				}
			case <-time.After(100 * time.Millisecond):
				return false
			}
		}
	})
	subscribe(t, s, "u")
}
