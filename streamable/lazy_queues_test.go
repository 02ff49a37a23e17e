package streamable_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A session's queues are made when something is first sent to it. A
// notification sent while the session's GET stream is starting (racing
// runGet's first look at the queues) still reaches that stream.
func TestNotificationRacingTheFirstStreamArrives(t *testing.T) {
	r := newRig(t, streamable.Config{})
	for i := range 100 {
		c := r.session()
		sent := make(chan error, 1)
		go func() {
			sent <- r.mcp.SendNotificationToSpecificClient(c.SessionID, "notifications/message",
				map[string]any{"level": "info", "data": fmt.Sprint("race-", i)})
		}()
		st := r.stream(c)
		ctx := testutil.Context(t, wait)
		m, err := st.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("iteration %d: %v", i, err)
		}
		if want := fmt.Sprint(`"race-`, i, `"`); !strings.Contains(string(m.Params), want) {
			t.Fatalf("iteration %d: got %s, want %s", i, m.Params, want)
		}
		if err := <-sent; err != nil {
			t.Fatalf("iteration %d: send: %v", i, err)
		}
		st.Close()
		if _, err := c.Delete(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
