package interop

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// tsCutHeader is the header ts/resume-client.mjs puts on the tools/call
// POST of lifeline_progress, for the proxy's fault to match.
const tsCutHeader = "X-Interop-Cut"

// The TypeScript SDK client (1.32.2) resumes a tools/call whose answer
// stream is cut in the middle of an event after about two steps: its
// _handleSseStream saw an event id (hasPrimingEvent), so on the stream's
// error it schedules _startOrAuthSse with the last id as resumptionToken
// (a GET with Last-Event-ID, after the server's retry, 1 s), and lifeline
// replays the rest of the call's stream and follows it live to the answer.
// Every progress notification (onprogress) and log message arrives once,
// in order, and callTool resolves with the result.
func TestTypeScriptClientResumesACutCallStream(t *testing.T) {
	node := nodeAndSDK(t)
	r := startResumeRig(t)
	r.cutCall(tsCutHeader)
	steps, order := runNodeScript(t, node, "resume-client.mjs", r.endpoint, "call",
		strconv.Itoa(callSteps), strconv.Itoa(callDelayMS))
	checkSteps(t, steps, order, []string{"connect", "call", "done"})
	if t.Failed() {
		t.FailNow()
	}
	checkTSCall(t, steps["call"])
	r.checkCallResumed(t)
}

// The TypeScript SDK client's standalone GET stream is cut in the middle
// of an event while a burst of 300 notifications flows on it: the stream
// is reconnectable, so _handleSseStream schedules a GET with the last id
// it got as Last-Event-ID, and lifeline replays what the cut lost and goes
// on live. Every notification arrives once, and so does a second burst
// sent after the resume.
func TestTypeScriptClientResumesACutStandaloneStream(t *testing.T) {
	node := nodeAndSDK(t)
	r := startResumeRig(t)
	r.cutGet()
	bursts := fmt.Sprintf("%dx%d,%dx%d", burstCount, burstBytes, lateCount, lateBytes)
	steps, order := runNodeScript(t, node, "resume-client.mjs", r.endpoint, "get", bursts)
	checkSteps(t, steps, order, []string{"connect",
		fmt.Sprintf("burst_%dx%d", burstCount, burstBytes), fmt.Sprintf("burst_%dx%d", lateCount, lateBytes),
		"received", "done"})
	if t.Failed() {
		t.FailNow()
	}
	d := newDeliveries()
	for _, v := range steps["received"]["notes"].([]any) {
		n := v.([]any)
		d.mu.Lock()
		d.notes[noteKey{int(n[0].(float64)), int(n[1].(float64))}]++
		d.mu.Unlock()
	}
	d.checkNotes(t, burstBytes, burstCount)
	d.checkNotes(t, lateBytes, lateCount)
	r.checkGetResumed(t)
	t.Logf("what the TS transport reported through onerror: %v", steps["received"]["errors"])
}

// The TypeScript SDK client's call is cut right after the priming event
// that opens its answer, inside the first progress event: it saw an id
// (hasPrimingEvent), so it resumes from the priming event's id, and gets
// every step once and the result.
func TestTypeScriptClientResumesACallCutRightAfterItsPrimingEvent(t *testing.T) {
	node := nodeAndSDK(t)
	r := startResumeRig(t)
	probe := testutil.NewClient(r.h.URL)
	probe.HTTP = r.h.HTTP
	if _, err := probe.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	r.cutCallAfterPriming(t, probe.SessionID, tsCutHeader)
	steps, order := runNodeScript(t, node, "resume-client.mjs", r.endpoint, "call",
		strconv.Itoa(callSteps), strconv.Itoa(callDelayMS))
	checkSteps(t, steps, order, []string{"connect", "call", "done"})
	if t.Failed() {
		t.FailNow()
	}
	checkTSCall(t, steps["call"])
	r.checkCallResumed(t)
	r.checkResumedFromPriming(t)
}

// checkTSCall checks the call step of resume-client.mjs: the result, and
// every step's progress and log message once, in order.
func checkTSCall(t *testing.T, call tsStep) {
	t.Helper()
	if want := fmt.Sprintf("done %d steps", callSteps); call.str("result") != want {
		t.Errorf("callTool resolved with %q, want %q", call.str("result"), want)
	}
	d := newDeliveries()
	for _, v := range call["progress"].([]any) {
		d.addProgress(v.(float64))
	}
	for _, v := range call["logs"].([]any) {
		d.addLog(v)
	}
	d.checkCall(t)
	t.Logf("what the TS transport reported through onerror: %v", call["errors"])
}
