package sessionstore

import (
	"fmt"
	"sync"
	"testing"
)

func subscribeBroadcasts(t *testing.T, m *Memory) Subscription {
	t.Helper()
	sub, err := m.SubscribeBroadcasts(ctx)
	wantErr(t, "SubscribeBroadcasts", err, nil)
	t.Cleanup(func() { sub.Close() })
	return sub
}

func publishBroadcast(t *testing.T, m *Memory, msg string) {
	t.Helper()
	wantErr(t, fmt.Sprintf("PublishBroadcast(%q)", msg), m.PublishBroadcast(ctx, []byte(msg)), nil)
}

// TestBroadcastOrder: every subscription gets every later broadcast, in
// order, each publisher's in its order; a subscription made after a
// broadcast does not get it; Close ends Messages.
func TestBroadcastOrder(t *testing.T) {
	m, _ := newStore()
	publishBroadcast(t, m, "nobody listens") // not an error
	early := subscribeBroadcasts(t, m)
	publishBroadcast(t, m, "before")
	subs := []Subscription{early, subscribeBroadcasts(t, m), subscribeBroadcasts(t, m)}
	if got := recv(t, early, 1, false); got[0] != "before" {
		t.Fatalf("early got %q, want before", got[0])
	}
	// Two publishers at once: each one's messages keep their order.
	const n = 50
	var wg sync.WaitGroup
	for _, p := range []string{"a", "b"} {
		wg.Go(func() {
			for i := range n {
				if err := m.PublishBroadcast(ctx, fmt.Appendf(nil, "%s%d", p, i)); err != nil {
					t.Errorf("PublishBroadcast: %v", err)
				}
			}
		})
	}
	wg.Wait()
	for i, sub := range subs {
		// The later subscriptions start with the concurrent broadcasts:
		// "before" was published before they existed.
		next := map[byte]int{}
		for _, msg := range recv(t, sub, 2*n, false) {
			p, k := msg[0], -1
			fmt.Sscanf(msg[1:], "%d", &k)
			if p != 'a' && p != 'b' || k != next[p] {
				t.Fatalf("sub %d got %q, want %c%d", i, msg, p, next[p])
			}
			next[p]++
		}
	}
	// The publisher may reuse its buffer: subscribers hold a copy.
	buf := []byte("kept")
	wantErr(t, "PublishBroadcast", m.PublishBroadcast(ctx, buf), nil)
	copy(buf, "XXXX")
	for i, sub := range subs {
		if got := recv(t, sub, 1, false); got[0] != "kept" {
			t.Fatalf("sub %d got %q, want kept", i, got[0])
		}
	}
	wantErr(t, "Close", subs[0].Close(), nil)
	wantErr(t, "Close again", subs[0].Close(), nil)
	recv(t, subs[0], 0, true)
	publishBroadcast(t, m, "after close")
	recv(t, subs[0], 0, true)
	for _, sub := range subs[1:] {
		recv(t, sub, 1, false)
	}
	if d := m.Dropped(); d != 0 {
		t.Fatalf("Dropped = %d, want 0", d)
	}
}

// TestBroadcastFull: a subscription whose buffer (MemoryBusBuffer) is
// full misses the broadcast, which is counted; the others get it, and
// PublishBroadcast does not fail.
func TestBroadcastFull(t *testing.T) {
	m, _ := newStore()
	slow, fast := subscribeBroadcasts(t, m), subscribeBroadcasts(t, m)
	for i := range MemoryBusBuffer {
		publishBroadcast(t, m, fmt.Sprint(i))
		recv(t, fast, 1, false)
	}
	publishBroadcast(t, m, "over")
	if got := recv(t, fast, 1, false); got[0] != "over" {
		t.Fatalf("fast got %q, want over", got[0])
	}
	if d := m.Dropped(); d != 1 {
		t.Fatalf("Dropped = %d, want 1", d)
	}
	recv(t, slow, MemoryBusBuffer, false)
	publishBroadcast(t, m, "y")
	if got := recv(t, slow, 1, false); got[0] != "y" {
		t.Fatalf("slow got %q after draining, want y (over was dropped)", got[0])
	}
}

// TestBroadcastIndependentOfSessions: broadcasts are not a session's bus,
// and ending sessions does not end broadcast subscriptions.
func TestBroadcastIndependentOfSessions(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", 0)
	sess := subscribe(t, m, "s")
	bc := subscribeBroadcasts(t, m)
	publishBroadcast(t, m, "all")
	recv(t, sess, 0, false)
	wantErr(t, "Terminate", m.Terminate(ctx, "s"), nil)
	recv(t, sess, 0, true)
	if got := recv(t, bc, 1, false); got[0] != "all" {
		t.Fatalf("got %q, want all", got[0])
	}
	publishBroadcast(t, m, "still")
	recv(t, bc, 1, false)
}
