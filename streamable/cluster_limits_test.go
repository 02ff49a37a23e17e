package streamable_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With a heartbeat long enough that the holder's own liveness check would
// come late (1 s: its third tick), a GET on B takes over a stream whose
// client stopped answering within the probe's time (MissedPongLimit probes,
// each a heartbeat apart, about 2 s); and a GET on C while the client
// answers gets 409 at once, well before the probe's window ends.
func TestClusterProbeDecidesTakeoverAcrossReplicas(t *testing.T) {
	const hb = time.Second
	c := newCluster(t, streamable.Config{HeartbeatInterval: hb}, redisstore.Options{})
	a := c.session(0)
	st := c.stream(a)
	st.AnswerPings(true)
	testutil.Eventually(t, 3*wait, "a ping answered", func() bool { return st.Pongs() > 0 })

	asked := time.Now()
	s2, err := c.client(2, a).OpenStream(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "GET on C while the client answers", s2.Status, http.StatusConflict, s2.Body)
	if d := time.Since(asked); d > hb {
		t.Errorf("409 after %v; the holder's probe should have been answered within a heartbeat", d)
	}

	// The client stops answering right after a pong: without the probe, A
	// would close its stream only at its third tick from now.
	pongs := st.Pongs()
	testutil.Eventually(t, 3*wait, "the next pong", func() bool { return st.Pongs() > pongs })
	st.AnswerPings(false)
	asked = time.Now()
	s3, err := c.client(1, a).OpenStream(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s3.Close)
	wantStatus(t, "GET on B after the client stopped answering", s3.Status, http.StatusOK, s3.Body)
	if d, limit := time.Since(asked), 2*hb+hb/2; d > limit {
		t.Errorf("takeover after %v, want under %v (the probe's time, not the holder's own ticks)", d, limit)
	}
}

// DELETE while Redis hangs is answered 503 and changes nothing: once Redis
// answers again, the session still serves on every replica.
func TestClusterDeleteFailsWhileRedisHangs(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{OpTimeout: 300 * time.Millisecond})
	a := c.session(0)
	for i := range 3 {
		toolText(t, c.client(i, a), "echo", map[string]any{"text": "adopt"})
	}
	resume := c.pauseRedis()
	resp, err := c.client(2, a).Delete(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE while Redis hangs", resp.Status, http.StatusServiceUnavailable, resp.Body)
	resume()
	for i := range 3 {
		testutil.Eventually(t, wait, fmt.Sprintf("replica %d serves the session", i), func() bool {
			r, err := c.client(i, a).CallTool(context.Background(), "echo", map[string]any{"text": "x"})
			return err == nil && r.Status == http.StatusOK
		})
	}
}

// Messages for a session whose stream no replica holds wait on the replica
// that made them, bounded like any queue (QueueSize): beyond, sends are
// refused; what was accepted reaches the next stream, in order.
func TestClusterWaitingMessagesAreBounded(t *testing.T) {
	const queue = 8
	c := newCluster(t, streamable.Config{QueueSize: queue}, redisstore.Options{})
	a := c.session(0)
	got := toolText(t, c.client(1, a), "lifeline_notify_session", map[string]any{"count": 100})
	m := regexp.MustCompile(`sent (\d+) notifications, (\d+) refused`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("tool result %q: want some refused", got)
	}
	sent, _ := strconv.Atoi(m[1])
	if max := 3 * queue; sent > max {
		t.Fatalf("%d notifications accepted while no stream was open, want at most %d (queues plus what the pump holds)", sent, max)
	}
	// A snapshot: a message the pump is just taking counts nowhere for an
	// instant.
	testutil.Eventually(t, wait, fmt.Sprintf("B's Stats.QueuedMessages = the %d accepted", sent), func() bool {
		return c.replicas[1].h.Stats().QueuedMessages == sent
	})
	st := c.stream(c.client(2, a))
	ctx := testutil.Context(t, wait)
	seqRE := regexp.MustCompile(`"seq":(\d+)`)
	last := -1
	for i := range sent {
		msg, err := st.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("notification %d of %d: %v", i, sent, err)
		}
		sm := seqRE.FindStringSubmatch(string(msg.Params))
		if sm == nil {
			t.Fatalf("notification %d: %s has no seq", i, msg.Params)
		}
		seq, _ := strconv.Atoi(sm[1])
		if seq <= last {
			t.Fatalf("notification %d: seq %d after %d, want increasing (each once, in order)", i, seq, last)
		}
		last = seq
	}
}

// With heartbeats off, a replica's stream lease still lapses on its own (a
// replica that dies cannot lock its sessions' streams forever): it has an
// expiry, renewed at the default heartbeat interval.
func TestClusterLeaseExpiresWithHeartbeatsOff(t *testing.T) {
	c := newCluster(t, streamable.Config{HeartbeatInterval: streamable.Disabled}, redisstore.Options{})
	a := c.session(0)
	c.stream(a)
	lease, held, err := c.replicas[1].store.StreamHolder(testutil.Context(t, wait), a.SessionID)
	if err != nil || !held {
		t.Fatalf("StreamHolder: held=%v err=%v", held, err)
	}
	if lease.ExpiresAt.IsZero() {
		t.Fatal("the stream lease never expires with heartbeats off")
	}
	if left := time.Until(lease.ExpiresAt); left > 3*20*time.Second+time.Second {
		t.Errorf("lease lapses in %v, want within three default heartbeat intervals (60 s)", left)
	}
}

// A stream whose session vanished from Redis (flushed, as by a restart
// without persistence) is closed when the store notices, and writes nothing
// meanwhile: no empty event from a subscription that the store closed.
func TestClusterStreamEndsCleanlyWhenItsSessionVanishes(t *testing.T) {
	c := newCluster(t, streamable.Config{HeartbeatInterval: 10 * time.Second},
		redisstore.Options{CheckInterval: 50 * time.Millisecond})
	// Many streams: each one's select picks between its two closed
	// subscriptions at random, so a broken one shows in one of them.
	const n = 20
	streams := make([]*testutil.Stream, n)
	for i := range streams {
		streams[i] = c.stream(c.session(i % 3))
	}
	raw := redis.NewClient(&redis.Options{Addr: c.redis.Addr()})
	defer raw.Close()
	if err := raw.FlushAll(testutil.Context(t, wait)).Err(); err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, wait)
	for i, st := range streams {
		for ended := false; !ended; {
			ev, err := st.Next(ctx)
			switch {
			case err != nil && ctx.Err() != nil:
				t.Fatalf("stream %d is still open after its session vanished from Redis", i)
			case err != nil:
				ended = true
			case !ev.IsComment() && !ev.IsPriming(): // the Redis log primes 2025-11-25 streams
				if _, err := ev.Message(); err != nil {
					t.Fatalf("stream %d wrote an event that is not JSON-RPC: %+v (%v)", i, ev, err)
				}
			}
		}
	}
}
