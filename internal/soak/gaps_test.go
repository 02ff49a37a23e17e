package soak_test

import (
	"os"
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// envKnownGaps runs the tests of known gaps, which fail until the gap is
// closed.
const envKnownGaps = "LIFELINE_SOAK_KNOWN_GAPS"

// Known gap: notifications sent by calls on other replicas while the GET
// stream is cut and resumes on another replica. The sending replica's pump
// publishes to the stream's holder; one it publishes as the old holder's
// stream ends (after the lease is released, before its subscription is
// gone) is received by nobody and recorded nowhere, so the resume cannot
// replay it. Seen in about half of the runs: 1 of 200 lost. Closing it
// takes recording into the shared log before forwarding (by the sender),
// or an acknowledged forward.
func TestLiveNotificationsAcrossAStreamMove(t *testing.T) {
	if os.Getenv(envKnownGaps) == "" {
		t.Skipf("a known gap (a message forwarded to a stream's holder as it leaves is lost); set %s=1 to run", envKnownGaps)
	}
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
