package streamable_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A tool that sends a burst of notifications during its call (faster than
// the request's writer starts, and far more than RequestQueueSize) loses
// none of them: it waits for room, and every one arrives on the call's
// response, before the result.
func TestBurstOfNotificationsInACallArrivesWhole(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	const steps = 200 // 400 notifications: progress and a log message per step
	for round := range 5 {
		resp, err := c.Call(testutil.Context(t, wait), "tools/call", map[string]any{
			"name": "lifeline_progress", "arguments": map[string]any{"steps": steps},
			"_meta": map[string]any{"progressToken": round}})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "tools/call", resp.Status, http.StatusOK, resp.Body)
		notes := 0
		for _, m := range resp.Messages {
			if m.IsNotification() {
				notes++
			}
		}
		if notes != 2*steps {
			t.Fatalf("round %d: %d notifications on the call's response, want %d", round, notes, 2*steps)
		}
	}
}
