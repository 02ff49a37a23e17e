package redisstore_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func subscribeBroadcasts(t *testing.T, s *redisstore.Store) sessionstore.Subscription {
	t.Helper()
	sub, err := s.SubscribeBroadcasts(t.Context())
	wantErr(t, "SubscribeBroadcasts", err, nil)
	t.Cleanup(func() { sub.Close() })
	return sub
}

func publishBroadcast(t *testing.T, s *redisstore.Store, msg string) {
	t.Helper()
	wantErr(t, fmt.Sprintf("PublishBroadcast(%q)", msg), s.PublishBroadcast(t.Context(), []byte(msg)), nil)
}

// TestBroadcastAcrossStores: two Stores with one prefix on one Redis (two
// replicas) each get the other's broadcasts and their own, each
// publisher's in order; a subscription made after a broadcast does not get
// it; a Store under another prefix gets none of them, nor they its.
func TestBroadcastAcrossStores(t *testing.T) {
	e := newEnv(t)
	a, b := e.store(t, redisstore.Options{}), e.store(t, redisstore.Options{})
	other := e.store(t, redisstore.Options{Prefix: "other:"})
	publishBroadcast(t, a, "nobody listens") // not an error

	a1 := subscribeBroadcasts(t, a)
	publishBroadcast(t, b, "early")
	if got := next(t, a1); got != "early" {
		t.Fatalf("a got %q from b, want early", got)
	}
	// Made after "early" was published (and delivered on a): they start
	// with the next broadcast, a2 joining a's subscribed channel, bSub
	// subscribing b's.
	a2, bSub := subscribeBroadcasts(t, a), subscribeBroadcasts(t, b)
	otherSub := subscribeBroadcasts(t, other)

	// Both replicas publish at once.
	const n = 20
	var wg sync.WaitGroup
	for _, p := range []struct {
		s    *redisstore.Store
		name string
	}{{a, "a"}, {b, "b"}} {
		wg.Go(func() {
			for i := range n {
				if err := p.s.PublishBroadcast(t.Context(), fmt.Appendf(nil, "%s%d", p.name, i)); err != nil {
					t.Errorf("PublishBroadcast on %s: %v", p.name, err)
				}
			}
		})
	}
	wg.Wait()
	for name, sub := range map[string]sessionstore.Subscription{"a1": a1, "a2": a2, "b": bSub} {
		seen := map[byte]int{}
		for range 2 * n {
			msg := next(t, sub)
			p, k := msg[0], -1
			fmt.Sscanf(msg[1:], "%d", &k)
			if p != 'a' && p != 'b' || k != seen[p] {
				t.Fatalf("%s got %q, want %c%d (each publisher's broadcasts in order, nothing earlier)", name, msg, p, seen[p])
			}
			seen[p]++
		}
	}
	// The other prefix heard none of that: its first message is its own.
	publishBroadcast(t, other, "other's")
	if got := next(t, otherSub); got != "other's" {
		t.Fatalf("the Store under another prefix got %q, want only its own broadcast", got)
	}
	publishBroadcast(t, a, "last")
	for name, sub := range map[string]sessionstore.Subscription{"a1": a1, "a2": a2, "b": bSub} {
		if got := next(t, sub); got != "last" {
			t.Fatalf("%s got %q, want last (not the other prefix's)", name, got)
		}
	}
	// One server subscription per Store, however many local ones.
	ch := prefix + "broadcast"
	if n := e.raw.PubSubNumSub(t.Context(), ch).Val()[ch]; n != 2 {
		t.Fatalf("%s has %d subscribers on the server, want 2 (a and b)", ch, n)
	}
	if d := a.Dropped() + b.Dropped(); d != 0 {
		t.Fatalf("Dropped = %d, want 0", d)
	}
}

// TestBroadcastFull: a subscription whose buffer (Options.BroadcastBuffer)
// is full misses the broadcast, which Dropped and BroadcastsDropped count;
// the others get it.
func TestBroadcastFull(t *testing.T) {
	const buffer = 4
	e := newEnv(t)
	s := e.store(t, redisstore.Options{BroadcastBuffer: buffer})
	slow, fast := subscribeBroadcasts(t, s), subscribeBroadcasts(t, s)
	for i := range buffer + 1 {
		msg := fmt.Sprintf("m%d", i)
		publishBroadcast(t, s, msg)
		if got := next(t, fast); got != msg {
			t.Fatalf("fast got %q, want %q", got, msg)
		}
	}
	holds(t, "the drop to be counted", func() bool { return s.Dropped() == 1 && s.BroadcastsDropped() == 1 })
	if got := buffered(t, slow, false); strings.Join(got, ",") != "m0,m1,m2,m3" {
		t.Fatalf("slow holds %v, want m0..m3", got)
	}
	publishBroadcast(t, s, "y")
	if got := next(t, slow); got != "y" {
		t.Fatalf("slow got %q after draining, want y", got)
	}
	if d := s.Dropped(); d != 1 {
		t.Fatalf("Dropped = %d, want 1", d)
	}
}

