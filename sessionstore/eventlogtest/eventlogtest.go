// Package eventlogtest checks that an implementation of
// sessionstore.EventLog keeps its contract. It speaks to the log through
// the interface only, so every implementation passes the same tests.
package eventlogtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Instance is one log under test, made by Harness.New.
type Instance struct {
	// Log is the log under test.
	Log sessionstore.EventLog
	// Peer is a second log on the same storage (another replica's), or
	// nil when the implementation has no such thing.
	Peer sessionstore.EventLog
	// Expire makes time pass until lapsed reports true, failing the test
	// if it does not within the TTL and a bounded margin: a log with an
	// injected clock advances it past the TTL, one on a real clock polls.
	Expire func(t *testing.T, lapsed func() bool)
}

// Harness makes logs for Run.
type Harness struct {
	// New returns a new, empty log with opts, cleaned up with t.
	New func(t *testing.T, opts sessionstore.EventLogOptions) Instance
	// ExpiryTTL is the TTL the expiry test gives New: short for a log on
	// a real clock.
	ExpiryTTL time.Duration
}

// Run runs every conformance test against h, each as a subtest, and the
// tests of sessionstore.EventBatchLog and sessionstore.EventStreamLog when
// h's logs implement them.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		f    func(*testing.T, Harness)
	}{
		{"OrderAndExactlyOnce", testOrder},
		{"IDs", testIDs},
		{"UnknownIDs", testUnknown},
		{"OtherSession", testOtherSession},
		{"StreamEventBound", testStreamEvents},
		{"StreamByteBound", testStreamBytes},
		{"EmptyEventsBound", testEmptyEvents},
		{"SessionEventBound", testSessionEvents},
		{"SessionByteBound", testSessionBytes},
		{"TooLarge", testTooLarge},
		{"Purge", testPurge},
		{"Expiry", testExpiry},
		{"SendError", testSendError},
		{"Peer", testPeer},
		{"ConcurrentStore", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
	}
	// A log that records batches keeps what one StoreEvent at a time would.
	probe := h.New(t, sessionstore.EventLogOptions{}).Log
	if _, ok := probe.(sessionstore.EventBatchLog); ok {
		for _, tc := range batchTests {
			t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
		}
	}
	// A log that records whole streams replays them by their positional ids.
	if _, ok := probe.(sessionstore.EventStreamLog); ok {
		for _, tc := range streamTests {
			t.Run(tc.name, func(t *testing.T) { tc.f(t, h) })
		}
	}
}

// event is one replayed event.
type event struct{ id, msg string }

func store(t *testing.T, log sessionstore.EventLog, session, stream, msg string) string {
	t.Helper()
	id, err := log.StoreEvent(t.Context(), session, stream, json.RawMessage(msg))
	if err != nil {
		t.Fatalf("StoreEvent(%s, %s, %q): %v", session, stream, msg, err)
	}
	return id
}

// replay returns what ReplayEventsAfter sends and its stream and error.
func replay(t *testing.T, log sessionstore.EventLog, session, after string) ([]event, string, error) {
	t.Helper()
	var got []event
	stream, err := log.ReplayEventsAfter(t.Context(), session, after, func(id string, msg json.RawMessage) error {
		got = append(got, event{id, string(msg)})
		return nil
	})
	return got, stream, err
}

// wantReplay checks that replaying after `after` sends want on stream.
func wantReplay(t *testing.T, log sessionstore.EventLog, session, after, stream string, want ...event) {
	t.Helper()
	got, gotStream, err := replay(t, log, session, after)
	if err != nil {
		t.Fatalf("ReplayEventsAfter(%s, %q): %v", session, after, err)
	}
	if gotStream != stream || !slices.Equal(got, want) {
		t.Fatalf("ReplayEventsAfter(%s, %q) = stream %q, %v; want stream %q, %v", session, after, gotStream, got, stream, want)
	}
}

// wantUnknown checks that replaying after `after` wraps ErrUnknownEventID
// and sends nothing.
func wantUnknown(t *testing.T, log sessionstore.EventLog, session, after string) {
	t.Helper()
	got, _, err := replay(t, log, session, after)
	if !errors.Is(err, sessionstore.ErrUnknownEventID) || len(got) > 0 {
		t.Fatalf("ReplayEventsAfter(%s, %q) sent %v, err = %v; want nothing and ErrUnknownEventID", session, after, got, err)
	}
}

