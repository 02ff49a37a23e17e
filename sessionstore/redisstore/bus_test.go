package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
)

func TestBusPublishOrder(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Hour)
	// Nobody listens yet: the message reaches no one, and Publish says so.
	if err := s.Publish(context.Background(), "s", []byte("lost")); !errors.Is(err, sessionstore.ErrNoSubscribers) {
		t.Fatalf("Publish with no subscriber: err = %v, want ErrNoSubscribers", err)
	}
	subs := []sessionstore.Subscription{subscribe(t, s, "s"), subscribe(t, s, "s"), subscribe(t, s, "s")}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("m%d", i))
		publish(t, s, "s", want[i])
	}
	for i, sub := range subs {
		for _, w := range want {
			if got := next(t, sub); got != w {
				t.Fatalf("sub %d got %q, want %q (in %v)", i, got, w, want)
			}
		}
	}
	// Any bytes go through as they are.
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	wantErr(t, "Publish binary", s.Publish(t.Context(), "s", bin), nil)
	wantErr(t, "Publish empty", s.Publish(t.Context(), "s", nil), nil)
	for i, sub := range subs {
		if got := next(t, sub); !bytes.Equal([]byte(got), bin) {
			t.Fatalf("sub %d got %q, want %q", i, got, bin)
		}
		if got := next(t, sub); got != "" {
			t.Fatalf("sub %d got %q, want the empty message", i, got)
		}
	}
	// Close is idempotent, and later Publishes skip the closed subscriber.
	wantErr(t, "Close", subs[0].Close(), nil)
	wantErr(t, "Close again", subs[0].Close(), nil)
	buffered(t, subs[0], true)
	publish(t, s, "s", "more")
	for _, sub := range subs[1:] {
		if got := next(t, sub); got != "more" {
			t.Fatalf("got %q, want more", got)
		}
	}
	wantErr(t, "Publish unknown", s.Publish(t.Context(), "nope", nil), sessionstore.ErrNotFound)
	_, err := s.Subscribe(t.Context(), "nope")
	wantErr(t, "Subscribe unknown", err, sessionstore.ErrNotFound)
}

func TestBusFull(t *testing.T) {
	const buffer = 4
	e := newEnv(t)
	s := e.store(t, redisstore.Options{BusBuffer: buffer})
	mustCreate(t, s, "s", time.Hour)
	slow, fast := subscribe(t, s, "s"), subscribe(t, s, "s")
	for i := range buffer + 1 {
		msg := fmt.Sprintf("m%d", i)
		publish(t, s, "s", msg) // Publish cannot know about slow's buffer
		if got := next(t, fast); got != msg {
			t.Fatalf("fast got %q, want %q", got, msg)
		}
	}
	// The message that found slow's buffer full was dropped for it only.
	holds(t, "the drop to be counted", func() bool { return s.Dropped() == 1 })
	if got := buffered(t, slow, false); strings.Join(got, ",") != "m0,m1,m2,m3" {
		t.Fatalf("slow holds %v, want m0..m3", got)
	}
	publish(t, s, "s", "y")
	if got := next(t, slow); got != "y" {
		t.Fatalf("slow got %q after draining, want y", got)
	}
}

// TestOnePubSubConnection: each Store reads every subscription over one
// pub/sub connection, subscribing each session's channel once.
func TestOnePubSubConnection(t *testing.T) {
	e := newEnv(t)
	// A short interval makes a's dispatcher, which unsubscribes lazily,
	// look at its work often.
	a, b := e.store(t, redisstore.Options{CheckInterval: 50 * time.Millisecond}), e.store(t, redisstore.Options{})
	var aSubs [][]sessionstore.Subscription
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, a, id, time.Hour)
		aSubs = append(aSubs, []sessionstore.Subscription{subscribe(t, a, id), subscribe(t, a, id)})
		subscribe(t, b, id)
		subscribe(t, b, id)
	}
	pubsubClients := func() int {
		list, _ := e.raw.Do(t.Context(), "CLIENT", "LIST", "TYPE", "pubsub").Text()
		return strings.Count(list, "\n")
	}
	numsub := func(id string) int64 {
		return e.raw.PubSubNumSub(t.Context(), prefix+"bus:"+id).Val()[prefix+"bus:"+id]
	}
	if n := pubsubClients(); n != 2 {
		t.Fatalf("%d pub/sub connections, want 2 (one per Store)", n)
	}
	for i := range 5 {
		if n := numsub(fmt.Sprintf("s%d", i)); n != 2 {
			t.Fatalf("s%d has %d subscribers on the server, want 2", i, n)
		}
	}
	// Closing the last local subscription unsubscribes the channel.
	aSubs[0][0].Close()
	if n := numsub("s0"); n != 2 {
		t.Fatalf("s0 has %d subscribers with one local subscription left, want 2", n)
	}
	aSubs[0][1].Close()
	holds(t, "a to unsubscribe s0", func() bool { return numsub("s0") == 1 })
	// Closing a Store closes its subscriptions and its connection.
	wantErr(t, "Close", a.Close(), nil)
	wantErr(t, "Close again", a.Close(), nil)
	for _, subs := range aSubs[1:] {
		for _, sub := range subs {
			buffered(t, sub, true)
		}
	}
	holds(t, "a's pub/sub connection to close", func() bool { return pubsubClients() == 1 })
	_, err := a.Subscribe(t.Context(), "s1")
	wantErr(t, "Subscribe after Close", err, redisstore.ErrClosed)
	wantGet(t, a, "s1", nil) // the rest works while the client is open
}

