package streamable_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With replicas on Redis, a replica extends a busy session's expiry once
// per IdleTTL/16 and only checks the session (CheckLive) for the requests
// in between: the session lives as long as it gets requests, expires once
// they stop, and a DELETE on another replica is a 404 for the next
// request at once, however recently the session was extended.
func TestClusterRequestsBetweenTouchesOnlyCheckTheSession(t *testing.T) {
	const ttl = 1600 * time.Millisecond // extended at most every 100 ms
	mr := newMeterRig(t)
	c := newCluster(t, streamable.Config{IdleTTL: ttl, MeterProvider: mr.mp}, redisstore.Options{})
	a := c.session(0)
	ctx := testutil.Context(t, 4*ttl+wait)
	pace := time.NewTicker(10 * time.Millisecond) // the load's pace, not a wait for an event
	defer pace.Stop()
	requests := 0
	began := time.Now()
	for end := began.Add(2 * ttl); time.Now().Before(end); requests++ {
		resp, err := a.Call(ctx, "ping", nil)
		if err != nil || resp.Status != http.StatusOK {
			t.Fatalf("ping %d, %v into a session that gets a request every 10 ms: %+v %v", requests, time.Since(end.Add(-2*ttl)), resp, err)
		}
		<-pace.C
	}
	elapsed := time.Since(began)
	ms := mr.collect()
	touches, checks := ms.value("lifeline.store.calls", attrOp("Touch")), ms.value("lifeline.store.calls", attrOp("CheckLive"))
	// One Touch per IdleTTL/16 of requests (and the sweeper's, a quarter
	// of the TTL apart, for a session that has work), however slow the
	// machine makes the requests; CheckLive for the rest.
	windows := float64(elapsed) / float64(ttl/touchRefresh)
	most := windows + float64(elapsed)/float64(ttl/4) + 4
	if float64(requests) < 2*most {
		t.Fatalf("only %d requests in %v: too few to tell Touch once per IdleTTL/16 from Touch on each", requests, elapsed)
	}
	if touches > most || checks < float64(requests)-touches-4 {
		t.Fatalf("%d requests in %v made %v Touch and %v CheckLive calls: want at most %.0f Touch (one per IdleTTL/16, the sweeper's), CheckLive for the rest", requests, elapsed, touches, checks, most)
	}
	// A DELETE on another replica ends it for the next request here.
	b := c.client(1, a)
	if resp, err := b.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE on another replica: %+v %v", resp, err)
	}
	if resp, err := a.Call(ctx, "ping", nil); err != nil || resp.Status != http.StatusNotFound {
		t.Fatalf("a request right after a DELETE on another replica: %+v %v, want 404", resp, err)
	}
	// A session whose requests stop expires within IdleTTL of its last one
	// (a lookup that does not extend it: the store's Get).
	d := c.session(0)
	if resp, err := d.Call(ctx, "ping", nil); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("ping: %+v %v", resp, err)
	}
	last := time.Now()
	testutil.Eventually(t, ttl+wait, "the session to expire once its requests stopped", func() bool {
		_, err := c.replicas[0].store.Get(ctx, d.SessionID)
		return errors.Is(err, sessionstore.ErrNotFound)
	})
	if lived := time.Since(last); lived < ttl-ttl/touchRefresh {
		t.Fatalf("the session expired %v after its last request: want at least IdleTTL less IdleTTL/16 (%v)", lived, ttl-ttl/touchRefresh)
	}
}

// touchRefresh is streamable's: a replica extends a session's expiry at
// most once per IdleTTL/touchRefresh.
const touchRefresh = 16
