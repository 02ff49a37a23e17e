package streamable_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A GET stream that stayed open and quiet for longer than an event log's
// TTL, then cut by a proxy, resumes with the last id the client got: the
// session is alive, so the stream opens (afresh when the log forgot the
// id), never an error, which the Go SDK v1.8.0 client takes for its
// connection's end.
func TestQuietStreamOlderThanTheEventTTLResumes(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	r := newRig(t, streamable.Config{Clock: clock, HeartbeatInterval: streamable.Disabled})
	ctx := testutil.Context(t, wait)
	c := r.client()
	initializeAt(t, c, "2025-11-25")
	s, ev := streamWithOneEvent(t, ctx, r, c)
	// An hour with the stream open and no notification; the client makes
	// a call every ten minutes (answered on its POST), so the session is
	// busy, never idle.
	for range 6 {
		clock.Advance(10 * time.Minute)
		resp, err := c.Call(ctx, "ping", nil)
		if err != nil || resp.Status != http.StatusOK {
			t.Fatalf("ping: %v %+v", err, resp)
		}
	}
	s.Close()
	r.quiesce()
	if r.h.Stats().Sessions != 1 {
		t.Fatalf("the session ended while its stream was open")
	}
	rs := openResume(t, c, ev.ID)
	if rs.Status != http.StatusOK {
		t.Fatalf("resume of a live session after a quiet hour: status %d %s; want 200 (a fresh stream, or the replay)", rs.Status, rs.Body)
	}
	// And it is live.
	notify(t, r, c.SessionID, "two")
	m, err := rs.NextMatching(ctx, isLog)
	if err != nil || logData(t, m) != "two" {
		t.Fatalf("after resume: %+v %v", m, err)
	}
}
