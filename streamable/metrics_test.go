package streamable_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Attributes the metric tests look for.
var (
	attrMethod  = func(m string) attribute.KeyValue { return attribute.String("mcp.method.name", m) }
	attrVersion = attribute.String("mcp.protocol.version", testutil.ProtocolVersion)
	attrTool    = func(n string) attribute.KeyValue { return attribute.String("gen_ai.tool.name", n) }
	attrErr     = func(e string) attribute.KeyValue { return attribute.String("error.type", e) }
	attrStatus  = func(s int) attribute.KeyValue { return attribute.Int("http.response.status_code", s) }
	attrCause   = func(c string) attribute.KeyValue { return attribute.String("lifeline.cause", c) }
	attrKind    = func(k string) attribute.KeyValue { return attribute.String("lifeline.stream.kind", k) }
	attrEnd     = func(c string) attribute.KeyValue { return attribute.String("lifeline.end_cause", c) }
	attrOp      = func(o string) attribute.KeyValue { return attribute.String("lifeline.store.operation", o) }
)

// metricScenario is what runMetricScenario did, for the checks.
type metricScenario struct {
	live, ended metrics  // collected with GET stream s3 live, and at the end
	sessionIDs  []string // every session id the scenario used
	requestID   string   // a request id it sent
}

// scenarioRequestID is the id of one tools/call the scenario sends, which
// no metric attribute may carry.
const scenarioRequestID = "req-7f3a9c-unbounded"

// runMetricScenario drives a transport over real HTTP through the moments
// the metrics count: initialize, calls (one a tool error, one an unknown
// method), a GET stream whose client answers a ping and then goes silent
// and is taken over (a dead peer), a resume that replays an event, a 409,
// a stalled GET reader whose queue overflows (squeezed, write deadline,
// refused and carried messages), DELETE, and a request for the deleted
// session (404). The heartbeat runs on a manual clock, so pings happen
// only when the test says: one by the clock, two by the takeover's probe.
func runMetricScenario(t *testing.T) metricScenario {
	mr := newMeterRig(t)
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	r := newRig(t, streamable.Config{MeterProvider: mr.mp, Clock: clock, HeartbeatInterval: time.Second,
		WriteTimeout: 200 * time.Millisecond, QueueSize: 32})
	ctx := testutil.Context(t, wait)
	var sc metricScenario

	c := r.session()
	sc.sessionIDs = append(sc.sessionIDs, c.SessionID)
	resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": scenarioRequestID, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "echo", resp.Status, http.StatusOK, resp.Body)
	sc.requestID = scenarioRequestID
	if resp, err = c.CallTool(ctx, "echo", map[string]any{}); err != nil { // no text: isError
		t.Fatal(err)
	}
	if last, _ := resp.Last(); !strings.Contains(string(last.Result), `"isError":true`) {
		t.Fatalf("echo without text: %s", last.Result)
	}
	if resp, err = c.Call(ctx, "no/such-method", nil); err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); last.Error == nil || last.Error.Code != -32601 {
		t.Fatalf("unknown method: %+v", last)
	}

	// GET #1 answers the clock's ping, then goes silent: GET #2 probes it
	// (two pings), finds it dead and takes its place.
	s1 := r.stream(c)
	clock.Advance(time.Second)
	ping, err := s1.NextMatching(ctx, isPing)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil || resp.Status != http.StatusAccepted {
		t.Fatalf("pong: %v %+v", err, resp)
	}
	s2 := r.stream(c)
	select {
	case <-s1.Ended():
	case <-ctx.Done():
		t.Fatal("GET #1 was not taken over")
	}
	// Two notifications on GET #2; after it closes, GET #3 resumes after
	// the first and is replayed the second.
	if _, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 2}); err != nil {
		t.Fatal(err)
	}
	first, err := s2.NextMessageEvent(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.NextMessageEvent(ctx); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	testutil.Eventually(t, wait, "GET #2 to end", func() bool { return r.h.Stats().GetStreams == 0 })
	c.Header = map[string]string{"Last-Event-ID": first.ID}
	s3 := r.stream(c)
	c.Header = nil
	if ev, err := s3.NextMessageEvent(ctx); err != nil || ev.ID == first.ID {
		t.Fatalf("resume: %+v, %v", ev, err)
	}
	sc.live = mr.collect()
	// GET #4 while GET #3 is live (its client never answered a ping): 409.
	s4, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s4.Close()
	wantStatus(t, "GET #4", s4.Status, http.StatusConflict, s4.Body)

	// A second session whose GET reader stalls under a flood larger than
	// its queue.
	c2 := r.session()
	sc.sessionIDs = append(sc.sessionIDs, c2.SessionID)
	sr, err := testutil.DialStalledStream(ctx, r.ts.URL, c2.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	if status, err := sr.Status(ctx); err != nil || !strings.Contains(status, "200") {
		t.Fatalf("stalled GET: %q, %v", status, err)
	}
	if _, err := c2.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 100, "bytes": floodBytes}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, "the stalled stream to end", func() bool { return r.h.Stats().GetStreams == 1 })

	s3.Close()
	if resp, err = c.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	if resp, err = c.CallTool(ctx, "echo", map[string]any{"text": "gone"}); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "call after DELETE", resp.Status, http.StatusNotFound, resp.Body)
	r.quiesce()
	sc.ended = mr.collect()
	return sc
}