func msgs(n int, size int) []string {
	out := make([]string, n)
	for i := range out {
		s := fmt.Sprintf(`"%d"`, i)
		out[i] = s + strings.Repeat(" ", max(0, size-len(s)))
	}
	return out
}

// Events of two streams interleaved: a replay sends the events of the
// id's stream after it, in order, once each, and names the stream.
func testOrder(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	var a, b []event
	for i := range 5 {
		m := fmt.Sprintf(`{"a":%d}`, i)
		a = append(a, event{store(t, log, "s", "A", m), m})
		m = fmt.Sprintf(`{"b":%d}`, i)
		b = append(b, event{store(t, log, "s", "B", m), m})
	}
	for i := range a {
		wantReplay(t, log, "s", a[i].id, "A", a[i+1:]...)
		wantReplay(t, log, "s", b[i].id, "B", b[i+1:]...)
	}
	// A priming event (empty data) is an event like any other.
	p := store(t, log, "s", "C", "")
	wantReplay(t, log, "s", p, "C")
	m := store(t, log, "s", "C", `{"c":1}`)
	wantReplay(t, log, "s", p, "C", event{m, `{"c":1}`})
}

// Ids are non-empty, without CR or LF, and unique within the session
// across its streams.
func testIDs(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	seen := map[string]bool{}
	for i := range 30 {
		stream := fmt.Sprintf("stream-%d", i%3)
		id := store(t, log, "s", stream, "{}")
		if id == "" || strings.ContainsAny(id, "\r\n") || seen[id] {
			t.Fatalf("StoreEvent gave id %q (seen before: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

func testUnknown(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	id := store(t, log, "s", "A", "{}")
	for _, bad := range []string{"", "x", "1", "1-1", "1-1-1-1", "-1-1", "99-1-1", id + "0", "0" + id, " " + id} {
		if bad != id {
			wantUnknown(t, log, "s", bad)
		}
	}
	wantUnknown(t, log, "never", id)
	wantReplay(t, log, "s", id, "A")
}

// An id issued to one session is unknown to every other, even where both
// sessions have the same streams and the same number of events.
func testOtherSession(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	a1 := store(t, log, "a", "S", `"a1"`)
	b1 := store(t, log, "b", "S", `"b1"`)
	store(t, log, "a", "S", `"a2"`)
	store(t, log, "b", "S", `"b2"`)
	wantUnknown(t, log, "b", a1)
	wantUnknown(t, log, "a", b1)
}

func testStreamEvents(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{MaxStreamEvents: 3}).Log
	other := store(t, log, "s", "B", `"b"`)
	var ids []string
	for _, m := range msgs(5, 0) {
		ids = append(ids, store(t, log, "s", "A", m))
	}
	// Five stored, three kept: the two oldest are gone, the last three
	// replay from the oldest kept.
	wantUnknown(t, log, "s", ids[0])
	wantUnknown(t, log, "s", ids[1])
	wantReplay(t, log, "s", ids[2], "A", event{ids[3], `"3"`}, event{ids[4], `"4"`})
	// The bound is per stream: B's event stays.
	wantReplay(t, log, "s", other, "B")
}

// Empty events (priming) count toward the event bounds like any other.
func testEmptyEvents(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{MaxStreamEvents: 2, MaxSessionEvents: 3}).Log
	a0 := store(t, log, "s", "A", "")
	a1 := store(t, log, "s", "A", "")
	a2 := store(t, log, "s", "A", "")
	wantUnknown(t, log, "s", a0)
	wantReplay(t, log, "s", a1, "A", event{a2, ""})
	b0 := store(t, log, "s", "B", "")
	b1 := store(t, log, "s", "B", "")
	wantUnknown(t, log, "s", a1)
	wantReplay(t, log, "s", b0, "B", event{b1, ""})
	wantReplay(t, log, "s", a2, "A")
}

func testStreamBytes(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{MaxStreamBytes: 30}).Log
	m := msgs(4, 10)
	var ids []string
	for _, msg := range m[:3] {
		ids = append(ids, store(t, log, "s", "A", msg))
	}
	// 30 bytes: all three kept, at the bound.
	wantReplay(t, log, "s", ids[0], "A", event{ids[1], m[1]}, event{ids[2], m[2]})
	ids = append(ids, store(t, log, "s", "A", m[3]))
	wantUnknown(t, log, "s", ids[0])
	wantReplay(t, log, "s", ids[1], "A", event{ids[2], m[2]}, event{ids[3], m[3]})
	// A large event drops as many as it needs to.
	big := strings.Repeat("x", 20)
	bigID := store(t, log, "s", "A", big)
	wantUnknown(t, log, "s", ids[2])
	wantReplay(t, log, "s", ids[3], "A", event{bigID, big})
}

func testSessionEvents(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{MaxSessionEvents: 4}).Log
	a0 := store(t, log, "s", "A", `"a0"`)
	b0 := store(t, log, "s", "B", `"b0"`)
	a1 := store(t, log, "s", "A", `"a1"`)
	b1 := store(t, log, "s", "B", `"b1"`)
	other := store(t, log, "t", "A", `"t"`) // another session's bound
	wantReplay(t, log, "s", a0, "A", event{a1, `"a1"`})
	// The fifth event drops the session's oldest, a0, whatever the stream.
	c0 := store(t, log, "s", "C", `"c0"`)
	wantUnknown(t, log, "s", a0)
	wantReplay(t, log, "s", b0, "B", event{b1, `"b1"`})
	// Then b0; a stream left empty is gone, its ids unknown.
	c1 := store(t, log, "s", "C", `"c1"`)
	wantUnknown(t, log, "s", b0)
	c2 := store(t, log, "s", "C", `"c2"`)
	c3 := store(t, log, "s", "C", `"c3"`)
	wantUnknown(t, log, "s", a1)
	wantUnknown(t, log, "s", b1)
	wantReplay(t, log, "s", c0, "C", event{c1, `"c1"`}, event{c2, `"c2"`}, event{c3, `"c3"`})
	wantReplay(t, log, "t", other, "A")
}

