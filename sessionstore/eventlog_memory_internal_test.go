package sessionstore

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

// Sessions whose events lapsed are freed without being looked up again:
// each StoreEvent sweeps a few, so a steady stream of stores frees them
// all, with no goroutine.
func TestMemoryEventLogLazySweep(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	l := NewMemoryEventLog(MemoryEventLogOptions{EventLogOptions: EventLogOptions{TTL: time.Minute}, Now: clk.Now})
	const n = 1000
	for i := range n {
		if _, err := l.StoreEvent(ctx, fmt.Sprint("s", i), "A", json.RawMessage("{}")); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Minute)
	live := 0 // message bytes stored for the live session
	for i := range n/sweepBudget + 1 {
		msg := fmt.Sprint(i)
		live += len(msg)
		if _, err := l.StoreEvent(ctx, "live", "A", json.RawMessage(msg)); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	sessions, total, due := len(l.sessions), l.total, l.due.Len()
	lg := l.sessions["live"]
	l.mu.Unlock()
	stores := n/sweepBudget + 1
	if want := live + stores*MemoryEventOverhead + MemoryStreamOverhead + MemorySessionOverhead; sessions != 1 || due != 1 ||
		lg == nil || lg.bytes != live || total != want {
		t.Fatalf("after the stores: %d sessions, %d due, %d bytes; want only the live session's", sessions, due, total)
	}
}

// Purged sessions leave entries in the expiry heap, compacted once they
// outnumber the live ones; a stream's queue and the session's order queue
// stay within about twice their bound however many events pass.
func TestMemoryEventLogQueuesBounded(t *testing.T) {
	l := NewMemoryEventLog(MemoryEventLogOptions{EventLogOptions: EventLogOptions{MaxStreamEvents: 100}})
	for i := range 10000 {
		id := fmt.Sprint("s", i)
		if _, err := l.StoreEvent(ctx, id, "A", json.RawMessage("{}")); err != nil {
			t.Fatal(err)
		}
		if err := l.PurgeSession(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100000 {
		if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	lg := l.sessions["s"]
	s := lg.streams.id("A")
	t.Logf("due=%d (cap %d) stream=%d (cap %d) order=%d (cap %d)", l.due.Len(), cap(l.due), s.events.len(), cap(s.events.buf), lg.order.len(), cap(lg.order.buf))
	if l.due.Len() > 2*len(l.sessions)+shrinkAbove {
		t.Fatalf("due holds %d entries for %d sessions", l.due.Len(), len(l.sessions))
	}
	if s.events.len() != 100 || cap(s.events.buf) > 4*100 {
		t.Fatalf("stream keeps %d events in an array of %d; want 100 in at most 400", s.events.len(), cap(s.events.buf))
	}
	if lg.order.len() > 2*lg.events+shrinkAbove || cap(lg.order.buf) > 4*(2*lg.events+shrinkAbove) {
		t.Fatalf("order holds %d entries in an array of %d for %d events", lg.order.len(), cap(lg.order.buf), lg.events)
	}
}
