package streamable_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// TestDeleteAnswersOnceAGetBlockedInItsOpeningHasExited: a GET stream
// whose opening write is blocked on the network (the connection takes
// nothing) is cut once DELETE closes it, well within the cleanup timeout,
// so DELETE answers only after the GET handler has exited, not after the
// opening's own (here one-minute) write timeout.
func TestDeleteAnswersOnceAGetBlockedInItsOpeningHasExited(t *testing.T) {
	var g *gate
	r := newRigOn(t, streamable.Config{WriteTimeout: time.Minute, CleanupTimeout: time.Second},
		func(l net.Listener) net.Listener { g = newGate(l); return g })
	t.Cleanup(g.open) // runs before the rig's Shutdown
	c := r.session()
	ctx := testutil.Context(t, wait)
	g.arm()
	sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sr.Close() })
	select {
	case <-g.blocked:
	case <-ctx.Done():
		t.Fatal("the GET's opening never reached the network")
	}
	resp, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	if st := r.h.Stats(); st.GetStreams != 0 || st.Sessions != 0 {
		t.Fatalf("DELETE answered while the GET handler was still blocked in its opening write: %+v", st)
	}
}
