package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// testStore returns a client of a redis-server of the test's own and a
// Store on it under prefix; both are closed when the test ends.
func testStore(t *testing.T, prefix string) (*redis.Client, *Store) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: testutil.StartRedis(t), ContextTimeoutEnabled: true})
	s := New(c, Options{Prefix: prefix})
	t.Cleanup(func() {
		_ = s.Close()
		_ = c.Close()
	})
	return c, s
}

// checkLogHash fails the test unless the session's log agrees with
// itself: every stream number has its name (both ways), count and bytes,
// no count outlives its stream, a stream's count is at least what its key
// holds (more only after an eviction), no stream key is left without its
// number, and the session's totals are the streams' sums.
func checkLogHash(t *testing.T, c *redis.Client, l *EventLog, session, when string) {
	t.Helper()
	ctx := context.Background()
	base := l.base(session)
	meta, err := c.HGetAll(ctx, base+":m").Result()
	if err != nil {
		t.Fatal(err)
	}
	count := func(f string) int {
		v := meta[f]
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || strconv.Itoa(n) != v {
			t.Fatalf("%s: %s = %q, want a count\n%v", when, f, v, meta)
		}
		return n
	}
	var sumC, sumB int
	for f, v := range meta {
		kind, num, ok := strings.Cut(f, ":")
		if !ok {
			continue
		}
		switch kind {
		case "s":
			if meta["n:"+v] != num {
				t.Fatalf("%s: s:%s = %q but n:%s = %q\n%v", when, num, v, v, meta["n:"+v], meta)
			}
		case "n":
			if meta["s:"+v] != num {
				t.Fatalf("%s: n:%s = %q but s:%s = %q\n%v", when, num, v, v, meta["s:"+v], meta)
			}
			_, hasC := meta["c:"+num]
			_, hasB := meta["b:"+num]
			if !hasC || !hasB {
				t.Fatalf("%s: stream %s has no count or bytes\n%v", when, num, meta)
			}
			if held := c.LLen(ctx, base+":"+num).Val(); int64(count("c:"+num)) < held {
				t.Fatalf("%s: stream %s counts %s events, its key holds %d\n%v", when, num, meta["c:"+num], held, meta)
			}
		case "c", "b":
			if _, ok := meta["n:"+num]; !ok {
				t.Fatalf("%s: %s outlives its stream\n%v", when, f, meta)
			}
			if kind == "c" {
				sumC += count(f)
			} else {
				sumB += count(f)
			}
		}
	}
	if next := meta["next"]; next != "" {
		for m := 1; m <= count("next"); m++ {
			if _, ok := meta["n:"+strconv.Itoa(m)]; !ok && c.Exists(ctx, fmt.Sprintf("%s:%d", base, m)).Val() == 1 {
				t.Fatalf("%s: stream key %d is left without its number\n%v", when, m, meta)
			}
		}
	}
	if len(meta) > 0 && (count("cnt") != sumC || count("bytes") != sumB) {
		t.Fatalf("%s: cnt %s, bytes %s; the streams hold %d events, %d bytes\n%v", when, meta["cnt"], meta["bytes"], sumC, sumB, meta)
	}
}

// A maxmemory policy may evict the set of stream heads. The next call to a
// stream puts its head back, scored by its oldest event, so the session's
// bound still drops the oldest event first.
func TestEventLogHeadsEvicted(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "evictheads:")
	ctx := t.Context()
	l := s.EventLog(sessionstore.EventLogOptions{MaxSessionEvents: 4})
	store := func(stream string) string {
		t.Helper()
		id, err := l.StoreEvent(ctx, "s", stream, json.RawMessage(`"m"`))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	a1, a2 := store("A"), store("A")
	c.Del(ctx, l.base("s")+":h")
	b1 := store("B")
	store("A") // A's head back, at a1
	store("B") // the fifth event: the oldest, a1, goes
	checkLogHash(t, c, l, "s", "after the heads were evicted")
	if _, err := l.ReplayEventsAfter(ctx, "s", a1, func(id string, _ json.RawMessage) error { return nil }); err == nil {
		t.Fatalf("a1, the session's oldest event, is still kept past the session's bound")
	}
	for _, id := range []string{a2, b1} {
		if _, err := l.ReplayEventsAfter(ctx, "s", id, func(string, json.RawMessage) error { return nil }); err != nil {
			t.Fatalf("replay after %s, within the bound: %v", id, err)
		}
	}
}

