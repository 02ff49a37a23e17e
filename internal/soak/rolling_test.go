package soak_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// A rolling restart of all three replicas, one by one (SIGTERM: drain and
// exit; restart on the same port; wait until ready), under load from
// three clients calling lifeline_progress (notifications on the call's
// stream) and lifeline_notify_session (on the GET stream) continuously,
// loses no session (no re-initialization) and no call, fails and hangs
// none, and loses or doubles no notification: what a draining replica
// still held for a stream on another replica is forwarded there, or
// recorded for the client's next resume, as its drain ends.
func TestRollingRestartUnderLoadLosesNoSessionOrCall(t *testing.T) {
	reps, _ := startReplicas(t, 3, testutil.FaultProxyConfig{})
	ctx := testutil.Context(t, 3*wait)
	clients := make([]*testutil.ResumingClient, 3)
	for i := range clients {
		clients[i] = startClient(t, reps.URL(), fmt.Sprintf("d%d", i))
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; loadCtx.Err() == nil; i++ {
				if i%2 == 0 {
					_, _ = c.Progress(ctx, 5, 20)
				} else {
					_, _ = c.Notify(ctx, 10, 64)
				}
			}
		}()
	}
	// callsAdvance waits until every client has made n more calls.
	callsAdvance := func(n int64, what string) {
		t.Helper()
		base := make([]int64, len(clients))
		for i, c := range clients {
			base[i] = c.Stats().Calls
		}
		testutil.Eventually(t, wait, what, func() bool {
			for i, c := range clients {
				if c.Stats().Calls < base[i]+n {
					return false
				}
			}
			return true
		})
	}
	// streamsBack waits until each client's GET stream is open and
	// delivering after t (a stream the drained replica held has ended by
	// then, and its client has reconnected elsewhere): the pace of a
	// rollout that lets its clients settle before the next replica goes.
	streamsBack := func(t0 time.Time, what string) {
		t.Helper()
		testutil.Eventually(t, wait, what, func() bool {
			for _, c := range clients {
				conns := c.GetConns()
				last := conns[len(conns)-1]
				if !last.Ended.IsZero() || !last.LastEvent.After(t0) {
					return false
				}
			}
			return true
		})
	}
	callsAdvance(4, "every client calls before the restarts")
	for i := range reps.N() {
		if err := reps.Drain(i); err != nil {
			t.Errorf("drain replica %d: %v", i, err)
		}
		if err := reps.Restart(ctx, i); err != nil {
			t.Fatal(err)
		}
		streamsBack(time.Now(), fmt.Sprintf("every client's GET stream delivers again after replica %d restarted", i))
		callsAdvance(4, fmt.Sprintf("every client calls after replica %d restarted", i))
	}
	stopLoad()
	wg.Wait()
	var calls int64
	for i, c := range clients {
		dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = c.WaitDelivered(dctx)
		cancel()
		st := c.Stats()
		if st.NotesLost != 0 || st.NotesDuplicated != 0 || st.NotesRefused != 0 || st.Failures != 0 || st.Hung != 0 || st.Reinits != 0 {
			t.Errorf("client %d through the rolling restart: %+v (missing: %v); want nothing lost, duplicated, refused, failed or hung, and no re-initialization",
				i, st, c.Missing(10))
		}
		calls += st.Calls
		t.Logf("client %d: %+v", i, st)
	}
	t.Logf("%d calls through a rolling restart of 3 replicas", calls)
}
