package streamable_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// At the default heartbeat (20 s, so 60 s of missed pongs), a client whose
// replica was killed with SIGKILL gets its stream back on another replica
// within seconds: the stream lease is short (3 s) and renewed every second
// on its own timer, not once per heartbeat.
func TestClusterKilledHolderTakenOverAtDefaultHeartbeat(t *testing.T) {
	c := &cluster{t: t, redis: testutil.StartRedisServer(t)}
	prefix := "t" + rand.Text()[:8] + ":"
	child := startReplicaProcess(t, c.redis.Addr(), prefix, 0) // 0: the default heartbeat
	c.replicas = append(c.replicas, c.start("B", streamable.Config{}, redisstore.Options{Prefix: prefix}))

	a := testutil.NewClient(child.url)
	if _, err := a.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	st, err := a.OpenStream(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	wantStatus(t, "GET on A", st.Status, http.StatusOK, st.Body)
	// The lease is renewed a few times before the kill (not required: it
	// shows the renewals keep it, and the kill, not its first TTL, ends it).
	b := c.client(0, a)
	if s, err := b.OpenStream(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
		wantStatus(t, "GET on B while A holds the stream", s.Status, http.StatusConflict, s.Body)
	}

	killed := child.kill()
	select {
	case <-st.Ended():
	case <-time.After(wait):
		t.Fatal("A's GET stream is still open after A was killed")
	}
	child.wait()

	var conflicts int
	for {
		s, err := b.OpenStream(testutil.Context(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		if s.Status == http.StatusOK {
			t.Cleanup(s.Close)
			break
		}
		s.Close()
		if s.Status != http.StatusConflict {
			t.Fatalf("GET on B: status %d: %s", s.Status, s.Body)
		}
		conflicts++
		if time.Since(killed) > wait {
			t.Fatalf("GET on B still answered 409 %v after A was killed (default heartbeat): the dead replica's lease outlives it", wait)
		}
	}
	t.Logf("kill → 200 on B at the default heartbeat: %v (%d × 409 before)", time.Since(killed).Round(time.Millisecond), conflicts)
}

// slowHolderStore is a store whose StreamHolder (the poll of a GET waiting
// for another replica's stream) takes delay: a loaded store.
type slowHolderStore struct {
	sessionstore.Store
	delay time.Duration
}

func (s slowHolderStore) StreamHolder(ctx context.Context, id string) (sessionstore.Lease, bool, error) {
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return sessionstore.Lease{}, false, fmt.Errorf("slow store: %w", ctx.Err())
	}
	return s.Store.StreamHolder(ctx, id)
}

// At a 2 s heartbeat a GET waiting for another replica's stream waits
// (MissedPongLimit probes, 5 s) as long as CleanupTimeout allows; the wait
// ends with 409, never with a 503 blaming the store because its last poll
// ran on the wait's expired context. Here the holder is gone (a lease
// nobody renews or listens behind) and the store is slow (each poll takes
// 30 ms), so a poll is in flight when the wait ends.
func TestClusterRemoteWaitNeverBlamesAHealthyStore(t *testing.T) {
	c := &cluster{t: t, redis: testutil.StartRedisServer(t)}
	c.wrap = func(name string, s sessionstore.Store) sessionstore.Store {
		if name == "B" {
			return slowHolderStore{Store: s, delay: 30 * time.Millisecond}
		}
		return s
	}
	prefix := "t" + rand.Text()[:8] + ":"
	cfg := streamable.Config{HeartbeatInterval: 2 * time.Second}
	for _, name := range []string{"A", "B"} {
		c.replicas = append(c.replicas, c.start(name, cfg, redisstore.Options{Prefix: prefix}))
	}
	a := c.session(0)
	ghost, err := c.replicas[0].store.AcquireStream(testutil.Context(t, wait), a.SessionID, "ghost/1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b := c.client(1, a)
	for try := range 2 {
		s, err := b.OpenStream(testutil.Context(t, 2*wait))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if s.Status != http.StatusConflict {
			t.Fatalf("GET %d on B behind a lease nobody renews: status %d, want 409 (body %s)", try, s.Status, s.Body)
		}
	}
	// Once the lease goes, the next GET takes the stream.
	if err := c.replicas[0].store.ReleaseStream(testutil.Context(t, wait), ghost); err != nil {
		t.Fatal(err)
	}
	c.stream(b)
}

// A stream blocked in a write to a client that stopped reading keeps its
// lease until WriteTimeout ends it, although its heartbeat (20 ms) and
// lease TTL (1 s) are far shorter: a GET on another replica meanwhile is
// answered 409, never admitted as a second live stream.
func TestClusterStuckWriteKeepsItsLease(t *testing.T) {
	const writeTimeout = 6 * time.Second
	c := newCluster(t, streamable.Config{WriteTimeout: writeTimeout}, redisstore.Options{})
	a := c.session(0)
	ctx := testutil.Context(t, wait)
	sr, err := testutil.DialStalledStream(ctx, c.replicas[0].ts.URL, a.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.Close() })
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET on A: %q, %v", status, err)
	}
	resp, err := a.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": floodCount, "bytes": floodBytes})
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); !strings.Contains(string(last.Result), fmt.Sprintf("sent %d notifications", floodCount)) {
		t.Fatalf("flood: %s", last.Result)
	}
	prev := -1
	testutil.Eventually(t, wait, "A's stream writer to block", func() bool {
		q := c.replicas[0].h.Stats().QueuedMessages
		stable := q > 0 && q == prev
		prev = q
		if !stable {
			time.Sleep(20 * time.Millisecond) // spacing the samples of a bounded poll
		}
		return stable
	})
	stuck := time.Now()
	// Well past the 1 s lease, well before the write's deadline.
	b := c.client(1, a)
	tries := 0
	for time.Since(stuck) < writeTimeout/2 {
		s, err := b.OpenStream(testutil.Context(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		tries++
		if s.Status != http.StatusConflict {
			t.Fatalf("GET on B %v after A's stream blocked in a write: status %d, want 409 (A's stream is still live: a second live GET)",
				time.Since(stuck).Round(time.Millisecond), s.Status)
		}
		if c.replicas[0].h.Stats().GetStreams != 1 {
			t.Fatal("A's stream ended before its write timed out")
		}
	}
	t.Logf("%d GETs on B answered 409 while A's stream was blocked", tries)
}
