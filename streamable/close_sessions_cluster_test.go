package streamable_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// purgeCounter counts the PurgeSession calls of the event log it wraps.
type purgeCounter struct {
	sessionstore.EventLog
	n *atomic.Int64
}

func (l purgeCounter) PurgeSession(ctx context.Context, id string) error {
	l.n.Add(1)
	return l.EventLog.PurgeSession(ctx, id)
}

// With replicas, CloseSessions on A ends each of its sessions as closed
// and purges each one's events, even where A's own watch of the session
// sees the record end first (while the store waits out the windows of the
// live cache that B, serving the same sessions, keeps open), or a request
// on A finds it gone: every running
// call on A is answered with CloseSessions' cause, not "ended on another
// replica", and the log is purged once per session.
func TestClusterCloseSessionsClosesAndPurgesEverySession(t *testing.T) {
	const n = 32
	entered := make(chan struct{}, n)
	var purges [3]atomic.Int64
	next := 0
	c := newConfiguredCluster(t, streamable.Config{}, redisstore.Options{}, func(store *redisstore.Store, cfg *streamable.Config) {
		cfg.EventLog = purgeCounter{store.EventLog(sessionstore.EventLogOptions{}), &purges[next]}
		next++
	}, addBlockUntilCancelledTool(entered))
	ctx := testutil.Context(t, wait)
	var calls []*testutil.Stream
	var sessions []*testutil.Client
	for i := range n {
		a := c.session(0)
		sessions = append(sessions, a)
		call, err := a.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "block"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(call.Close)
		calls = append(calls, call)
		<-entered
	}
	// B serves every session over and over: its live cache keeps a window
	// open on each, which A's terminations wait out.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// And the sessions' clients go on calling A too: a request that finds
	// the record gone while CloseSessions waits ends the session as
	// closed as well.
	loop := func(cl *testutil.Client) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := cl.CallTool(ctx, "echo", map[string]any{"text": "x"}); err != nil {
				return
			}
		}
	}
	for _, a := range sessions {
		b := c.client(1, a)
		toolText(t, b, "echo", map[string]any{"text": "adopted"})
		wg.Go(func() { loop(b) })
		onA := c.client(0, a)
		wg.Go(func() { loop(onA) })
	}
	before := purges[0].Load()
	err := c.replicas[0].h.CloseSessions(ctx)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := purges[0].Load() - before; got < n {
		t.Errorf("CloseSessions of %d sessions purged the log %d times, want each", n, got)
	}
	for i, call := range calls {
		m, err := call.NextMessage(ctx)
		if err != nil {
			t.Fatalf("call %d: no answer: %v", i, err)
		}
		if msg := fmt.Sprintf("%+v %s", m.Error, m.Result); !strings.Contains(msg, "CloseSessions") {
			t.Errorf("call %d was answered %s, want CloseSessions' cause", i, msg)
		}
	}
}
