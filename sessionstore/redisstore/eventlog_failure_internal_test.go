package redisstore

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Redis keeps the writes a script made before an error. A store that
// fails once it has given its stream a number (here: the stream's key
// holds a string, so its push fails) leaves that number taken: the next
// new stream gets another, and the first stream's later events never
// land in the second's list.
func TestEventStoreFailingPartWayGivesNoNumberTwice(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "partway:")
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	if _, err := l.StoreEvent(ctx, "s", "Z", json.RawMessage(`"z"`)); err != nil {
		t.Fatal(err)
	}
	blocked := l.base("s") + ":2" // the number A's first call will be given
	if err := c.Set(ctx, blocked, "not a list", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`"a0"`)); err == nil {
		t.Fatal("a store whose stream key holds a string succeeded; want its push's error")
	}
	if err := c.Del(ctx, blocked).Err(); err != nil {
		t.Fatal(err)
	}
	b0, err := l.StoreEvent(ctx, "s", "B", json.RawMessage(`"b0"`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`"a1"`)); err != nil {
		t.Fatal(err)
	}
	var got []string
	if _, err := l.ReplayEventsAfter(ctx, "s", b0, func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	}); err != nil || len(got) != 0 {
		t.Fatalf("replay after B's only event sent %q, %v; want nothing (A's event is on a stream of its own)", got, err)
	}
	checkLogHash(t, c, l, "s", "after a store failed part-way")
}

// A stream the session's bound forgets whole, whose name its hash no
// longer holds (a hand-edited or half-written hash), is forgotten by its
// number: the store that drops it succeeds.
func TestEventStoreForgetsAStreamWithoutItsName(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "noname:")
	l := s.EventLog(sessionstore.EventLogOptions{MaxSessionEvents: 2})
	ctx := t.Context()
	if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`"a0"`)); err != nil {
		t.Fatal(err)
	}
	if err := c.HDel(ctx, l.base("s")+":m", "n:1").Err(); err != nil {
		t.Fatal(err)
	}
	ids, err := l.StoreEvents(ctx, "s", "B", []json.RawMessage{json.RawMessage(`"b0"`), json.RawMessage(`"b1"`)})
	if err != nil {
		t.Fatalf("a store whose bound drops a stream without its name failed: %v", err)
	}
	var got []string
	if _, err := l.ReplayEventsAfter(ctx, "s", ids[0], func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	}); err != nil || !slices.Equal(got, []string{`"b1"`}) {
		t.Fatalf("replay after B's first event sent %q, %v; want its second", got, err)
	}
}
