package streamable_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With replicas on Redis: a notification raised on A for the session's
// stream on B crosses the bus (published, received), and while Redis hangs
// (SIGSTOP) the store calls fail with error.type timeout, are timed, and
// the requests that needed them are answered 503 store_unavailable.
func TestMetricsClusterBusAndStoreOutage(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	mr := newMeterRig(t)
	c := newCluster(t, streamable.Config{MeterProvider: mr.mp}, redisstore.Options{OpTimeout: opTimeout})
	a := c.session(0)
	st := c.stream(c.client(1, a))
	toolText(t, c.client(0, a), "lifeline_notify_session", map[string]any{"count": 1, "bytes": 5})
	if m, err := st.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool {
		return m.Method == "notifications/message"
	}); err != nil || !strings.Contains(string(m.Params), `"xxxxx"`) {
		t.Fatalf("notification on B's stream: %s, %v", m.Params, err)
	}
	// The publisher counts its message once Redis answered it, which may
	// be after B has delivered it.
	testutil.Eventually(t, wait, "the publish counted", func() bool { return mr.collect().value("lifeline.bus.published") >= 1 })
	ms := mr.collect()
	ms.atLeast(t, 1, "lifeline.bus.published")
	ms.atLeast(t, 1, "lifeline.bus.received")
	ms.check(t, 1, "lifeline.streams.open", attrKind("get"))
	ms.check(t, 1, "lifeline.sessions.created")
	ms.check(t, 0, "lifeline.store.calls", attrErr("timeout"))

	resume := c.pauseRedis()
	resp, err := c.client(2, a).CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "tools/call with Redis hung", resp.Status, http.StatusServiceUnavailable, resp.Body)
	resume()
	ms = mr.collect()
	ms.atLeast(t, 1, "lifeline.store.calls", attrErr("timeout"))
	ms.atLeast(t, 1, "lifeline.http.responses", attrStatus(503), attrCause("store_unavailable"))
	// The call that timed out is timed too: at least the OpTimeout.
	slow := false
	for _, p := range ms.points("lifeline.store.duration") {
		if p.value > 0 && p.sum >= opTimeout.Seconds() {
			slow = true
		}
	}
	if !slow {
		t.Errorf("no store call timed at OpTimeout or more\n%s", ms.dump("lifeline.store.duration"))
	}
}
