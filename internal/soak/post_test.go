package soak_test

import (
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// A tool call's POST stream cut in the middle of an event, while the tool
// still runs and sends progress, is resumed with a GET carrying the last
// event id seen on it (on whichever replica the proxy picks): every
// progress and log notification arrives once, then the result.
func TestPostStreamCutMidProgressDeliversEverything(t *testing.T) {
	reps, _ := startReplicas(t, 3, testutil.FaultProxyConfig{})
	c := startClient(t, reps.URL(), "c")
	ctx := testutil.Context(t, wait)
	isPost := func(ci testutil.ConnInfo) bool { return ci.Method == "POST" && ci.Target == "/mcp" }
	// Every POST answer longer than 1,500 bytes is cut inside an event:
	// only the call's stream is (a ping's answer is a short 202).
	disarm := reps.Proxy().Arm(testutil.Fault{Match: isPost, After: 1500, MidEvent: true, Times: -1})
	const steps = 10
	res, err := c.Progress(ctx, steps, 50)
	disarm()
	if err != nil {
		t.Fatal(err)
	}
	if res.Resumes == 0 || reps.Proxy().Stats().Cuts == 0 {
		t.Errorf("the call's stream was resumed %d times and the proxy cut %d connections; want a cut and a resume",
			res.Resumes, reps.Proxy().Stats().Cuts)
	}
	if len(res.Notes) != 2*steps || res.Duplicates != 0 {
		t.Errorf("the call's stream carried %d distinct notifications (%d duplicates), want %d once each",
			len(res.Notes), res.Duplicates, 2*steps)
	}
	checkClean(t, c, "a progress call whose stream was cut")
}
