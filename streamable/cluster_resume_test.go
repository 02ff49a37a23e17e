package streamable_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With replicas and a shared event log, a message A's stream failed to
// write (recorded, carried with its id) reaches the client once when it
// resumes on B: A's pump forwards it with its id, and B, whose replay has
// just sent that id, does not write it again.
func TestClusterResumeOnAnotherReplicaDeliversTheCarriedMessageOnce(t *testing.T) {
	big := sessionstore.EventLogOptions{MaxStreamBytes: 64 << 20, MaxSessionBytes: 64 << 20, MaxStreamEvents: 10000}
	t.Run("shared memory log", func(t *testing.T) {
		log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{EventLogOptions: big, MaxTotalBytes: 256 << 20})
		resumeOnAnotherReplica(t, newCluster(t, streamable.Config{WriteTimeout: 200 * time.Millisecond, EventLog: log}, redisstore.Options{}))
	})
	// Each replica with the Redis event log of its own store: what one
	// recorded, another replays.
	t.Run("redis log", func(t *testing.T) {
		resumeOnAnotherReplica(t, newConfiguredCluster(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, redisstore.Options{},
			func(store *redisstore.Store, cfg *streamable.Config) { cfg.EventLog = store.EventLog(big) }))
	})
}

// resumeOnAnotherReplica stalls a GET stream on replica A until its write
// fails, then resumes on B from the last id the client got, and requires
// every message once, in order.
func resumeOnAnotherReplica(t *testing.T, cl *cluster) {
	a := cl.replicas[0]
	c := cl.session(0)
	// 12.5 MiB through a recorded stream: under a loaded machine and the race
	// detector this takes seconds (each 64 KiB message is stored before it is
	// written), so the bound is three waits.
	ctx := testutil.Context(t, 3*wait)

	sr, err := testutil.DialStalledStream(ctx, a.ts.URL, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.Close() })
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET: %q, %v", status, err)
	}
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": floodCount, "bytes": floodBytes})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "flood", resp.Status, http.StatusOK, resp.Body)
	testutil.Eventually(t, wait, "A's stalled stream to fail its write and exit", func() bool {
		return a.h.Stats().GetStreams == 0
	})
	body, err := sr.ReadBody(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	var order []int
	lastID := ""
	take := func(ev testutil.Event) {
		m, err := ev.Message()
		if err != nil || !notPing(m) {
			return
		}
		seq := seqOf(t, m)
		got[seq]++
		order = append(order, seq)
		lastID = ev.ID
	}
	rd := testutil.NewSSEReader(bytes.NewReader(body))
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if ev.HasMessage() {
			take(ev)
		}
	}
	if len(order) == 0 || len(order) == floodCount || lastID == "" {
		t.Fatalf("%d messages (last id %q) reached the stalled client; the test needs some, not all", len(order), lastID)
	}
	onStalled := len(order)

	b := cl.client(1, c)
	s := openResume(t, b, lastID)
	wantStatus(t, "resume on B", s.Status, http.StatusOK, s.Body)
	readResumed(t, ctx, s, take, &order, got, onStalled)
}

// With a Redis store and no EventLog configured, every replica uses the
// store's shared log: a GET stream opened on A resumes on B from an id A
// wrote, and B replays, in order and once each, what A sent after it.
func TestClusterResumesOnAnotherReplicaWithTheStoresLogByDefault(t *testing.T) {
	cl := newCluster(t, streamable.Config{}, redisstore.Options{})
	c := cl.session(0)
	ctx := testutil.Context(t, wait)
	s := cl.stream(c)
	const count = 10
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": count, "bytes": 100})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "notify", resp.Status, http.StatusOK, resp.Body)
	ids := make([]string, 0, count)
	for len(ids) < count {
		ev, err := s.NextMessageEvent(ctx)
		if err != nil {
			t.Fatalf("after %d of %d notifications on A: %v", len(ids), count, err)
		}
		m, err := ev.Message()
		if err != nil || !notPing(m) {
			continue
		}
		if seq := seqOf(t, m); seq != len(ids) {
			t.Fatalf("notification %d on A is seq %d", len(ids), seq)
		}
		if ev.ID == "" {
			t.Fatalf("notification %d on A has no event id: no event log by default with a Redis store", len(ids))
		}
		ids = append(ids, ev.ID)
	}
	s.Close()
	a := cl.replicas[0]
	testutil.Eventually(t, wait, "A's stream to exit", func() bool { return a.h.Stats().GetStreams == 0 })

	// The client missed everything after the 4th: it resumes on B.
	const from = 3
	r := openResume(t, cl.client(1, c), ids[from])
	wantStatus(t, "resume on B", r.Status, http.StatusOK, r.Body)
	for i := from + 1; i < count; i++ {
		ev, err := r.NextMessageEvent(ctx)
		if err != nil {
			t.Fatalf("replay on B, waiting for seq %d: %v", i, err)
		}
		m, err := ev.Message()
		if err != nil || !notPing(m) {
			i--
			continue
		}
		if seq := seqOf(t, m); seq != i || ev.ID != ids[i] {
			t.Fatalf("replayed on B: seq %d id %q, want seq %d id %q", seq, ev.ID, i, ids[i])
		}
	}
}

// With a shared store, DELETE on any replica drops the session's events
// from the shared log, as it does from the memory log alone: an id of the
// deleted session can no longer be replayed.
func TestClusterDeletePurgesTheSessionsEvents(t *testing.T) {
	cl := newCluster(t, streamable.Config{}, redisstore.Options{})
	c := cl.session(0)
	ctx := testutil.Context(t, wait)
	s := cl.stream(c)
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 1, "bytes": 100})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "notify", resp.Status, http.StatusOK, resp.Body)
	ev, err := s.NextMessageEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ID == "" {
		t.Fatal("the notification has no event id")
	}
	// The wire id is "<stream>/<log id>".
	_, logID, ok := strings.Cut(ev.ID, "/")
	if !ok {
		t.Fatalf("event id %q is not <stream>/<log id>", ev.ID)
	}
	log := cl.replicas[2].store.EventLog(sessionstore.EventLogOptions{})
	replay := func() error {
		_, err := log.ReplayEventsAfter(ctx, c.SessionID, logID, func(string, json.RawMessage) error { return nil })
		return err
	}
	if err := replay(); err != nil {
		t.Fatalf("replay before DELETE: %v", err)
	}
	del, err := cl.client(1, c).Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE on B", del.Status, http.StatusOK, del.Body)
	if err := replay(); !errors.Is(err, sessionstore.ErrUnknownEventID) {
		t.Fatalf("replay after DELETE: %v, want ErrUnknownEventID: the session's events outlive it", err)
	}
}