// Each metric shows what the scenario did, with its attributes.
func TestMetricsScenario(t *testing.T) {
	sc := runMetricScenario(t)
	live, ms := sc.live, sc.ended

	// Sessions: two created, one deleted (its duration recorded, without
	// error.type), one still open.
	ms.check(t, 2, "lifeline.sessions.created")
	ms.check(t, 1, "lifeline.sessions.open")
	ms.check(t, 1, "lifeline.sessions.ended", attrEnd("delete"))
	ms.check(t, 1, "lifeline.sessions.ended")
	if p, ok := ms.exact("mcp.server.session.duration", attrVersion); !ok || p.value != 1 {
		t.Errorf("session duration of the deleted session missing\n%s", ms.dump("mcp.server.session.duration"))
	}

	// Operations, each with its method, version and transport.
	common := []attribute.KeyValue{attrVersion, attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http")}
	if p, ok := ms.exact("mcp.server.operation.duration", append(common, attrMethod("initialize"))...); !ok || p.value != 2 {
		t.Errorf("initialize: %+v %v\n%s", p, ok, ms.dump("mcp.server.operation.duration"))
	}
	if p, ok := ms.exact("mcp.server.operation.duration", append(common, attrMethod("tools/call"), attrTool("echo"))...); !ok || p.value != 1 {
		t.Errorf("tools/call echo: %+v %v\n%s", p, ok, ms.dump("mcp.server.operation.duration"))
	}
	if p, ok := ms.exact("mcp.server.operation.duration", append(common, attrMethod("tools/call"), attrTool("echo"), attrErr("tool_error"))...); !ok || p.value != 1 {
		t.Errorf("tools/call echo, tool error: %+v %v\n%s", p, ok, ms.dump("mcp.server.operation.duration"))
	}
	if p, ok := ms.exact("mcp.server.operation.duration", append(common, attrMethod("_OTHER"), attrErr("-32601"))...); !ok || p.value != 1 {
		t.Errorf("unknown method: %+v %v\n%s", p, ok, ms.dump("mcp.server.operation.duration"))
	}

	// Streams: GET #3 open while live; none at the end.
	live.check(t, 1, "lifeline.streams.open", attrKind("get"))
	ms.check(t, 0, "lifeline.streams.open", attrKind("get"))
	ms.check(t, 0, "lifeline.streams.open")

	// Heartbeat: the clock's ping and the probe's two; one pong; GET #1
	// dead and taken over; GET #4's 409.
	ms.check(t, 3, "lifeline.heartbeat.pings")
	ms.check(t, 1, "lifeline.heartbeat.pongs")
	ms.check(t, 1, "lifeline.heartbeat.dead_peers")
	ms.check(t, 1, "lifeline.streams.takeovers")
	ms.check(t, 1, "lifeline.streams.conflicts")

	// HTTP answers by status and cause.
	ms.check(t, 1, "lifeline.http.responses", attrStatus(409), attrCause("conflict"))
	ms.check(t, 1, "lifeline.http.responses", attrStatus(404), attrCause("unknown_session"))
	ms.check(t, 1, "lifeline.http.responses", attrStatus(200), attrCause("deleted"))
	ms.atLeast(t, 4, "lifeline.http.responses", attrStatus(200), attrCause("stream"))
	ms.atLeast(t, 2, "lifeline.http.responses", attrStatus(202), attrCause("accepted"))
	ms.atLeast(t, 6, "lifeline.http.responses", attrStatus(200), attrCause("ok"))

	// The stalled reader: queue overflow squeezes its stream, whose write
	// then hits its deadline; what it took is carried, the rest refused.
	ms.check(t, 1, "lifeline.streams.squeezed")
	ms.check(t, 1, "lifeline.writes.deadline_exceeded")
	ms.atLeast(t, 1, "lifeline.messages.carried")
	ms.atLeast(t, 1, "lifeline.messages.refused")
	ms.atLeast(t, 32+2, "lifeline.messages.queued")

	// Store calls by operation (the default memory store), timed.
	ms.check(t, 2, "lifeline.store.calls", attrOp("Create"))
	ms.check(t, 1, "lifeline.store.calls", attrOp("Terminate"))
	ms.atLeast(t, 1, "lifeline.store.calls", attrOp("Touch"))
	ms.check(t, 2, "lifeline.store.duration", attrOp("Create"))

	// Event log: the notifications written on GET streams recorded, one
	// replayed to GET #3.
	ms.atLeast(t, 2, "lifeline.events.recorded")
	ms.check(t, 1, "lifeline.events.replayed")
}

// No metric attribute carries a session id, a request id, or a key that
// names one: the metrics' attribute sets stay bounded.
func TestMetricsCarryNoSessionOrRequestID(t *testing.T) {
	sc := runMetricScenario(t)
	if len(sc.ended) == 0 {
		t.Fatal("nothing recorded")
	}
	for name := range sc.ended {
		for _, p := range sc.ended.points(name) {
			for _, kv := range p.attrs.ToSlice() {
				switch kv.Key {
				case "mcp.session.id", "jsonrpc.request.id":
					t.Errorf("%s has attribute %s", name, kv.Key)
				}
				v := kv.Value.Emit()
				for _, id := range append(sc.sessionIDs, sc.requestID) {
					if strings.Contains(v, id) {
						t.Errorf("%s: attribute %s=%q carries id %q", name, kv.Key, v, id)
					}
				}
			}
		}
	}
}