// TestBroadcastLifetime: a broadcast subscription is no session's: the
// bus's checks of its sessions and a termination frame leave it alone. It
// ends on Close, and with its Store.
func TestBroadcastLifetime(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{CheckInterval: 50 * time.Millisecond})
	pub := e.store(t, redisstore.Options{})
	sub, closing := subscribeBroadcasts(t, s), subscribeBroadcasts(t, s)

	// A session whose record vanishes shows that a check ran.
	mustCreate(t, s, "s", time.Hour)
	sessSub := subscribe(t, s, "s")
	if err := e.raw.Del(t.Context(), prefix+"session:s").Err(); err != nil {
		t.Fatal(err)
	}
	closed(t, sessSub)
	// A termination frame, or one this version does not know, on the
	// broadcast channel ends nothing and delivers nothing.
	for _, frame := range []string{"t", "?x"} {
		if err := e.raw.Publish(t.Context(), prefix+"broadcast", frame).Err(); err != nil {
			t.Fatal(err)
		}
	}
	publishBroadcast(t, pub, "still here")
	for _, sb := range []sessionstore.Subscription{sub, closing} {
		if got := next(t, sb); got != "still here" {
			t.Fatalf("got %q, want still here", got)
		}
	}

	wantErr(t, "Close", closing.Close(), nil)
	wantErr(t, "Close again", closing.Close(), nil)
	buffered(t, closing, true)
	publishBroadcast(t, pub, "after one closed")
	if got := next(t, sub); got != "after one closed" {
		t.Fatalf("got %q", got)
	}
	buffered(t, closing, true)

	wantErr(t, "Store.Close", s.Close(), nil)
	closed(t, sub)
	_, err := s.SubscribeBroadcasts(t.Context())
	wantErr(t, "SubscribeBroadcasts after Close", err, redisstore.ErrClosed)
	// Publishing needs only the client, which is still open.
	other := subscribeBroadcasts(t, pub)
	publishBroadcast(t, s, "from a closed Store")
	if got := next(t, other); got != "from a closed Store" {
		t.Fatalf("got %q", got)
	}
}

// resumes polls until sub receives a broadcast that pub sends after it
// starts: the subscription works again. It skips what sub got before.
func resumes(t *testing.T, pub *redisstore.Store, sub sessionstore.Subscription, what string) {
	t.Helper()
	holds(t, what, func() bool {
		if err := pub.PublishBroadcast(t.Context(), []byte("ping")); err != nil {
			return false
		}
		for {
			select {
			case msg, ok := <-sub.Messages():
				if !ok {
					t.Fatalf("%s: the subscription closed", what)
				}
				if string(msg) == "ping" {
					return true
				}
			case <-time.After(100 * time.Millisecond):
				return false
			}
		}
	})
}

// TestBroadcastOutages: while Redis is down, PublishBroadcast fails with
// ErrUnavailable; a restart (and a hang) ends no broadcast subscription:
// each receives again once Redis is back. (What is published while a
// Store reconnects is lost for it; after a hang the bus may reconnect more
// than once, so this polls rather than counting on any one broadcast.)
func TestBroadcastOutages(t *testing.T) {
	t.Parallel()
	awaitDialProbers(t)
	const opTimeout, interval = 300 * time.Millisecond, 100 * time.Millisecond
	srv := testutil.StartRedisServer(t)
	e := &env{addr: srv.Addr(), raw: newClient(t, srv.Addr())}
	opts := redisstore.Options{OpTimeout: opTimeout, CheckInterval: interval}
	a, b, c := e.store(t, opts), e.store(t, opts), e.store(t, opts)
	aSub, bSub := subscribeBroadcasts(t, a), subscribeBroadcasts(t, b)

	srv.Stop()
	err := a.PublishBroadcast(t.Context(), []byte("lost"))
	if !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("PublishBroadcast with Redis down: %v, want ErrUnavailable", err)
	}
	// A Store without a broadcast subscription needs Redis to make one;
	// one with a subscription adds the new one to it.
	_, err = c.SubscribeBroadcasts(t.Context())
	wantErr(t, "SubscribeBroadcasts on c with Redis down", err, redisstore.ErrUnavailable)
	joined := subscribeBroadcasts(t, a)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	resumes(t, b, aSub, "a's broadcast subscription to receive after the restart")
	resumes(t, a, bSub, "b's broadcast subscription to receive after the restart")
	resumes(t, b, joined, "the subscription joined during the outage to receive")

	// A hang: the bus finds its connection dead and replaces it.
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	holds(t, "the bus to give up on its connection", func() bool {
		return time.Since(pausedAt) > interval+2*opTimeout
	})
	if err := srv.Resume(); err != nil {
		t.Fatal(err)
	}
	resumes(t, b, aSub, "a's broadcast subscription to receive after the hang")
	resumes(t, a, bSub, "b's broadcast subscription to receive after the hang")

	resumes(t, b, joined, "the joined subscription to receive after the hang")
}
