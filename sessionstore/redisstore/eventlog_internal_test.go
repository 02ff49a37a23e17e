package redisstore

import (
	"crypto/rand"
	"encoding/json"
	"slices"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// go-redis retries a call whose connection broke, so the store script can
// run twice for one StoreEvent or StoreEvents: the second run stores
// nothing and answers the first run's ids, and a replay sends each event
// once.
func TestEventStoreRetryStoresOnce(t *testing.T) {
	t.Parallel()
	_, s := testStore(t, "retry:")
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	for _, batch := range [][]json.RawMessage{
		{json.RawMessage("1")},
		{json.RawMessage("2"), json.RawMessage(""), json.RawMessage("3")},
	} {
		first, err := l.StoreEvent(ctx, "s", "A", json.RawMessage("0"))
		if err != nil {
			t.Fatal(err)
		}
		nonce := rand.Text()
		ids1, err1 := l.store(ctx, l.s.evalShared, "s", "A", batch, nonce)
		ids2, err2 := l.store(ctx, l.s.evalShared, "s", "A", batch, nonce)
		if err1 != nil || err2 != nil || len(ids1) != len(batch) || !slices.Equal(ids1, ids2) {
			t.Fatalf("a call of %d messages and its retry answered %q, %v and %q, %v; want the same %d ids twice",
				len(batch), ids1, err1, ids2, err2, len(batch))
		}
		var got []string
		if _, err := l.ReplayEventsAfter(ctx, "s", first, func(id string, _ json.RawMessage) error {
			got = append(got, id)
			return nil
		}); err != nil || !slices.Equal(got, ids1) {
			t.Fatalf("replay after the event before the call sent %v, %v; want %v", got, err, ids1)
		}
	}
}

// A StoreStream call is answered, and recorded, with its first message's
// id alone; its retry stores nothing and answers the same id, and a
// replay sends each event once.
func TestEventStoreStreamRetryStoresOnce(t *testing.T) {
	t.Parallel()
	_, s := testStore(t, "retry-whole:")
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	first, err := l.StoreEvent(ctx, "s", "A", json.RawMessage("0"))
	if err != nil {
		t.Fatal(err)
	}
	batch := []json.RawMessage{json.RawMessage("1"), json.RawMessage("2"), json.RawMessage("3")}
	nonce := rand.Text() + wholeNonceMark
	ids1, err1 := l.store(ctx, l.s.evalBehind, "s", "A", batch, nonce)
	ids2, err2 := l.store(ctx, l.s.evalBehind, "s", "A", batch, nonce)
	if err1 != nil || err2 != nil || len(ids1) != 1 || !slices.Equal(ids1, ids2) {
		t.Fatalf("a whole stream's call and its retry answered %q, %v and %q, %v; want the same first id twice",
			ids1, err1, ids2, err2)
	}
	var got []string
	if _, err := l.ReplayEventsAfter(ctx, "s", first, func(id string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	}); err != nil || !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Fatalf("replay after the event before the call sent %q, %v; want each message once", got, err)
	}
	k := 0
	if _, err := l.ReplayEventsAfter(ctx, "s", sessionstore.StreamEventID("A", 0), func(string, json.RawMessage) error {
		k++
		return nil
	}); err != nil || k != 2 {
		t.Fatalf("replay after the stream's event 0 sent %d events, %v; want 2", k, err)
	}
}
