package streamable_test

import (
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A call whose replica is killed with SIGKILL while it runs cannot finish,
// but its client never hangs: resuming its stream on another replica
// replays what the call sent before the kill, each once, and, once the
// call's stream has been silent for three heartbeats (a running call
// records a marker at each), answers the call with an error that says it
// was lost.
func TestCallOnAKilledReplicaIsAnsweredAsLostOnResume(t *testing.T) {
	const heartbeat = 100 * time.Millisecond
	c := &cluster{t: t, redis: testutil.StartRedisServer(t)}
	prefix := "t" + randText() + ":"
	child := startReplicaProcess(t, c.redis.Addr(), prefix, heartbeat)
	c.configure = func(store *redisstore.Store, cfg *streamable.Config) {
		cfg.EventLog = store.EventLog(sessionstore.EventLogOptions{}) // the child's log
	}
	c.replicas = append(c.replicas, c.start("B", streamable.Config{HeartbeatInterval: heartbeat}, redisstore.Options{Prefix: prefix}))
	a := testutil.NewClient(child.url)
	ctx := testutil.Context(t, wait)
	if _, err := a.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	call, err := a.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 42, "method": "tools/call",
		"params": map[string]any{"name": "lifeline_progress", "arguments": map[string]any{"steps": 1000, "delay_ms": 20},
			"_meta": map[string]any{"progressToken": "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	wantStatus(t, "tools/call on A", call.Status, http.StatusOK, call.Body)
	seen := map[string]bool{}
	last := ""
	progress := 0
	for progress < 3 {
		ev, err := call.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.ID != "" {
			seen[ev.ID], last = true, ev.ID
		}
		if m, err := ev.Message(); err == nil && m.Method == "notifications/progress" {
			progress++
		}
	}
	child.kill()
	cb := c.client(0, a)
	resumed := openResume(t, cb, last)
	wantStatus(t, "GET on B resuming the killed call", resumed.Status, http.StatusOK, resumed.Body)
	for {
		ev, err := resumed.Next(ctx)
		if err != nil {
			t.Fatalf("the resumed stream ended without an answer: %v", err)
		}
		if ev.ID != "" {
			if seen[ev.ID] {
				t.Fatalf("event %s replayed twice", ev.ID)
			}
			seen[ev.ID] = true
		}
		m, err := ev.Message()
		if err != nil || m.Method != "" {
			continue
		}
		if string(m.ID) != "42" || m.Error == nil || !strings.Contains(m.Error.Message, "lost") {
			t.Fatalf("answer %+v, want call 42's lost-request error", m)
		}
		break
	}
}

func randText() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 8)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}
