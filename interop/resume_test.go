package interop

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The resume tests (issue 12) cut a real client's streams with a
// testutil.FaultProxy in front of lifeline serving the demo tools, and
// record what the client library hands its application.
const (
	// toolDemoProgress sends, per step, one notifications/progress (to the
	// call's progress token) and one notifications/message "step i of n"
	// on the call's own stream, delay_ms before each step; it answers
	// "done n steps".
	toolDemoProgress = "lifeline_progress"
	// toolDemoNotify sends count notifications/message {seq, payload} to
	// the caller's session (its GET stream) and returns at once.
	toolDemoNotify = "lifeline_notify_session"

	// callSteps and callDelayMS make a call of about 2 s: the cut comes
	// after its second step or so, the client reconnects after the
	// server's retry (1 s), so part of the rest is replayed from the log
	// and part follows live.
	callSteps   = 10
	callDelayMS = 200
	// cutCallAfter is how many bytes of the call's answer (headers
	// included) the proxy forwards before it cuts, in the middle of the
	// next event's data line: the headers, the priming event and about two
	// steps' events.
	cutCallAfter = 1000

	// burstCount notifications of burstBytes each go out on the GET stream
	// at once; the proxy cuts the stream after cutGetAfter bytes of it, in
	// the middle of an event. A second burst, lateCount notifications of
	// lateBytes, goes out once the client has resumed.
	burstCount  = 300
	burstBytes  = 256
	cutGetAfter = 16 << 10
	lateCount   = 50
	lateBytes   = 1

	// handoverWait bounds the wait for notifications a client hands its
	// application after the call's answer (waitCall).
	handoverWait = 5 * time.Second
)

// resumeRig is lifeline with the demo tools behind a fault proxy.
type resumeRig struct {
	h     *harness
	proxy *testutil.FaultProxy
	// endpoint is the MCP endpoint through the proxy.
	endpoint string
}

// startResumeRig serves the demo tools with heartbeats off (so no ping
// and no ping answer crosses the proxy: the only POST during a call is
// the call) and lifeline's default event log, behind a fault proxy.
func startResumeRig(t *testing.T) *resumeRig {
	t.Helper()
	h := startServer(t, streamable.Config{HeartbeatInterval: streamable.Disabled},
		demotools.NewServer("lifeline-interop-demo", "1.0.0"))
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{h.URL}})
	u, err := url.Parse(h.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("wire:\n%s", h.Wire.dump(""))
		}
	})
	return &resumeRig{h: h, proxy: proxy, endpoint: proxy.URL() + u.Path}
}

// cutCall arms the proxy to cut the next POST's answer (the call: no other
// POST is in flight) after cutCallAfter bytes, inside an event.
func (r *resumeRig) cutCall(header string) {
	r.proxy.Arm(testutil.Fault{After: cutCallAfter, MidEvent: true, Match: func(ci testutil.ConnInfo) bool {
		return ci.Method == http.MethodPost && (header == "" || http.Header(ci.Header).Get(header) != "")
	}})
}

// cutGet arms the proxy to cut the next GET (the standalone stream) after
// cutGetAfter bytes, inside an event.
func (r *resumeRig) cutGet() {
	r.proxy.Arm(testutil.Fault{After: cutGetAfter, MidEvent: true, Match: func(ci testutil.ConnInfo) bool {
		return ci.Method == http.MethodGet
	}})
}

// resumes returns the GETs that carried a Last-Event-ID starting with prefix.
func (r *resumeRig) resumes(prefix string) []exchange {
	return r.h.Wire.find(func(ex exchange) bool {
		return ex.Method == http.MethodGet && ex.LastEventID != "" && strings.HasPrefix(ex.LastEventID, prefix)
	})
}

// checkCut fails unless the proxy made exactly one cut.
func (r *resumeRig) checkCut(t *testing.T) {
	t.Helper()
	if n := r.proxy.Stats().Cuts; n != 1 {
		t.Errorf("the proxy made %d cuts, want 1", n)
	}
}

