package soak_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A GET stream cut three times while notifications flow to it resumes
// each time with Last-Event-ID, on whichever replica the proxy picks, and
// delivers every notification once. The first connection stalls at the
// proxy after a few notifications, until the holder has recorded all 200,
// and is then cut; the next two are cut in the middle of an event of
// their replay. (Calls that send while the stream moves between replicas:
// TestLiveNotificationsAcrossAStreamMoveAllArrive.)
func TestGetStreamCutWhileNotificationsFlowLosesNothing(t *testing.T) {
	reps, rs := startReplicas(t, 3, testutil.FaultProxyConfig{})
	log := sharedLog(t, rs, reps)
	p := reps.Proxy()
	p.Arm(testutil.Fault{Match: isGet, After: 3000, Stall: true})
	c := startClient(t, reps.URL(), "a")
	ctx := testutil.Context(t, wait)
	testutil.Eventually(t, wait, "the GET stream opened with a priming event id (a cursor to resume from)", func() bool { return c.LastEventID() != "" })
	first := c.LastEventID()
	for range 4 {
		if _, err := c.Notify(ctx, 50, 100); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, wait, "the holder recorded every notification in the shared log", func() bool {
		return recorded(ctx, log, c.SessionID(), first) == 200
	})
	if got := c.Stats().NotesReceived; got >= 200 {
		t.Fatalf("the client received %d notifications before the stall; nothing to resume", got)
	}
	p.Arm(testutil.Fault{Match: isGet, After: 3000, MidEvent: true, Times: 2})
	if n := p.Cut(isGet); n != 1 {
		t.Fatalf("cut %d GET connections, want 1", n)
	}
	st := checkClean(t, c, "4 × 50 notifications over a GET stream cut 3 times")
	if st.NotesReceived != 200 {
		t.Errorf("received %d notifications, want 200", st.NotesReceived)
	}
	if got := p.Stats().Cuts; got != 3 || st.Reconnects != 3 {
		t.Errorf("the proxy cut %d connections and the client reconnected %d times, want 3 of each", got, st.Reconnects)
	}
}

// sharedLog returns the replicas' event log on Redis, read directly.
func sharedLog(t *testing.T, rs *testutil.RedisServer, reps *testutil.Replicas) sessionstore.EventLog {
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rc.Close() })
	store := redisstore.New(rc, redisstore.Options{Prefix: reps.Prefix()})
	t.Cleanup(func() { _ = store.Close() })
	return store.EventLog(sessionstore.EventLogOptions{})
}

// The replica holding a session's GET stream is killed with SIGKILL after
// it recorded notifications its client had not received yet (the stream
// stalls at the proxy once a few went through): the client resumes on
// another replica and gets every one of them, once. Three rounds, each
// killing the replica that holds the stream; the log line gives the time
// from the kill to the first replayed event on the new stream.
func TestKilledHolderResumesOnAnotherReplica(t *testing.T) {
	reps, rs := startReplicas(t, 3, testutil.FaultProxyConfig{})
	log := sharedLog(t, rs, reps)
	p := reps.Proxy()
	const rounds, count = 3, 60
	var took []time.Duration
	for round := range rounds {
		ctx := testutil.Context(t, 2*wait)
		c := testutil.NewResumingClient(testutil.ResumingClientConfig{URL: reps.URL(), Name: "b", Logf: t.Logf})
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, wait, "the GET stream opened with a priming event id (a cursor to resume from)", func() bool { return c.LastEventID() != "" })
		first := c.LastEventID() // the priming event's id
		holder := -1
		p.Stall(func(ci testutil.ConnInfo) bool {
			if isGet(ci) {
				holder = backendIndex(reps, ci.Backend)
			}
			return false // only looks
		})
		if holder < 0 {
			t.Fatal("no GET connection through the proxy")
		}
		onHolder := func(ci testutil.ConnInfo) bool { return isGet(ci) && "http://"+ci.Backend == reps.Base(holder) }
		if n := p.ArmConns(onHolder, testutil.Fault{After: 2000, Stall: true}); n != 1 {
			t.Fatalf("armed a stall on %d GET connections, want 1", n)
		}
		if _, err := c.Notify(ctx, count, 100); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, wait, "the holder recorded every notification in the shared log", func() bool {
			return recorded(ctx, log, c.SessionID(), first) == count
		})
		if c.Stats().NotesReceived == count {
			t.Fatal("the client received every notification before the stall; nothing to replay")
		}

		if err := reps.Kill(holder); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		p.Cut(onHolder)
		st := checkClean(t, c, "notifications recorded before the holder's SIGKILL")
		if st.NotesReceived != count {
			t.Errorf("round %d: received %d notifications, want %d", round, st.NotesReceived, count)
		}
		for _, g := range c.GetConns() {
			if g.Opened.After(killed) && g.Resumed && !g.FirstEvent.IsZero() {
				took = append(took, g.FirstEvent.Sub(killed))
				break
			}
		}
		c.Close()
		if err := reps.Restart(ctx, holder); err != nil {
			t.Fatal(err)
		}
	}
	if len(took) != rounds {
		t.Fatalf("measured %d resumes, want %d", len(took), rounds)
	}
	slices.Sort(took)
	t.Logf("SIGKILL of the holder → first replayed event on another replica: median %v of %v (heartbeat 500ms: lease 1.5s; client retry 1s)",
		took[len(took)/2].Round(time.Millisecond), took)
}

// recorded counts the lifeline_notify_session notifications the shared
// log holds for the session after the SSE event id after. An SSE id is
// "<stream>/<log id>"; the log knows the part after the slash.
func recorded(ctx context.Context, log sessionstore.EventLog, sessionID, after string) int {
	if _, logID, ok := strings.Cut(after, "/"); ok {
		after = logID
	}
	n := 0
	_, err := log.ReplayEventsAfter(ctx, sessionID, after, func(_ string, msg json.RawMessage) error {
		var m struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(msg, &m) == nil && m.Method == "notifications/message" &&
			bytes.Contains(m.Params, []byte(`"lifeline_notify_session"`)) {
			n++
		}
		return nil
	})
	if err != nil {
		return -1 // the log does not know the id (or failed): nothing counted
	}
	return n
}

// backendIndex returns the index of the replica at addr (host:port), or -1.
func backendIndex(reps *testutil.Replicas, addr string) int {
	for i := range reps.N() {
		if "http://"+addr == reps.Base(i) {
			return i
		}
	}
	return -1
}