func TestTerminateAcrossStores(t *testing.T) {
	e := newEnv(t)
	a, b := e.store(t, redisstore.Options{}), e.store(t, redisstore.Options{})
	mustCreate(t, a, "s", time.Hour)
	aSubs := []sessionstore.Subscription{subscribe(t, a, "s"), subscribe(t, a, "s")}
	bSub := subscribe(t, b, "s")
	publish(t, a, "s", "m1")
	wantErr(t, "Terminate on b", b.Terminate(t.Context(), "s"), nil)
	if got := buffered(t, bSub, true); len(got) != 1 || got[0] != "m1" {
		t.Fatalf("b's subscription got %v before closing, want [m1]", got)
	}
	for i, sub := range aSubs {
		if got := next(t, sub); got != "m1" {
			t.Fatalf("a's sub %d got %q, want m1", i, got)
		}
		closed(t, sub)
	}
	wantGet(t, a, "s", sessionstore.ErrTerminated)
}

// TestSharedSession: what one Store writes, another on the same Redis reads.
func TestSharedSession(t *testing.T) {
	e := newEnv(t)
	a, b := e.store(t, redisstore.Options{}), e.store(t, redisstore.Options{})
	rec := sessionstore.Record{ID: "s", ProtocolVersion: "v1", ClientInfo: []byte(`{"name":"c"}`)}
	wantErr(t, "Create on a", a.Create(t.Context(), rec, time.Minute), nil)
	ra, rb := wantGet(t, a, "s", nil), wantGet(t, b, "s", nil)
	if fmt.Sprint(ra) != fmt.Sprint(rb) {
		t.Fatalf("a reads %+v, b reads %+v", ra, rb)
	}
	wantErr(t, "Create on b", b.Create(t.Context(), rec, time.Minute), sessionstore.ErrExists)
	wantErr(t, "Update on b", b.Update(t.Context(), sessionstore.Record{ID: "s", ProtocolVersion: "v2", ClientInfo: []byte("x")}), nil)
	if got := wantGet(t, a, "s", nil); got.ProtocolVersion != "v2" || string(got.ClientInfo) != "x" {
		t.Fatalf("a reads %+v after b's Update", got)
	}
	wantErr(t, "Touch on a", a.Touch(t.Context(), "s", time.Hour), nil)
	if got := wantGet(t, b, "s", nil); got.ExpiresAt.Before(time.Now().Add(59 * time.Minute)) {
		t.Fatalf("b reads ExpiresAt %v after a's Touch", got.ExpiresAt)
	}
	lb := acquire(t, b, "s", "replica-b", time.Minute, nil)
	wantHolder(t, a, "s", "replica-b")
	acquire(t, a, "s", "replica-a", time.Minute, sessionstore.ErrStreamHeld)
	sub := subscribe(t, b, "s")
	publish(t, a, "s", "for b")
	if got := next(t, sub); got != "for b" {
		t.Fatalf("b got %q", got)
	}
	wantCount(t, a, 1)
	wantCount(t, b, 1)
	wantErr(t, "Release on a", a.ReleaseStream(t.Context(), lb), nil) // the lease names its holder, not a Store
	wantHolder(t, b, "s", "")
	wantErr(t, "Terminate on a", a.Terminate(t.Context(), "s"), nil)
	closed(t, sub)
	wantGet(t, b, "s", sessionstore.ErrTerminated)
}

// TestSubscribeChurn races subscriptions to one session opening and
// closing against Publish; afterwards a subscription works.
func TestSubscribeChurn(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 30 {
				sub, err := s.Subscribe(t.Context(), "s")
				if err != nil {
					t.Errorf("Subscribe: %v", err)
					return
				}
				if err := s.Publish(t.Context(), "s", []byte("x")); err != nil {
					t.Errorf("Publish: %v", err)
				}
				// Our own message reaches us: the subscription was in place.
				select {
				case <-sub.Messages():
				case <-time.After(wait):
					t.Errorf("no message within %v", wait)
				}
				sub.Close()
			}
		})
	}
	wg.Wait()
	sub := subscribe(t, s, "s")
	publish(t, s, "s", "after")
	for {
		if got := next(t, sub); got == "after" {
			break
		}
	}
}

func TestCanceledContext(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Hour)
	_, err := s.Get(canceled(), "s")
	wantErr(t, "Get with a canceled context", err, context.Canceled)
	if errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("a canceled caller is not an outage: %v", err)
	}
	_, err = s.Subscribe(canceled(), "s")
	wantErr(t, "Subscribe with a canceled context", err, context.Canceled)
}

func TestBusTopics(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{CheckInterval: 100 * time.Millisecond})
	mustCreate(t, s, "s", time.Hour)
	main := subscribe(t, s, "s")
	topic, err := s.SubscribeTopic(t.Context(), "s", "holder-1")
	wantErr(t, "SubscribeTopic", err, nil)
	t.Cleanup(func() { topic.Close() })
	if err := s.PublishTopic(t.Context(), "s", "holder-2", []byte("lost")); !errors.Is(err, sessionstore.ErrNoSubscribers) {
		t.Fatalf("PublishTopic to a topic nobody listens to: err = %v, want ErrNoSubscribers", err)
	}
	wantErr(t, "PublishTopic", s.PublishTopic(t.Context(), "s", "holder-1", []byte("for 1")), nil)
	publish(t, s, "s", "for all")
	if got := next(t, topic); got != "for 1" {
		t.Fatalf("topic subscription got %q", got)
	}
	if got := next(t, main); got != "for all" {
		t.Fatalf("session subscription got %q (did a topic message leak into it?)", got)
	}
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	closed(t, main)
	closed(t, topic) // at the bus's next check at the latest
}