// checkCallResumed checks the wire of a call the client resumed: the
// call's POST got no answer before its cut, and one GET with the id of
// an event of the call's stream (p...) got the rest and the answer.
func (r *resumeRig) checkCallResumed(t *testing.T) {
	t.Helper()
	r.checkCut(t)
	done := fmt.Sprintf("done %d steps", callSteps)
	for _, ex := range r.h.Wire.find(func(ex exchange) bool { return ex.RPC == "tools/call" }) {
		if strings.Contains(ex.Body, done) {
			t.Errorf("the call's own answer carried its result, so the cut came too late: %s", ex)
		}
	}
	res := r.resumes("p")
	if len(res) != 1 || res[0].Status != http.StatusOK || !strings.Contains(res[0].Body, done) {
		t.Errorf("GETs resuming the call's stream: %v, want one answered 200 that carried %q", res, done)
	}
}

// checkGetResumed checks the wire of a standalone stream the client
// resumed: one GET with the id of a get/ event, answered 200.
func (r *resumeRig) checkGetResumed(t *testing.T) {
	t.Helper()
	r.checkCut(t)
	res := r.resumes("get/")
	if len(res) != 1 || res[0].Status != http.StatusOK {
		t.Errorf("GETs resuming the standalone stream: %v, want one answered 200", res)
	}
}

// noteKey names one notification of lifeline_notify_session: the size of
// its payload (which tells the bursts apart) and its seq.
type noteKey struct{ bytes, seq int }

// deliveries records what a client library handed its application.
type deliveries struct {
	mu       sync.Mutex
	progress []float64       // notifications/progress values, in order
	stepLogs []string        // lifeline_progress's notifications/message data, in order
	notes    map[noteKey]int // lifeline_notify_session's notifications, times each
}

func newDeliveries() *deliveries { return &deliveries{notes: map[noteKey]int{}} }

func (d *deliveries) addProgress(v float64) {
	d.mu.Lock()
	d.progress = append(d.progress, v)
	d.mu.Unlock()
}

// addLog records the data of a notifications/message: a string from
// lifeline_progress, {seq, payload} from lifeline_notify_session.
func (d *deliveries) addLog(data any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch v := data.(type) {
	case string:
		d.stepLogs = append(d.stepLogs, v)
	case map[string]any:
		seq, _ := v["seq"].(float64)
		payload, _ := v["payload"].(string)
		d.notes[noteKey{len(payload), int(seq)}]++
	}
}

// count returns how many distinct notifications of payload size bytes
// arrived.
func (d *deliveries) count(bytes int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for k := range d.notes {
		if k.bytes == bytes {
			n++
		}
	}
	return n
}

// waitCall waits, bounded, until callSteps progress notifications and log
// messages were handed over, then checks them (checkCall). The Go SDK
// client hands notifications to their handlers on a goroutine of its own,
// in order but not before the call's answer: CallTool may return before
// the last step's handlers have run.
func (d *deliveries) waitCall(t *testing.T) {
	t.Helper()
	all := func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.progress) >= callSteps && len(d.stepLogs) >= callSteps
	}
	// A bounded poll; on time out, checkCall says what arrived.
	for deadline := time.Now().Add(handoverWait); !all() && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	d.checkCall(t)
}

// checkCall fails unless every step of a lifeline_progress call of
// callSteps arrived once, in order, as progress and as a log message.
func (d *deliveries) checkCall(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var wantP []float64
	var wantL []string
	for i := 1; i <= callSteps; i++ {
		wantP = append(wantP, float64(i))
		wantL = append(wantL, fmt.Sprintf("step %d of %d", i, callSteps))
	}
	if fmt.Sprint(d.progress) != fmt.Sprint(wantP) {
		t.Errorf("progress received %v, want %v (each once, in order)", d.progress, wantP)
	}
	if strings.Join(d.stepLogs, "|") != strings.Join(wantL, "|") {
		t.Errorf("log messages received %q, want %q", d.stepLogs, wantL)
	}
}

