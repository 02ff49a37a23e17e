package redisstore_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
)

// The ids StoreStream gives are read through the record of the stream's
// last store: once another store to the stream replaced it, they are
// unknown (never another event's), and a message over the byte bound
// goes empty, in its place, where StoreEvents refuses the call.
func TestEventLogStreamIDsNeedTheStreamsLastStore(t *testing.T) {
	e := newEnv(t)
	log := e.store(t, redisstore.Options{}).EventLog(sessionstore.EventLogOptions{MaxStreamBytes: 64})
	ctx := t.Context()
	id := func(k int) string { return sessionstore.StreamEventID("P", k) }
	big := json.RawMessage(`"` + string(make([]byte, 80)) + `"`)
	for i := range big[1 : len(big)-1] {
		big[1+i] = 'x'
	}
	if err := log.StoreStream(ctx, "s", "P", []json.RawMessage{nil, big, json.RawMessage(`"answer"`)}); err != nil {
		t.Fatalf("StoreStream with a message over the byte bound: %v", err)
	}
	var got []string
	send := func(id string, msg json.RawMessage) error { got = append(got, id+"="+string(msg)); return nil }
	if _, err := log.ReplayEventsAfter(ctx, "s", id(0), send); err != nil {
		t.Fatalf("replay after %s: %v", id(0), err)
	}
	if want := []string{id(1) + "=", id(2) + `="answer"`}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("replayed %q; want %q (the large message empty, in its place)", got, want)
	}
	if _, err := log.StoreEvents(ctx, "s", "Q", []json.RawMessage{big}); !errors.Is(err, sessionstore.ErrEventTooLarge) {
		t.Fatalf("StoreEvents with a message over the byte bound: %v; want ErrEventTooLarge", err)
	}
	storeEvent(t, log, "s", "P", `"later"`)
	got = nil
	if _, err := log.ReplayEventsAfter(ctx, "s", id(0), send); !errors.Is(err, sessionstore.ErrUnknownEventID) || len(got) > 0 {
		t.Fatalf("replay after %s once the stream was stored to again: sent %q, err %v; want nothing and ErrUnknownEventID", id(0), got, err)
	}
}