// A maxmemory policy may evict the key of the very stream being stored to
// (its events expire like the rest): its next event makes the key again,
// holding only that event. The log then forgets the stream, as it forgets
// any whose key it finds gone, and its counts stay true: a later stream
// keeps every event its bounds allow, and no count is left behind. Both
// one event at a time and in batches.
func TestEventLogOwnStreamKeyEvicted(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "evict:")
	ctx := t.Context()
	msgs := func(n int) []json.RawMessage {
		out := make([]json.RawMessage, n)
		for i := range out {
			out[i] = json.RawMessage(`"m"`)
		}
		return out
	}
	for _, batch := range []int{1, 3} {
		session := fmt.Sprint("batch", batch)
		l := s.EventLog(sessionstore.EventLogOptions{MaxStreamEvents: 3, MaxSessionEvents: 4})
		for range 2 {
			if _, err := l.StoreEvents(ctx, session, "A", msgs(batch)); err != nil {
				t.Fatal(err)
			}
		}
		c.Del(ctx, l.base(session)+":1") // A's key, evicted
		for range 2 {
			if _, err := l.StoreEvents(ctx, session, "A", msgs(batch)); err != nil {
				t.Fatal(err)
			}
		}
		checkLogHash(t, c, l, session, fmt.Sprintf("batches of %d, after A's key was evicted", batch))
		// B alone, within its bounds: each of its events stays.
		var first string
		for i := range 3 {
			ids, err := l.StoreEvents(ctx, session, "B", msgs(1))
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = ids[0]
			}
		}
		sent := 0
		if _, err := l.ReplayEventsAfter(ctx, session, first, func(string, json.RawMessage) error {
			sent++
			return nil
		}); err != nil || sent != 2 {
			t.Fatalf("batches of %d: replay after B's first event sent %d, %v; want its 2 later events", batch, sent, err)
		}
		checkLogHash(t, c, l, session, fmt.Sprintf("batches of %d, B stored", batch))
	}
}

// Stores in batches of 1-4 on a few streams, under small bounds, with
// stream keys (the one stored to included) and now and then the heads set
// evicted in between: after every call the log's hash agrees with itself.
func TestEventLogCountsStayTrueUnderEviction(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "evictrand:")
	ctx := t.Context()
	l := s.EventLog(sessionstore.EventLogOptions{MaxStreamEvents: 4, MaxStreamBytes: 40, MaxSessionEvents: 9, MaxSessionBytes: 80})
	rng := rand.New(rand.NewPCG(12, 3))
	for op := range 600 {
		batch := make([]json.RawMessage, 1+rng.IntN(4))
		for i := range batch {
			batch[i] = json.RawMessage(`"` + strings.Repeat("x", rng.IntN(8)) + `"`)
		}
		stream := fmt.Sprint("s", rng.IntN(4))
		if _, err := l.StoreEvents(ctx, "s", stream, batch); err != nil {
			t.Fatal(err)
		}
		checkLogHash(t, c, l, "s", fmt.Sprintf("op %d", op))
		switch rng.IntN(10) {
		case 0, 1:
			next, _ := c.HGet(ctx, l.base("s")+":m", "next").Int()
			c.Del(ctx, fmt.Sprintf("%s:%d", l.base("s"), 1+rng.IntN(max(next, 1))))
		case 2:
			c.Del(ctx, l.base("s")+":h")
		}
	}
}
