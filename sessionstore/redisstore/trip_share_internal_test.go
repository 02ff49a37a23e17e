package redisstore

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// A store whose caller gave up (its context ended) while it waited for its
// batch is not sent: the caller was answered with an error, and the event
// must not land after the caller's next one. The batch's other stores go
// out.
func TestEventStoreGivenUpBeforeItsBatchIsNotSent(t *testing.T) {
	t.Parallel()
	p := newPausedStore(t, "giveup:", 10*time.Second)
	ctx := t.Context()
	alone := p.takeSlot(t, "other", "A", json.RawMessage("1"))

	gaveUp := make(chan error, 1)
	gctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := p.l.StoreEvent(gctx, "s", "P", json.RawMessage(`"given up"`))
		gaveUp <- err
	}()
	testutil.Eventually(t, 5*time.Second, "the store joined the batch", func() bool { return p.forming() == 1 })
	kept := make(chan error, 1)
	go func() {
		_, err := p.l.StoreEvent(ctx, "s", "Q", json.RawMessage(`"kept"`))
		kept <- err
	}()
	testutil.Eventually(t, 5*time.Second, "the second store joined the batch", func() bool { return p.forming() == 2 })
	cancel()
	if err := wait(t, gaveUp, "the store given up"); err == nil {
		t.Fatal("a store whose context ended while Redis was stopped answered no error")
	}
	p.resume()
	if err := wait(t, alone, "the store that took the slot"); err != nil {
		t.Fatal(err)
	}
	if err := wait(t, kept, "the batch's other store"); err != nil {
		t.Fatal(err)
	}
	// P holds only what the caller stored once it was back.
	next, err := p.l.StoreEvent(ctx, "s", "P", json.RawMessage(`"next"`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := p.l.ReplayEventsAfter(ctx, "s", next, func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	}); err != nil || len(got) != 0 {
		t.Fatalf("replay after the caller's next event: %q, %v; want nothing after it", got, err)
	}
	_, num, _, _ := parseEventID(next)
	n, err := p.c.LLen(ctx, p.l.base("s")+":"+num).Result()
	if err != nil || n != 1 {
		t.Fatalf("stream P holds %d events (%v); want 1, the given-up store not sent", n, err)
	}
}

// Once the Store is closed no batch goroutine starts: a store that finds
// the slot taken waits for it, and returns when its context ends.
func TestEventStoreOnAClosedStoreReturnsWithItsContext(t *testing.T) {
	t.Parallel()
	p := newPausedStore(t, "closed:", 10*time.Second)
	alone := p.takeSlot(t, "other", "A", json.RawMessage("1"))
	closed := make(chan error, 1)
	go func() { closed <- p.s.Close() }()
	testutil.Eventually(t, 5*time.Second, "the Store closed", func() bool {
		p.s.evals.mu.Lock()
		defer p.s.evals.mu.Unlock()
		return p.s.evals.closed
	})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.l.StoreEvent(ctx, "s", "P", json.RawMessage("2"))
	took := time.Since(start)
	p.resume()
	wait(t, alone, "the store that took the slot")
	wait(t, closed, "Close")
	if err == nil || took > 2*time.Second {
		t.Fatalf("a store on a closed Store with the slot taken returned after %v with %v; want its context's error at once (OpTimeout 10 s)", took, err)
	}
	id, err := p.l.StoreEvent(t.Context(), "s", "P", json.RawMessage("3"))
	if err != nil {
		t.Fatalf("a store on a closed Store, Redis answering: %v", err)
	}
	// The store that returned with its context was never sent.
	_, num, _, _ := parseEventID(id)
	if n, err := p.c.LLen(t.Context(), p.l.base("s")+":"+num).Result(); err != nil || n != 1 {
		t.Fatalf("stream P holds %d events (%v); want 1, the store that returned with its context not sent", n, err)
	}
}

// A batch holds at most maxScriptBatch stores: the next store made while
// the slot is taken starts a batch of its own, and every store of both
// goes out once the slot frees.
func TestEventStoreBatchIsBounded(t *testing.T) {
	t.Parallel()
	p := newPausedStore(t, "bound:", 10*time.Second)
	alone := p.takeSlot(t, "other", "A", json.RawMessage("1"))
	errs := make(chan error, maxScriptBatch+1)
	for i := range maxScriptBatch + 1 {
		go func() {
			_, err := p.l.StoreEvent(t.Context(), "s", "P"+strconv.Itoa(i), json.RawMessage("2"))
			errs <- err
		}()
		want := i%maxScriptBatch + 1 // the last one starts a second batch
		testutil.Eventually(t, 5*time.Second, "the store joined a batch", func() bool { return p.forming() == want })
	}
	p.resume()
	if err := wait(t, alone, "the store that took the slot"); err != nil {
		t.Fatal(err)
	}
	for range maxScriptBatch + 1 {
		if err := wait(t, errs, "a batched store"); err != nil {
			t.Fatal(err)
		}
	}
}