func testSessionBytes(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{MaxSessionBytes: 40}).Log
	m := msgs(5, 10)
	a0 := store(t, log, "s", "A", m[0])
	b0 := store(t, log, "s", "B", m[1])
	a1 := store(t, log, "s", "A", m[2])
	b1 := store(t, log, "s", "B", m[3])
	// 40 bytes: all kept, at the bound.
	wantReplay(t, log, "s", a0, "A", event{a1, m[2]})
	c0 := store(t, log, "s", "C", m[4])
	wantUnknown(t, log, "s", a0)
	wantReplay(t, log, "s", b0, "B", event{b1, m[3]})
	// One event of 30 bytes drops the three oldest (b0, a1, b1).
	big := strings.Repeat("y", 30)
	c1 := store(t, log, "s", "C", big)
	wantUnknown(t, log, "s", b0)
	wantUnknown(t, log, "s", a1)
	wantUnknown(t, log, "s", b1)
	wantReplay(t, log, "s", c0, "C", event{c1, big})
}

// A message larger than a byte bound, the stream's or the session's, is
// refused, and the log goes on.
func testTooLarge(t *testing.T, h Harness) {
	for _, opts := range []sessionstore.EventLogOptions{{MaxStreamBytes: 16}, {MaxSessionBytes: 16}} {
		log := h.New(t, opts).Log
		a := store(t, log, "s", "A", `"a"`)
		_, err := log.StoreEvent(t.Context(), "s", "A", json.RawMessage(strings.Repeat("z", 17)))
		if !errors.Is(err, sessionstore.ErrEventTooLarge) {
			t.Fatalf("StoreEvent of 17 bytes with %+v: err = %v, want ErrEventTooLarge", opts, err)
		}
		b := store(t, log, "s", "A", strings.Repeat("z", 13))
		wantReplay(t, log, "s", a, "A", event{b, strings.Repeat("z", 13)})
	}
}

func testPurge(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	a1 := store(t, log, "a", "S", "1")
	a2 := store(t, log, "a", "T", "2")
	b1 := store(t, log, "b", "S", "1")
	if err := log.PurgeSession(t.Context(), "a"); err != nil {
		t.Fatalf("PurgeSession: %v", err)
	}
	wantUnknown(t, log, "a", a1)
	wantUnknown(t, log, "a", a2)
	wantReplay(t, log, "b", b1, "S")
	if err := log.PurgeSession(t.Context(), "never"); err != nil {
		t.Fatalf("PurgeSession of an unknown session: %v", err)
	}
	// The session may log again; its old ids stay unknown.
	n1 := store(t, log, "a", "S", "3")
	n2 := store(t, log, "a", "S", "4")
	wantUnknown(t, log, "a", a1)
	wantReplay(t, log, "a", n1, "S", event{n2, "4"})
}

