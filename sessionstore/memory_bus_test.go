package sessionstore

import (
	"fmt"
	"testing"
	"time"
)

// The memory store's bus: per-session publish and subscribe, in order,
// bounded, by topic.

func TestBusPublishOrder(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", time.Hour)
	wantErr(t, "Publish without subscribers", m.Publish(ctx, "s", []byte("lost")), ErrNoSubscribers)
	subs := []Subscription{subscribe(t, m, "s"), subscribe(t, m, "s"), subscribe(t, m, "s")}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("m%d", i))
		wantErr(t, "Publish", m.Publish(ctx, "s", []byte(want[i])), nil)
	}
	for i, sub := range subs {
		if got := recv(t, sub, len(want), false); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("sub %d got %v, want %v", i, got, want)
		}
	}
	// Close is idempotent, and later Publishes skip the closed subscriber.
	wantErr(t, "Close", subs[0].Close(), nil)
	wantErr(t, "Close again", subs[0].Close(), nil)
	recv(t, subs[0], 0, true)
	wantErr(t, "Publish after Close", m.Publish(ctx, "s", []byte("more")), nil)
	recv(t, subs[1], 1, false)
	recv(t, subs[2], 1, false)
	wantErr(t, "Publish unknown", m.Publish(ctx, "nope", nil), ErrNotFound)
	_, err := m.Subscribe(ctx, "nope")
	wantErr(t, "Subscribe unknown", err, ErrNotFound)
}

func TestBusFull(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", time.Hour)
	slow, fast := subscribe(t, m, "s"), subscribe(t, m, "s")
	for range MemoryBusBuffer {
		wantErr(t, "Publish within buffer", m.Publish(ctx, "s", []byte("x")), nil)
		recv(t, fast, 1, false)
	}
	wantErr(t, "Publish over buffer", m.Publish(ctx, "s", []byte("over")), ErrBusFull)
	// The subscriber with room still got the message; the full one did not.
	if got := recv(t, fast, 1, false); got[0] != "over" {
		t.Fatalf("fast got %q", got[0])
	}
	recv(t, slow, MemoryBusBuffer, false)
	wantErr(t, "Publish after drain", m.Publish(ctx, "s", []byte("y")), nil)
	if got := recv(t, slow, 1, false); got[0] != "y" {
		t.Fatalf("slow got %q after draining, want y (over was dropped)", got[0])
	}
}

func TestBusTopics(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", time.Hour)
	main := subscribe(t, m, "s")
	topic, err := m.SubscribeTopic(ctx, "s", "holder-1")
	wantErr(t, "SubscribeTopic", err, nil)
	t.Cleanup(func() { topic.Close() })
	wantErr(t, "PublishTopic to a topic nobody listens to", m.PublishTopic(ctx, "s", "holder-2", []byte("lost")), ErrNoSubscribers)
	wantErr(t, "PublishTopic", m.PublishTopic(ctx, "s", "holder-1", []byte("for 1")), nil)
	wantErr(t, "Publish", m.Publish(ctx, "s", []byte("for all")), nil)
	if got := recv(t, topic, 1, false); got[0] != "for 1" {
		t.Fatalf("topic subscription got %q", got)
	}
	if got := recv(t, main, 1, false); got[0] != "for all" {
		t.Fatalf("session subscription got %q (did a topic message leak into it?)", got)
	}
	if err := m.PublishTopic(ctx, "s", "", []byte("x")); err == nil {
		t.Fatal("PublishTopic with an empty topic succeeded")
	}
	wantErr(t, "Terminate", m.Terminate(ctx, "s"), nil)
	recv(t, topic, 0, true) // termination closes topic subscriptions too
}
