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
	var first []string
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
		}
	}
	calls := commandCalls(t, c, "lrange", "lpop", "ltrim", "zrange")
	if calls["lrange"] > 1 || calls["lpop"]+calls["ltrim"] > 1 || calls["zrange"] > 1 {
		t.Fatalf("dropping the oldest stream's %d events took %v", perStream, calls)
	}
	if _, err := l.ReplayEventsAfter(ctx, "s", first[perStream-1], func(string, json.RawMessage) error { return nil }); err == nil {
		t.Fatal("the oldest stream's last event is still known; want the whole stream dropped")
	}
	checkLogHash(t, c, l, "s", "after the bound dropped a stream")
}
