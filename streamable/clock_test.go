package streamable_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With a manual clock and the default interval, pings come exactly every
// 20 s of clock time, and never without the clock moving.
func TestDefaultHeartbeatIsTwentySecondsOfClockTime(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	r := newRig(t, streamable.Config{Clock: clock, HeartbeatInterval: defaultHeartbeat})
	c := r.session()
	s := r.stream(c)
	expectMarkerFirst(t, c, s)
	clock.Advance(20 * time.Second)
	expectPing(t, s)
	clock.Advance(19 * time.Second)
	expectMarkerFirst(t, c, s)
	clock.Advance(time.Second)
	expectPing(t, s)
}

func TestDisabledHeartbeatNeverPings(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	r := newRig(t, streamable.Config{Clock: clock, HeartbeatInterval: streamable.Disabled, IdleTTL: streamable.Disabled})
	c := r.session()
	s := r.stream(c)
	for range 3 {
		clock.Advance(time.Hour)
		expectMarkerFirst(t, c, s)
	}
}

// marker asks for one session notification and returns the next message
// on s, which must be it: nothing else (no ping) came before.
func expectMarkerFirst(t *testing.T, c *testutil.Client, s *testutil.Stream) {
	t.Helper()
	ctx := testutil.Context(t, wait)
	if _, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 1}); err != nil {
		t.Fatal(err)
	}
	m, err := s.NextMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m.Method != "notifications/message" {
		t.Fatalf("got %+v before the marker", m)
	}
}

func expectPing(t *testing.T, s *testutil.Stream) {
	t.Helper()
	m, err := s.NextMessage(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	if !isPing(m) {
		t.Fatalf("got %+v, want a ping", m)
	}
}

func TestDefaultIdleTTLIsThirtyMinutesOfClockTime(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	r := newRig(t, streamable.Config{Clock: clock, HeartbeatInterval: streamable.Disabled})
	c := r.session()
	ctx := testutil.Context(t, wait)
	clock.Advance(29 * time.Minute)
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "still alive"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "after 29 idle minutes", resp.Status, http.StatusOK, resp.Body)
	// That call counted as activity; 31 more idle minutes expire it.
	clock.Advance(31 * time.Minute)
	testutil.Eventually(t, wait, "the session to expire", func() bool {
		return r.h.Stats().Sessions == 0
	})
}
