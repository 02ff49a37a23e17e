package redisstore

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// StoreStream's scripts never go out alone: a batch lingers for more
// before it goes, and the stores made meanwhile share its one pipeline.
// (Fails if a StoreStream goes out on its own, as StoreEvents' first store
// does, or if the stores made within the linger take round trips of their
// own.)
func TestStoreStreamBatchLingersAndSharesOneRoundTrip(t *testing.T) {
	t.Parallel()
	rs := testutil.StartRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	var pipelines atomic.Int64
	c.AddHook(pipelineCounter{&pipelines})
	s := New(c, Options{Prefix: "behind:", OpTimeout: 20 * time.Second})
	t.Cleanup(func() { _ = s.Close(); _ = c.Close() })
	if s.behind.linger != behindLinger || behindLinger <= 0 {
		t.Fatalf("New gives StoreStream's round trips a linger of %v; want behindLinger (%v), above zero", s.behind.linger, behindLinger)
	}
	// Long enough for every store below to join the batch: the test waits
	// for them to join, not for the linger.
	s.behind.linger = 2 * time.Second
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	if _, err := l.StoreEvent(ctx, "other", "A", nil); err != nil { // loads the script, alone: no pipeline
		t.Fatal(err)
	}
	if n := pipelines.Load(); n != 0 {
		t.Fatalf("%d pipelines before any StoreStream", n)
	}
	const stores = 8
	errs := make(chan error, stores)
	for i := range stores {
		go func() {
			errs <- l.StoreStream(ctx, "s", fmt.Sprint("P", i), []json.RawMessage{nil, json.RawMessage(fmt.Sprint(i))})
		}()
	}
	testutil.Eventually(t, 5*time.Second, "every store in the lingering batch", func() bool {
		s.behind.mu.Lock()
		defer s.behind.mu.Unlock()
		return s.behind.forming != nil && len(s.behind.forming.calls) == stores
	})
	for range stores {
		if err := wait(t, errs, "a StoreStream"); err != nil {
			t.Fatal(err)
		}
	}
	if n := pipelines.Load(); n != 1 {
		t.Fatalf("%d pipelines carried the %d stores; want one", n, stores)
	}
	for i := range stores {
		stream := fmt.Sprint("P", i)
		var got []string
		if _, err := l.ReplayEventsAfter(ctx, "s", sessionstore.StreamEventID(stream, 0), func(id string, m json.RawMessage) error {
			got = append(got, id+"="+string(m))
			return nil
		}); err != nil || len(got) != 1 || got[0] != sessionstore.StreamEventID(stream, 1)+"="+fmt.Sprint(i) {
			t.Fatalf("replay of %s: %q, %v", stream, got, err)
		}
	}
}
