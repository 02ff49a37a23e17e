package streamable_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A replica that shuts down with replicas and a shared event log drains:
// the response of a call still running is ended at once (after its
// priming event), its client resumes on another replica, and gets there
// every progress notification the call sends while it finishes on the
// draining replica, then its result; the session lives on.
func TestDrainingReplicaLetsGoOfRunningCallsAndTheirClientsResumeElsewhere(t *testing.T) {
	const steps = 4
	step := make(chan struct{})
	cl := newConfiguredCluster(t, streamable.Config{}, redisstore.Options{},
		func(store *redisstore.Store, cfg *streamable.Config) {
			cfg.EventLog = store.EventLog(sessionstore.EventLogOptions{})
		}, steppedTool(steps, step))
	a := cl.replicas[0]
	c := cl.session(0)
	ctx := testutil.Context(t, wait)
	call := callStepped(t, ctx, c, 11)
	pr := &postReader{t: t, ids: map[string]bool{}}
	step <- struct{}{}
	pr.until(ctx, call, 1)

	shut := make(chan error, 1)
	go func() { shut <- a.h.Shutdown(ctx) }()
	// A lets go of the response: it ends without the answer.
	for {
		ev, err := call.Next(ctx)
		if err != nil {
			break
		}
		pr.take(ev)
	}
	if pr.answer != nil {
		t.Fatal("the draining replica answered on the original stream: it did not let go of it")
	}
	resumed := openResume(t, cl.client(1, c), pr.lastID)
	wantStatus(t, "GET on B resuming A's call", resumed.Status, http.StatusOK, resumed.Body)
	for range steps {
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the call stopped taking steps on the draining replica")
		}
	}
	pr.until(ctx, resumed, -1)
	pr.check(steps, "11")
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := toolText(t, cl.client(2, c), "echo", map[string]any{"text": "alive"}); got != "alive" {
		t.Fatalf("the session after the drain: %q", got)
	}
}
