package eventlogtest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// streamTests are the tests of a log that implements
// sessionstore.EventStreamLog; Run adds them for such a log only.
var streamTests = []struct {
	name string
	f    func(*testing.T, Harness)
}{
	{"StreamIDsReplay", testStreamIDsReplay},
	{"StreamIDsBounds", testStreamIDsBounds},
	{"StreamIDsPeerAndPurge", testStreamIDsPeerAndPurge},
}

// streamOf returns the log's StoreStream, failing the test if it has none.
func streamOf(t *testing.T, log sessionstore.EventLog) sessionstore.EventStreamLog {
	t.Helper()
	s, ok := log.(sessionstore.EventStreamLog)
	if !ok {
		t.Fatalf("%T does not implement sessionstore.EventStreamLog", log)
	}
	return s
}

func storeStream(t *testing.T, log sessionstore.EventLog, session, stream string, msgs ...string) {
	t.Helper()
	raw := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		raw[i] = json.RawMessage(m)
	}
	if err := streamOf(t, log).StoreStream(t.Context(), session, stream, raw); err != nil {
		t.Fatalf("StoreStream(%s, %s, %d messages): %v", session, stream, len(raw), err)
	}
}

// A stream stored whole, among other streams' events: each of its ids is
// unknown before the store and replays what follows it, under ids of the
// same kind, after; ids past its end, of a stream never stored, or not of
// StreamEventID's form are unknown.
func testStreamIDsReplay(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{}).Log
	id := func(k int) string { return sessionstore.StreamEventID("P1", k) }
	wantUnknown(t, log, "s", id(0))
	a0 := store(t, log, "s", "A", "0")
	storeStream(t, log, "s", "P1", "", `"n1"`, `"n2"`, `"answer"`)
	a1 := store(t, log, "s", "A", "1")
	storeStream(t, log, "s", "P2", `"other"`)
	all := []event{{id(1), `"n1"`}, {id(2), `"n2"`}, {id(3), `"answer"`}}
	for k := range 4 {
		wantReplay(t, log, "s", id(k), "P1", all[k:]...)
	}
	wantReplay(t, log, "s", a0, "A", event{a1, "1"})
	wantReplay(t, log, "s", sessionstore.StreamEventID("P2", 0), "P2")
	for _, bad := range []string{id(4), id(1000), sessionstore.StreamEventID("P3", 0), "P1~", "P1~01", "P1~-1", "~1"} {
		wantUnknown(t, log, "s", bad)
	}
	wantUnknown(t, log, "other", id(0))
	// Only an id of a stream the log holds nothing of says so.
	for _, tc := range []struct {
		session, id string
		notStored   bool
	}{{"s", id(4), false}, {"s", sessionstore.StreamEventID("P3", 0), true}, {"other", id(0), true}} {
		_, _, err := replay(t, log, tc.session, tc.id)
		if got := errors.Is(err, sessionstore.ErrStreamNotStored); got != tc.notStored {
			t.Errorf("ReplayEventsAfter(%s, %q): %v; wraps ErrStreamNotStored: %v, want %v", tc.session, tc.id, err, got, tc.notStored)
		}
	}
}

// The bounds drop a stream's oldest events as StoreEvents would: their
// ids are unknown, the rest replay.
func testStreamIDsBounds(t *testing.T, h Harness) {
	log := h.New(t, sessionstore.EventLogOptions{MaxStreamEvents: 3}).Log
	id := func(k int) string { return sessionstore.StreamEventID("P", k) }
	storeStream(t, log, "s", "P", `"0"`, `"1"`, `"2"`, `"3"`, `"4"`)
	wantUnknown(t, log, "s", id(0))
	wantUnknown(t, log, "s", id(1))
	wantReplay(t, log, "s", id(2), "P", event{id(3), `"3"`}, event{id(4), `"4"`})
}

// A stream stored whole through one replica's log replays through its
// peer's, and is gone from both once the session is purged.
func testStreamIDsPeerAndPurge(t *testing.T, h Harness) {
	inst := h.New(t, sessionstore.EventLogOptions{})
	id := func(k int) string { return sessionstore.StreamEventID("P", k) }
	storeStream(t, inst.Log, "s", "P", "", `"answer"`)
	if inst.Peer != nil {
		wantReplay(t, inst.Peer, "s", id(0), "P", event{id(1), `"answer"`})
	}
	if err := inst.Log.PurgeSession(t.Context(), "s"); err != nil {
		t.Fatalf("PurgeSession: %v", err)
	}
	wantUnknown(t, inst.Log, "s", id(0))
}
