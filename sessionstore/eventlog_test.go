package sessionstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/eventlogtest"
)

// An EventLog is an mcp-go EventStore and the other way round: the method
// sets are the same.
var (
	_ server.EventStore     = sessionstore.EventLog(nil)
	_ sessionstore.EventLog = server.EventStore(nil)
	_ server.EventStore     = (*sessionstore.MemoryEventLog)(nil)
	_ sessionstore.EventLog = (*server.InMemoryEventStore)(nil)
)

// clock is an injectable now func whose time moves only on Advance.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestMemoryEventLogConformance(t *testing.T) {
	eventlogtest.Run(t, eventlogtest.Harness{
		ExpiryTTL: time.Minute,
		New: func(t *testing.T, opts sessionstore.EventLogOptions) eventlogtest.Instance {
			clk := newClock()
			log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{EventLogOptions: opts, Now: clk.Now})
			return eventlogtest.Instance{
				Log: log,
				Expire: func(t *testing.T, lapsed func() bool) {
					t.Helper()
					clk.Advance(opts.TTL - time.Nanosecond)
					if lapsed() {
						t.Fatalf("events lapsed before their TTL %v", opts.TTL)
					}
					clk.Advance(time.Nanosecond)
					if !lapsed() {
						t.Fatalf("events kept at their TTL %v", opts.TTL)
					}
				},
			}
		},
	})
}

// The TTL runs from the session's last StoreEvent, whatever its stream.
func TestMemoryEventLogTTLRefreshedByStore(t *testing.T) {
	clk := newClock()
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{
		EventLogOptions: sessionstore.EventLogOptions{TTL: time.Minute}, Now: clk.Now,
	})
	ctx := t.Context()
	a, _ := log.StoreEvent(ctx, "s", "A", json.RawMessage("1"))
	clk.Advance(50 * time.Second)
	b, _ := log.StoreEvent(ctx, "s", "B", json.RawMessage("2"))
	clk.Advance(50 * time.Second) // 100 s after a, 50 s after b
	for _, id := range []string{a, b} {
		if _, err := log.ReplayEventsAfter(ctx, "s", id, nopSend); err != nil {
			t.Fatalf("replay after %s, within the TTL of the last store: %v", id, err)
		}
	}
	clk.Advance(10 * time.Second)
	if _, err := log.ReplayEventsAfter(ctx, "s", a, nopSend); !errors.Is(err, sessionstore.ErrUnknownEventID) {
		t.Fatalf("replay a minute after the last store: err = %v, want ErrUnknownEventID", err)
	}
}

func nopSend(string, json.RawMessage) error { return nil }

// MaxTotalBytes bounds all sessions together, overheads included: past
// it StoreEvent refuses, and a purge makes room again.
func TestMemoryEventLogTotalBound(t *testing.T) {
	const size = 25
	perSession := size + sessionstore.MemoryEventOverhead + sessionstore.MemoryStreamOverhead + sessionstore.MemorySessionOverhead
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{MaxTotalBytes: 4 * perSession})
	ctx := t.Context()
	msg := json.RawMessage(strings.Repeat("x", size))
	for i := range 4 {
		if _, err := log.StoreEvent(ctx, fmt.Sprint("s", i), "A", msg); err != nil {
			t.Fatalf("StoreEvent %d, within the bound: %v", i, err)
		}
	}
	for _, stream := range []string{"A", "B"} { // a new event, a new stream
		if _, err := log.StoreEvent(ctx, "s0", stream, json.RawMessage("")); !errors.Is(err, sessionstore.ErrEventLogFull) {
			t.Fatalf("StoreEvent of an empty event on %s past MaxTotalBytes: err = %v, want ErrEventLogFull", stream, err)
		}
	}
	if _, err := log.StoreEvent(ctx, "s4", "A", msg); !errors.Is(err, sessionstore.ErrEventLogFull) {
		t.Fatalf("StoreEvent for a new session past MaxTotalBytes: err = %v, want ErrEventLogFull", err)
	}
	if err := log.PurgeSession(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.StoreEvent(ctx, "s4", "A", msg); err != nil {
		t.Fatalf("StoreEvent after a purge made room: %v", err)
	}
}

// The overheads MemoryEventLog counts toward MaxTotalBytes are at least
// what it keeps on the heap per session, per stream and per event (empty
// messages, so only the log's own structures count).
func TestMemoryEventLogOverheads(t *testing.T) {
	const n = 5000
	ctx := t.Context()
	measure := func(what string, store func(log *sessionstore.MemoryEventLog, i int)) float64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{
			EventLogOptions: sessionstore.EventLogOptions{MaxStreamEvents: n}, // keep all n
		})
		for i := range n {
			store(log, i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(log)
		per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
		t.Logf("%s: %.0f heap bytes each", what, per)
		return per
	}
	must := func(_ string, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ev := measure("event", func(log *sessionstore.MemoryEventLog, i int) {
		must(log.StoreEvent(ctx, "s", "A", nil))
	})
	st := measure("stream with an event", func(log *sessionstore.MemoryEventLog, i int) {
		must(log.StoreEvent(ctx, "s", fmt.Sprintf("%036d", i), nil))
	})
	se := measure("session with a stream and an event", func(log *sessionstore.MemoryEventLog, i int) {
		must(log.StoreEvent(ctx, fmt.Sprintf("%036d", i), fmt.Sprintf("%036d", i), nil))
	})
	if ev > sessionstore.MemoryEventOverhead || st > sessionstore.MemoryStreamOverhead+sessionstore.MemoryEventOverhead ||
		se > sessionstore.MemorySessionOverhead+sessionstore.MemoryStreamOverhead+sessionstore.MemoryEventOverhead {
		t.Fatalf("measured %.0f per event, %.0f per stream, %.0f per session (each with what it holds); counted %d, %d, %d",
			ev, st, se, sessionstore.MemoryEventOverhead, sessionstore.MemoryStreamOverhead, sessionstore.MemorySessionOverhead)
	}
}

// BenchmarkStoreEvent stores events of 200 bytes on ten streams of each of
// 100 sessions and reports the heap each stored event keeps (the 200
// bytes included), measured after a GC; mcp-go's unbounded
// InMemoryEventStore is measured alongside for comparison.
func BenchmarkStoreEvent(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		benchStore(b, sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{MaxTotalBytes: 1 << 30}))
	})
	b.Run("mcp-go-inmemory", func(b *testing.B) {
		benchStore(b, server.NewInMemoryEventStore())
	})
}

func benchStore(b *testing.B, log sessionstore.EventLog) {
	msg := json.RawMessage(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"abc","progress":1,"total":10,"message":"` + strings.Repeat("p", 200-97) + `"}}`)
	ids := benchIDs()
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := log.StoreEvent(b.Context(), ids[i%len(ids)].session, ids[i%len(ids)].stream, msg); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	kept := min(b.N, 100*sessionstore.DefaultMaxSessionEvents) // what the bounded log keeps
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(kept), "heap-B/event")
	runtime.KeepAlive(log)
}

type benchID struct{ session, stream string }

// benchIDs are 100 sessions of 10 streams, interleaved.
func benchIDs() []benchID {
	var ids []benchID
	for st := range 10 {
		for s := range 100 {
			ids = append(ids, benchID{fmt.Sprintf("session-%03d", s), fmt.Sprintf("stream-%02d-00000000-0000-0000-0000", st)})
		}
	}
	return ids
}
