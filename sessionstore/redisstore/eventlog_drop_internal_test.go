package redisstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// commandCalls returns how many times redis-server ran each of cmds
// (scripts' commands included) since its statistics were last reset.
func commandCalls(t *testing.T, c *redis.Client, cmds ...string) map[string]int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := make(map[string]int, len(cmds))
	for _, line := range strings.Split(info, "\n") {
		for _, cmd := range cmds {
			rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls=")
			if !ok {
				continue
			}
			n, _, _ := strings.Cut(rest, ",")
			if calls[cmd], err = strconv.Atoi(n); err != nil {
				t.Fatalf("commandstats line %q: %v", line, err)
			}
		}
	}
	return calls
}

// A session at its event bound whose oldest stream is a POST response's
// (an event or a few, as a session's are): a call storing as many events
// drops that stream whole with one read of it, not one read, pop and
// re-score per event, and keeps exactly what one-by-one stores would
// (the conformance suite's BatchMatchesOneByOne holds that under bounds
// that drop all the time).
func TestEventLogBoundDropsAStreamAtOnce(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "drop:")
	ctx := t.Context()
	const perStream, streams = 5, 4
	l := s.EventLog(sessionstore.EventLogOptions{MaxSessionEvents: perStream * streams})
	batch := make([]json.RawMessage, perStream)
	for i := range batch {
		batch[i] = json.RawMessage(`"m"`)
	}
	var first, kept []string // the first stream's ids; each later stream's first id
	for i := range streams + 1 {
		if i == streams {
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		ids, err := l.StoreEvents(ctx, "s", fmt.Sprint("p", i), batch)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = ids
		} else {
			kept = append(kept, ids[0])
		}
	}
	calls := commandCalls(t, c, "lrange", "lpop", "ltrim", "zrange")
	if calls["lrange"] > 1 || calls["lpop"]+calls["ltrim"] > 1 || calls["zrange"] > 1 {
		t.Fatalf("dropping the oldest stream's %d events took %v", perStream, calls)
	}
	if _, err := l.ReplayEventsAfter(ctx, "s", first[perStream-1], func(string, json.RawMessage) error { return nil }); err == nil {
		t.Fatal("the oldest stream's last event is still known; want the whole stream dropped")
	}
	for _, id := range kept {
		sent := 0
		if _, err := l.ReplayEventsAfter(ctx, "s", id, func(string, json.RawMessage) error { sent++; return nil }); err != nil || sent != perStream-1 {
			t.Fatalf("replay after a later stream's first event sent %d, %v; want its other %d events: the drop took too much", sent, err, perStream-1)
		}
	}
	checkLogHash(t, c, l, "s", "after the bound dropped a stream")
}

// A batch stored to a stream whose key a maxmemory policy evicted, in a
// session at its bound whose counts still hold the lost events, keeps what
// calls of their own would: the first message goes with the stream the log
// then forgets, the next starts a new stream and stays. Enforced once at
// the batch's end, the bound would forget the stream with every message
// of the batch.
func TestEventLogBatchOnAnEvictedStreamKeepsWhatSinglesWould(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "dropevict:")
	ctx := t.Context()
	l := s.EventLog(sessionstore.EventLogOptions{MaxSessionEvents: 2})
	for range 2 {
		if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage(`"a"`)); err != nil {
			t.Fatal(err)
		}
	}
	c.Del(ctx, l.base("s")+":1") // A's key, evicted
	ids, err := l.StoreEvents(ctx, "s", "A", []json.RawMessage{json.RawMessage(`"x1"`), json.RawMessage(`"x2"`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.ReplayEventsAfter(ctx, "s", ids[1], func(string, json.RawMessage) error { return nil }); err != nil {
		t.Fatalf("replay after the batch's last event: %v; want it kept, as StoreEvent calls keep it", err)
	}
	checkLogHash(t, c, l, "s", "after a batch on an evicted stream")
}