// A session's events lapse TTL after its last StoreEvent.
func testExpiry(t *testing.T, h Harness) {
	inst := h.New(t, sessionstore.EventLogOptions{TTL: h.ExpiryTTL})
	log := inst.Log
	a := store(t, log, "s", "A", "1")
	wantReplay(t, log, "s", a, "A")
	inst.Expire(t, func() bool {
		_, _, err := replay(t, log, "s", a)
		return errors.Is(err, sessionstore.ErrUnknownEventID)
	})
	// The session logs anew.
	b := store(t, log, "s", "A", "2")
	c := store(t, log, "s", "A", "3")
	wantUnknown(t, log, "s", a)
	wantReplay(t, log, "s", b, "A", event{c, "3"})
}

// send's error ends the replay and is returned as is.
func testSendError(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	a := store(t, log, "s", "A", "1")
	store(t, log, "s", "A", "2")
	store(t, log, "s", "A", "3")
	errSend := errors.New("client went away")
	calls := 0
	_, err := log.ReplayEventsAfter(t.Context(), "s", a, func(string, json.RawMessage) error {
		calls++
		return errSend
	})
	if !errors.Is(err, errSend) || calls != 1 {
		t.Fatalf("ReplayEventsAfter with a failing send: %d calls, err = %v; want 1 call and send's error", calls, err)
	}
}

// A client resumes on another replica: events stored through one log
// replay through its peer, and the other way round.
func testPeer(t *testing.T, h Harness) {
	inst := h.New(t, sessionstore.EventLogOptions{})
	if inst.Peer == nil {
		t.Skip("the implementation has no second instance on the same storage")
	}
	a0 := store(t, inst.Log, "s", "A", "0")
	a1 := store(t, inst.Log, "s", "A", "1")
	wantReplay(t, inst.Peer, "s", a0, "A", event{a1, "1"})
	a2 := store(t, inst.Peer, "s", "A", "2")
	wantReplay(t, inst.Log, "s", a0, "A", event{a1, "1"}, event{a2, "2"})
	if err := inst.Peer.PurgeSession(t.Context(), "s"); err != nil {
		t.Fatalf("PurgeSession on the peer: %v", err)
	}
	wantUnknown(t, inst.Log, "s", a0)
}

// Concurrent StoreEvent calls on one stream (through the peer too, for
// half the callers, where there is one): every id is distinct, and a
// replay sends every event once, each caller's in the order it stored
// them.
func testConcurrent(t *testing.T, h Harness) {
	const writers, each = 8, 25
	inst := h.New(t, sessionstore.EventLogOptions{})
	log := inst.Log
	first := store(t, log, "s", "A", "start")
	ids := make([][]string, writers)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wlog := log
		if inst.Peer != nil && w%2 == 1 {
			wlog = inst.Peer
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for i := range each {
				id, err := wlog.StoreEvent(ctx, "s", "A", json.RawMessage(fmt.Sprintf(`[%d,%d]`, w, i)))
				if err != nil {
					errs <- err
					return
				}
				ids[w] = append(ids[w], id)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent StoreEvent: %v", err)
	}
	got, stream, err := replay(t, log, "s", first)
	if err != nil || stream != "A" || len(got) != writers*each {
		t.Fatalf("replay after %q: %d events on %q, %v; want %d on A", first, len(got), stream, err, writers*each)
	}
	next := make([]int, writers) // per writer, the next i expected
	seen := map[string]bool{}
	for _, ev := range got {
		var wi [2]int
		if err := json.Unmarshal([]byte(ev.msg), &wi); err != nil {
			t.Fatalf("replayed %q: %v", ev.msg, err)
		}
		w, i := wi[0], wi[1]
		if seen[ev.id] || i != next[w] || ids[w][i] != ev.id {
			t.Fatalf("replayed %s as %q (seen before: %v); want writer %d's event %d next, id %q", ev.msg, ev.id, seen[ev.id], w, next[w], ids[w][next[w]])
		}
		seen[ev.id] = true
		next[w]++
	}
}
