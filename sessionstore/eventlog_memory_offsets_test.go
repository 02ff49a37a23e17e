package sessionstore

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// The memory log keeps its expiries as offsets from a base (8 bytes where a
// time.Time takes 24). These tests hold it to what absolute times gave.

// replayCount replays after id and returns how many events came, failing
// the test on an error.
func replayCount(t *testing.T, l *MemoryEventLog, session, id string) int {
	t.Helper()
	n := 0
	if _, err := l.ReplayEventsAfter(context.Background(), session, id, func(string, json.RawMessage) error { n++; return nil }); err != nil {
		t.Fatalf("replay after %s: %v", id, err)
	}
	return n
}

// A TTL meant as "never" keeps a session's events once the clock moved past
// the log's base: its expiry saturates instead of wrapping into the past.
func TestMemoryEventLogNeverExpiringTTL(t *testing.T) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	l := NewMemoryEventLog(MemoryEventLogOptions{Now: clk.Now, EventLogOptions: EventLogOptions{TTL: math.MaxInt64}})
	ctx := context.Background()
	first, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Nanosecond)
	if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(100 * 365 * 24 * time.Hour)
	l.Sweep()
	if n := replayCount(t, l, "s", first); n != 1 {
		t.Fatalf("a century later: %d events replayed, want 1", n)
	}
}

// An injected clock read at construction while still unset (its zero
// time) and set afterwards: the offsets start at the first event, not at
// construction, so the events keep their TTL.
func TestMemoryEventLogClockSetAfterConstruction(t *testing.T) {
	clk := &fakeClock{}
	l := NewMemoryEventLog(MemoryEventLogOptions{Now: clk.Now, EventLogOptions: EventLogOptions{TTL: time.Minute}})
	clk.Advance(time.Since(time.Time{})) // set to about now
	ctx := context.Background()
	first, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatal(err)
	}
	if n := replayCount(t, l, "s", first); n != 1 {
		t.Fatalf("at once: %d events replayed, want 1", n)
	}
	clk.Advance(time.Minute - time.Nanosecond)
	if n := replayCount(t, l, "s", first); n != 1 {
		t.Fatalf("just before the TTL: %d events replayed, want 1", n)
	}
	clk.Advance(time.Nanosecond)
	l.Sweep()
	if _, err := l.ReplayEventsAfter(ctx, "s", first, func(string, json.RawMessage) error { return nil }); err == nil {
		t.Fatal("a replay after the TTL found the lapsed log")
	}
}
