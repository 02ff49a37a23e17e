package streamable_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Each dead GET stream is counted once in lifeline.heartbeat.dead_peers,
// whether the stream's own heartbeat or a reconnecting client's probe
// (takeover) closed it: on a real clock the two race, the probe's wait
// being the heartbeat interval.
func TestMetricsTakenOverStreamCountedOnceAsDead(t *testing.T) {
	const sessions = 6
	mr := newMeterRig(t)
	r := newRig(t, streamable.Config{MeterProvider: mr.mp, HeartbeatInterval: 100 * time.Millisecond})
	ctx := testutil.Context(t, 4*wait)
	for range sessions {
		c := r.session()
		s1 := r.stream(c)
		ping, err := s1.NextMatching(ctx, isPing)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil || resp.Status != http.StatusAccepted {
			t.Fatalf("pong: %v %+v", err, resp)
		}
		// s1 answers no more pings (its reader is not read): GET #2 takes
		// its place once it counts as dead.
		r.stream(c)
		select {
		case <-s1.Ended():
		case <-ctx.Done():
			t.Fatal("GET #1 did not end")
		}
	}
	ms := mr.collect()
	ms.check(t, sessions, "lifeline.heartbeat.dead_peers")
	if tk := ms.value("lifeline.streams.takeovers"); tk > sessions {
		t.Errorf("%v takeovers for %d dead streams", tk, sessions)
	}
}
