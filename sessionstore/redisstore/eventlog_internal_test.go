package redisstore

import (
	"crypto/rand"
	"encoding/json"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// go-redis retries a call whose connection broke, so the store script can
// run twice for one StoreEvent: the second run stores nothing and answers
// the first run's id, and a replay sends the event once.
func TestEventStoreRetryStoresOnce(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), ContextTimeoutEnabled: true})
	defer c.Close()
	s := New(c, Options{Prefix: "retry:"})
	defer s.Close()
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	first, err := l.StoreEvent(ctx, "s", "A", json.RawMessage("0"))
	if err != nil {
		t.Fatal(err)
	}
	nonce := rand.Text()
	id1, err1 := l.store(ctx, "s", "A", json.RawMessage("1"), nonce)
	id2, err2 := l.store(ctx, "s", "A", json.RawMessage("1"), nonce)
	if err1 != nil || err2 != nil || id1 != id2 {
		t.Fatalf("a call and its retry answered %q, %v and %q, %v; want one id twice", id1, err1, id2, err2)
	}
	var got []string
	if _, err := l.ReplayEventsAfter(ctx, "s", first, func(id string, _ json.RawMessage) error {
		got = append(got, id)
		return nil
	}); err != nil || len(got) != 1 || got[0] != id1 {
		t.Fatalf("replay after the first event sent %v, %v; want [%s]", got, err, id1)
	}
}
