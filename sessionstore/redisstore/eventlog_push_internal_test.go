package redisstore

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// A new stream's events, within its bounds, go to Redis in one RPUSH (a
// POST response's priming event, notifications and answer), with no
// DEL of the stream's key: one command where there were one per event,
// and the same ids and replay as before.
func TestEventLogNewStreamIsOnePush(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "push:")
	ctx := t.Context()
	l := s.EventLog(sessionstore.EventLogOptions{})
	if _, err := l.StoreEvent(ctx, "s", "get", json.RawMessage(`"g"`)); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	msgs := []json.RawMessage{json.RawMessage(`""`), json.RawMessage(`"n1"`), json.RawMessage(`"n2"`), json.RawMessage(`"answer"`)}
	ids, err := l.StoreEvents(ctx, "s", "p1", msgs)
	if err != nil {
		t.Fatal(err)
	}
	calls := commandCalls(t, c, "rpush", "del")
	if calls["rpush"] != 1 || calls["del"] != 0 {
		t.Fatalf("storing %d events on a new stream took %v; want 1 rpush, no del", len(msgs), calls)
	}
	var got []string
	if _, err := l.ReplayEventsAfter(ctx, "s", ids[0], func(id string, m json.RawMessage) error {
		got = append(got, id+"="+string(m))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{ids[1] + `="n1"`, ids[2] + `="n2"`, ids[3] + `="answer"`}
	if !slices.Equal(got, want) {
		t.Fatalf("replay after the first event: %q, want %q", got, want)
	}
	checkLogHash(t, c, l, "s", "after a new stream's one push")
}

// A log that lapsed leaves its stream keys for a while (they outlive the
// hash, by design); the next log gives their numbers again. A new stream
// pushed in one RPUSH onto such a key replaces what it held: a replay of
// the new stream never sends a lapsed log's events.
func TestEventLogNewStreamReplacesALapsedLogsKey(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "pushlapse:")
	ctx := t.Context()
	l := s.EventLog(sessionstore.EventLogOptions{})
	if _, err := l.StoreEvents(ctx, "s", "old", []json.RawMessage{json.RawMessage(`"stale1"`), json.RawMessage(`"stale2"`)}); err != nil {
		t.Fatal(err)
	}
	base := l.base("s")
	if err := c.Del(ctx, base+":m", base+":h").Err(); err != nil { // the log lapsed; its stream key is left
		t.Fatal(err)
	}
	ids, err := l.StoreEvents(ctx, "s", "new", []json.RawMessage{json.RawMessage(`"a"`), json.RawMessage(`"b"`), json.RawMessage(`"c"`)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := c.LLen(ctx, base+":1").Result(); err != nil || n != 3 {
		t.Fatalf("the new stream's key holds %d elements (%v), want its 3", n, err)
	}
	var got []string
	if _, err := l.ReplayEventsAfter(ctx, "s", ids[0], func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{`"b"`, `"c"`}; !slices.Equal(got, want) {
		t.Fatalf("replay after the new stream's first event: %q, want %q", got, want)
	}
	checkLogHash(t, c, l, "s", "after a new stream on a lapsed log's key")
}