// missing returns the seqs of the notifications of payload size bytes,
// of count sent, that never arrived, and those that arrived more than
// once.
func (d *deliveries) missing(bytes, count int) (lost, doubled []int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for seq := range count {
		switch n := d.notes[noteKey{bytes, seq}]; {
		case n == 0:
			lost = append(lost, seq)
		case n > 1:
			doubled = append(doubled, seq)
		}
	}
	return lost, doubled
}

// checkNotes fails unless each of count notifications of payload size
// bytes arrived exactly once.
func (d *deliveries) checkNotes(t *testing.T, bytes, count int) {
	t.Helper()
	lost, doubled := d.missing(bytes, count)
	if len(lost) > 0 || len(doubled) > 0 {
		t.Errorf("notifications of %d bytes: lost %v, doubled %v (of %d)", bytes, lost, doubled, count)
	}
}

// cutCallAfterPriming arms the proxy to cut the next POST (with header
// set, when header is not empty) right after the priming event that opens
// its answer, in the middle of the first message after it. sid is a
// 2025-11-25 session to measure the priming event's end on (primingEnd).
func (r *resumeRig) cutCallAfterPriming(t *testing.T, sid, header string) {
	t.Helper()
	r.proxy.Arm(testutil.Fault{After: r.primingEnd(t, sid), MidEvent: true, Match: func(ci testutil.ConnInfo) bool {
		return ci.Method == http.MethodPost && (header == "" || http.Header(ci.Header).Get(header) != "")
	}})
}

// checkResumedFromPriming fails unless the client resumed the call from
// the id of the priming event that opened its answer: the cut came where
// cutCallAfterPriming meant it to.
func (r *resumeRig) checkResumedFromPriming(t *testing.T) {
	t.Helper()
	calls := r.h.Wire.find(func(ex exchange) bool {
		return ex.RPC == "tools/call" && ex.RPCID != probeID && strings.Contains(ex.Request, toolDemoProgress)
	})
	if len(calls) != 1 {
		t.Fatalf("%d calls of %s, want 1", len(calls), toolDemoProgress)
	}
	priming, _, _ := strings.Cut(strings.TrimPrefix(calls[0].Body, "id: "), "\n")
	if res := r.resumes("p"); len(res) != 1 || res[0].LastEventID != priming {
		t.Errorf("GETs resuming the call: %v, want one from the priming event's id %q (the cut came elsewhere)\nthe call's answer:\n%s",
			res, priming, calls[0].Body[:min(len(calls[0].Body), 1500)])
	}
}

// probeID is the JSON-RPC id of primingEnd's call: one digit, as the ids
// of the clients' calls, so that its stream's name is as long as theirs.
const probeID = "9"

// primingEnd returns how many bytes of a lifeline_progress call's answer
// (status line, headers and chunk framing included) go up to the end of
// its priming event. It measures a call of its own, on the session sid,
// sent as raw HTTP/1.1 straight to the server with the same headers, id
// length and progress token as the calls of the tests, so that their
// answers open with the same bytes. Like theirs, it pauses before each
// step, past the linger of a response's first notifications: a call that
// answered within it would be written whole, with a Content-Length and
// no chunk framing, and its priming event would end elsewhere.
func (r *resumeRig) primingEnd(t *testing.T, sid string) int64 {
	t.Helper()
	u, err := url.Parse(r.h.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, wait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":` + probeID + `,"method":"tools/call","params":{"name":"` + toolDemoProgress +
		`","arguments":{"steps":2,"delay_ms":10},"_meta":{"progressToken":"gosdk-resume"}}}`
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: %s\r\n"+
		"Content-Length: %d\r\n\r\n%s", u.Path, u.Host, sid, pinnedVersion, len(body), body)
	var got []byte
	buf := make([]byte, 4096)
	for len(got) < 64<<10 {
		n, err := conn.Read(buf)
		got = append(got, buf[:n]...)
		if i := bytes.Index(got, []byte("retry: 1000\ndata: \n\n")); i >= 0 {
			return int64(i + len("retry: 1000\ndata: \n\n"))
		}
		if err != nil {
			t.Fatalf("the probe call's answer has no priming event: %v\n%s", err, got)
		}
	}
	t.Fatalf("the probe call's answer has no priming event in its first %d bytes", len(got))
	return 0
}
