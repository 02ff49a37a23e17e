package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// steppedTool adds "stepped": it sends progress 1..steps, each once the
// test lets it (a value on step), then returns "done" on one more step.
// A cancelled call returns its context's cause.
func steppedTool(steps int, step <-chan struct{}) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("stepped"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			srv := server.ServerFromContext(ctx)
			for i := 1; i <= steps+1; i++ {
				select {
				case <-step:
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				if i > steps {
					break
				}
				_ = srv.SendNotificationToClient(ctx, "notifications/progress",
					map[string]any{"progressToken": "tok", "progress": i, "total": steps})
			}
			return mcp.NewToolResultText("done"), nil
		})
	}
}

func callStepped(t *testing.T, ctx context.Context, c *testutil.Client, id any) *testutil.Stream {
	t.Helper()
	s, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "stepped", "_meta": map[string]any{"progressToken": "tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	wantStatus(t, "tools/call", s.Status, http.StatusOK, s.Body)
	return s
}

// progressOf returns the progress value of a notifications/progress, or 0.
func progressOf(t *testing.T, m testutil.Message) int {
	t.Helper()
	if m.Method != "notifications/progress" {
		return 0
	}
	var p struct {
		Progress int `json:"progress"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	return p.Progress
}

// postReader reads a POST stream's (or its resume's) events: progress
// values in order, each id once, the final answer.
type postReader struct {
	t        *testing.T
	progress []int
	ids      map[string]bool
	lastID   string
	answer   *testutil.Message
}

func (pr *postReader) take(ev testutil.Event) {
	t := pr.t
	t.Helper()
	if ev.ID != "" {
		if pr.ids[ev.ID] {
			t.Fatalf("event id %q arrived twice", ev.ID)
		}
		pr.ids[ev.ID] = true
		pr.lastID = ev.ID
	}
	if !ev.HasMessage() {
		return
	}
	if ev.ID == "" {
		t.Fatalf("a message of a resumable POST stream has no id: %+v", ev)
	}
	m, err := ev.Message()
	if err != nil {
		t.Fatal(err)
	}
	if p := progressOf(t, m); p > 0 {
		pr.progress = append(pr.progress, p)
		return
	}
	if m.Method == "" {
		pr.answer = &m
	}
}

// until reads s until want progress values arrived (or the answer, with
// want < 0), failing on anything out of order.
func (pr *postReader) until(ctx context.Context, s *testutil.Stream, want int) {
	pr.t.Helper()
	for (want >= 0 && len(pr.progress) < want) || (want < 0 && pr.answer == nil) {
		ev, err := s.Next(ctx)
		if err != nil {
			pr.t.Fatalf("after progress %v: %v", pr.progress, err)
		}
		pr.take(ev)
	}
}

func (pr *postReader) check(steps int, id string) {
	t := pr.t
	t.Helper()
	for i, p := range pr.progress {
		if p != i+1 {
			t.Fatalf("progress %v, want 1..%d once each in order", pr.progress, steps)
		}
	}
	if len(pr.progress) != steps {
		t.Fatalf("progress %v, want 1..%d", pr.progress, steps)
	}
	if pr.answer == nil || string(pr.answer.ID) != id || !strings.Contains(string(pr.answer.Result), "done") {
		t.Fatalf("answer %+v, want the result of call %s", pr.answer, id)
	}
}

// A POST stream cut in the middle of a tool's progress: the request goes
// on, and a GET with the last id the client got delivers every progress
// notification it missed, once, in order, then the result, and ends.
func TestCutPostStreamResumesWithEveryProgressAndTheResult(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			const steps = 6
			step := make(chan struct{})
			r := newRig(t, streamable.Config{}, steppedTool(steps, step))
			proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
			c := testutil.NewClient(proxy.URL())
			initializeAt(t, c, version)
			ctx := testutil.Context(t, wait)
			call := callStepped(t, ctx, c, 7)
			pr := &postReader{t: t, ids: map[string]bool{}}
			for range 3 {
				step <- struct{}{}
			}
			pr.until(ctx, call, 3)
			if proxy.CutAll() == 0 {
				t.Fatal("the proxy had no connection to cut")
			}
			// The request goes on while the client is away.
			for range steps - 3 + 1 {
				select {
				case step <- struct{}{}:
				case <-ctx.Done():
					t.Fatal("the tool stopped taking steps once its stream was cut: the request was cancelled")
				}
			}
			resumed := openResume(t, c, pr.lastID)
			wantStatus(t, "GET resuming the POST stream", resumed.Status, http.StatusOK, resumed.Body)
			pr.until(ctx, resumed, -1)
			pr.check(steps, "7")
			select {
			case <-resumed.Ended():
			case <-ctx.Done():
				t.Fatal("the resumed stream did not end after the answer")
			}
		})
	}
}

// A client that resumes while the request still runs follows it live: it
// gets what it missed, then each new progress notification as it is sent,
// then the result; the session's standalone GET stream is not affected.
func TestResumedPostStreamFollowsTheRunningRequest(t *testing.T) {
	const steps = 5
	step := make(chan struct{})
	r := newRig(t, streamable.Config{}, steppedTool(steps, step))
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
	c := testutil.NewClient(proxy.URL())
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	direct := testutil.NewClient(r.ts.URL) // the standalone stream, not through the proxy
	direct.SessionID, direct.ProtocolVersion = c.SessionID, c.ProtocolVersion
	get := r.stream(direct)
	call := callStepped(t, ctx, c, "x-1")
	pr := &postReader{t: t, ids: map[string]bool{}}
	step <- struct{}{}
	pr.until(ctx, call, 1)
	proxy.CutAll()
	step <- struct{}{}
	resumed := openResume(t, c, pr.lastID)
	wantStatus(t, "GET resuming the POST stream beside a live standalone stream", resumed.Status, http.StatusOK, resumed.Body)
	pr.until(ctx, resumed, 2)
	for i := 3; i <= steps; i++ {
		step <- struct{}{}
		pr.until(ctx, resumed, i)
	}
	step <- struct{}{}
	pr.until(ctx, resumed, -1)
	pr.check(steps, `"x-1"`)
	notify(t, r, c.SessionID, "still-live")
	if m, err := get.NextMatching(ctx, isLog); err != nil || logData(t, m) != "still-live" {
		t.Fatalf("the standalone stream: %+v %v", m, err)
	}
}

// SSE polling (2025-11-25): a handler that calls CloseSSEStream ends its
// response after the priming event; the client's GET with that id gets the
// result.
func TestCloseSSEStreamLetsTheClientPollForTheResult(t *testing.T) {
	closed := make(chan bool, 1)
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("polled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			closed <- streamable.CloseSSEStream(ctx)
			return mcp.NewToolResultText("done after the stream closed"), nil
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "polled"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	pr := &postReader{t: t, ids: map[string]bool{}}
	first, err := call.Next(ctx)
	if err != nil || !first.IsPriming() || first.Retry != "1000" {
		t.Fatalf("first event %+v (%v), want a priming event with retry 1000", first, err)
	}
	pr.take(first)
	for {
		ev, err := call.Next(ctx)
		if err != nil {
			break // the stream ended
		}
		pr.take(ev)
	}
	if pr.answer != nil {
		t.Fatal("the answer came on the closed stream")
	}
	if !<-closed {
		t.Fatal("CloseSSEStream reported false")
	}
	resumed := openResume(t, c, pr.lastID)
	wantStatus(t, "GET after polling", resumed.Status, http.StatusOK, resumed.Body)
	pr.until(ctx, resumed, -1)
	if string(pr.answer.ID) != "3" || !strings.Contains(string(pr.answer.Result), "done after") {
		t.Fatalf("answer %+v", pr.answer)
	}
}

// A Last-Event-ID naming a request stream the log does not hold, or one of
// another session, gets 400 with a JSON-RPC error that says so, and none of
// the other session's events.
func TestResumeOfAnUnknownOrForeignPostStreamIsRefused(t *testing.T) {
	const steps = 2
	step := make(chan struct{})
	r := newRig(t, streamable.Config{}, steppedTool(steps, step))
	ctx := testutil.Context(t, wait)
	a, b := r.session(), r.session()
	call := callStepped(t, ctx, a, 1)
	pr := &postReader{t: t, ids: map[string]bool{}}
	step <- struct{}{}
	pr.until(ctx, call, 1)
	for _, tc := range []struct {
		who *testutil.Client
		id  string
	}{
		{b, pr.lastID},
		{a, "p0123456789abcdef-MQ/1-1-999"},
		{a, strings.SplitN(pr.lastID, "/", 2)[0] + "/nope"},
	} {
		s := openResume(t, tc.who, tc.id)
		wantStatus(t, "GET with Last-Event-ID "+tc.id, s.Status, http.StatusBadRequest, s.Body)
		if !strings.Contains(string(s.Body), "Last-Event-ID") || strings.Contains(string(s.Body), "progress") {
			t.Fatalf("body %s", s.Body)
		}
	}
	for range steps {
		step <- struct{}{}
	}
	pr.until(ctx, call, -1)
	pr.check(steps, "1")
}

// A request whose response was let go of and that no client comes back
// for is bounded: one idle TTL later it is cancelled, so it cannot keep
// its session alive forever.
func TestLetGoRequestIsCancelledAfterAnIdleTTL(t *testing.T) {
	causes := make(chan error, 1)
	r := newRig(t, streamable.Config{IdleTTL: testIdleTTL}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("forever"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		})
	})
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
	c := testutil.NewClient(proxy.URL())
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "forever"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	if ev, err := call.Next(ctx); err != nil || !ev.IsPriming() {
		t.Fatalf("first event %+v (%v), want the priming event", ev, err)
	}
	proxy.CutAll()
	select {
	case cause := <-causes:
		if cause == nil || !strings.Contains(cause.Error(), "idle TTL") {
			t.Fatalf("the request was cancelled with %v, want the idle-TTL bound", cause)
		}
	case <-ctx.Done():
		t.Fatal("the let-go request still runs")
	}
}

// A session holds at most 32 resumed request streams at once: the 33rd
// GET resuming one gets 409 with a JSON-RPC error saying so, and the
// others are untouched (the request still answers on each of them).
func TestResumedRequestStreamsOfASessionAreBounded(t *testing.T) {
	const bound = 32
	step := make(chan struct{})
	r := newRig(t, streamable.Config{}, steppedTool(1, step))
	c := r.session()
	ctx := testutil.Context(t, wait)
	call := callStepped(t, ctx, c, 9)
	pr := &postReader{t: t, ids: map[string]bool{}}
	step <- struct{}{}
	pr.until(ctx, call, 1)
	resumers := make([]*testutil.Stream, 0, bound)
	for range bound {
		s := openResume(t, c, pr.lastID)
		wantStatus(t, "a resume within the bound", s.Status, http.StatusOK, s.Body)
		resumers = append(resumers, s)
	}
	over := openResume(t, c, pr.lastID)
	wantStatus(t, "the resume past the bound", over.Status, http.StatusConflict, over.Body)
	if !strings.Contains(string(over.Body), "32 resumed request streams") {
		t.Fatalf("body %s does not say what was wrong", over.Body)
	}
	step <- struct{}{} // the answer
	for i, s := range resumers {
		for {
			m, err := s.NextMessage(ctx)
			if err != nil {
				t.Fatalf("resumer %d: %v", i, err)
			}
			if m.Method == "" {
				break
			}
		}
	}
}
