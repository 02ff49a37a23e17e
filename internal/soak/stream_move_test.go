package soak_test

import (
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// Notifications sent live by calls on any replica while the GET stream is
// cut and resumes on another replica all arrive, once: a stream that ended
// still reads its own topic for a moment after it released its lease, so a
// message a pump forwarded on the strength of that lease is kept and
// forwarded to the new holder rather than lost. Without it, about one run
// in four lost 1 of the 200.
func TestLiveNotificationsAcrossAStreamMoveAllArrive(t *testing.T) {
	reps, _ := startReplicas(t, 3, testutil.FaultProxyConfig{})
	reps.Proxy().Arm(testutil.Fault{Match: isGet, After: 3000, MidEvent: true, Times: 3})
	c := startClient(t, reps.URL(), "g")
	ctx := testutil.Context(t, wait)
	for range 4 {
		if _, err := c.Notify(ctx, 50, 200); err != nil {
			t.Fatal(err)
		}
	}
	checkClean(t, c, "4 × 50 notifications sent live over a GET stream cut 3 times")
}
