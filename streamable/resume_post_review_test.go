package streamable_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A 2025-11-25 response opened by the request's first message carries the
// priming event, then that message. A client whose connection dropped
// after the priming event resumes from its id: the first message, which
// it never got, is replayed with the rest.
func TestResumeFromThePrimingEventReplaysTheFirstMessage(t *testing.T) {
	resumeFromPriming(t, streamable.Config{})
}

// resumeFromPriming runs a stepped call whose connection drops after the
// priming event on a rig with cfg (heartbeats off: nothing opens the
// response before the first message), resumes from the priming event's
// id, and fails the test unless every step and the answer arrive.
func resumeFromPriming(t *testing.T, cfg streamable.Config) {
	t.Helper()
	const steps = 3
	step := make(chan struct{}, 1)
	cfg.HeartbeatInterval = streamable.Disabled
	r := newRig(t, cfg, steppedTool(steps, step))
	c := r.client()
	initializeAt(t, c, "2025-11-25")
	ctx := testutil.Context(t, wait)
	step <- struct{}{} // progress 1 opens the response
	call := callStepped(t, ctx, c, 5)
	first, err := call.Next(ctx)
	if err != nil || !first.IsPriming() {
		t.Fatalf("first event %+v (%v), want the priming event", first, err)
	}
	pr := &postReader{t: t, ids: map[string]bool{}}
	pr.take(first)
	call.Close() // the connection drops after the priming event
	for range steps {
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the tool stopped taking steps once its stream was cut: the request was cancelled")
		}
	}
	resumed := openResume(t, c, pr.lastID)
	wantStatus(t, "GET resuming from the priming event", resumed.Status, http.StatusOK, resumed.Body)
	pr.until(ctx, resumed, -1)
	pr.check(steps, "5")
}

// A request that outlives its session's termination (it ignores the
// cancellation past CleanupTimeout) and sends its first message then:
// its response is closed before it could open, and let go of (the
// handler returns). Its answer, when it comes, must not be written on
// the ResponseWriter of the handler that has returned.
func TestAnswerOfALetGoRequestIsNotWrittenAfterItsHandlerReturned(t *testing.T) {
	started, send, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
	sent := make(chan error, 1)
	srv := demotools.NewServer("review", "1")
	srv.AddTool(mcp.NewTool("stubborn"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		<-send // past the session's end: it ignores its context
		sent <- server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
			map[string]any{"progressToken": "tok", "progress": 1})
		<-finish
		return mcp.NewToolResultText("late"), nil
	})
	guard := &writerGuard{}
	r := bbStart(t, srv, streamable.Config{HeartbeatInterval: streamable.Disabled, CleanupTimeout: 50 * time.Millisecond}, guard.wrap)
	ctx := testutil.Context(t, wait)
	c := r.session(t, ctx)
	call := bbPostAsync(ctx, c, bbToolCall(9, "stubborn", nil, map[string]any{"progressToken": "tok"}))
	bbAwait(t, started, wait, "the tool started")
	if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %+v %v", resp, err)
	}
	close(send)
	if err := bbAwait(t, sent, wait, "the tool sent its notification"); err != nil {
		t.Fatalf("the tool's notification: %v", err)
	}
	if res := bbAwait(t, call, wait, "the POST answered"); res.err != nil {
		t.Fatalf("POST: %v", res.err)
	}
	close(finish)
	testutil.Eventually(t, wait, "the request finished", func() bool { return r.h.Stats().PostStreams == 0 })
	if late := guard.uses(); len(late) > 0 {
		t.Fatalf("the ResponseWriter was used after its handler returned: %v", late)
	}
}

// A Last-Event-ID that pairs a stream name with the log id of an event of
// another stream of the same session is refused before anything of that
// other stream is written: 400 for a request stream's name, a fresh
// standalone stream (nothing replayed) for the GET stream's.
func TestResumeWithAnotherStreamsLogIDReplaysNothingOfIt(t *testing.T) {
	const steps = 2
	step := make(chan struct{})
	r := newRig(t, streamable.Config{}, steppedTool(steps, step))
	ctx := testutil.Context(t, wait)
	c := r.session()
	call := callStepped(t, ctx, c, 1)
	pr := &postReader{t: t, ids: map[string]bool{}}
	first, err := call.Next(ctx)
	if err != nil || !first.IsPriming() {
		t.Fatalf("first event %+v (%v), want the priming event", first, err)
	}
	pr.take(first)
	step <- struct{}{}
	pr.until(ctx, call, 1) // progress 1 follows the priming event in the log
	stream, logID, _ := strings.Cut(first.ID, "/")
	other := "p0123456789abcdef-MQ"
	if stream == other {
		t.Fatalf("the call's stream is named %s", stream)
	}
	// A request stream's name with the call's log id.
	s := openResume(t, c, other+"/"+logID)
	wantStatus(t, "GET with Last-Event-ID "+other+"/"+logID, s.Status, http.StatusBadRequest, s.Body)
	if !strings.Contains(string(s.Body), "Last-Event-ID") {
		t.Fatalf("body %s does not say what was wrong", s.Body)
	}
	// The standalone stream's name with the call's log id.
	get := openResume(t, c, "get/"+logID)
	wantStatus(t, "GET with Last-Event-ID get/"+logID, get.Status, http.StatusOK, get.Body)
	notify(t, r, c.SessionID, "marker")
	for {
		ev, err := get.Next(ctx)
		if err != nil {
			t.Fatalf("the standalone stream ended before the marker: %v", err)
		}
		if !ev.HasMessage() {
			continue
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		if isLog(m) && logData(t, m) == "marker" {
			break
		}
		t.Fatalf("the standalone stream resumed from another stream's id carried %s (id %q)", ev.Data, ev.ID)
	}
	for range steps {
		step <- struct{}{}
	}
	pr.until(ctx, call, -1)
	pr.check(steps, "1")
}

// The idle-TTL bound of a let-go request is for a request no client comes
// back for: one whose client resumed and follows its stream runs on past
// it, to its answer.
func TestFollowedLetGoRequestOutlivesTheIdleTTL(t *testing.T) {
	const steps = 2
	step := make(chan struct{})
	r := newRig(t, streamable.Config{IdleTTL: testIdleTTL}, steppedTool(steps, step))
	proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}})
	c := testutil.NewClient(proxy.URL())
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	call := callStepped(t, ctx, c, 4)
	pr := &postReader{t: t, ids: map[string]bool{}}
	step <- struct{}{}
	pr.until(ctx, call, 1)
	if proxy.CutAll() == 0 {
		t.Fatal("the proxy had no connection to cut")
	}
	resumed := openResume(t, c, pr.lastID)
	wantStatus(t, "GET resuming the POST stream", resumed.Status, http.StatusOK, resumed.Body)
	// Not a synchronisation: the window in which the bound must not end
	// a request that is followed.
	window := time.NewTimer(5 * testIdleTTL)
	defer window.Stop()
	<-window.C
	for range steps {
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the tool stopped taking steps: the followed request was cancelled")
		}
	}
	pr.until(ctx, resumed, -1)
	pr.check(steps, "4")
}

// A let-go request is ended by its session's end, not by a keep-alive
// that fails on the connection its client dropped: clients that leave
// with a resumable id leave their requests running, whichever of the
// connection's end and a keep-alive's failed write the transport sees
// first.
func TestCutRequestIsNotCancelledByAFailedKeepAlive(t *testing.T) {
	const calls = 24
	causes := make(chan error, calls)
	r := newRig(t, streamable.Config{HeartbeatInterval: time.Millisecond}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("forever"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	for i := range calls {
		call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call",
			"params": map[string]any{"name": "forever"}})
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := call.Next(ctx); err != nil || !ev.IsPriming() {
			t.Fatalf("call %d: first event %+v (%v), want the priming event", i, ev, err)
		}
		call.Close()
	}
	// Every let-go request ends with its session's end.
	if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %+v %v", resp, err)
	}
	for i := range calls {
		select {
		case cause := <-causes:
			if cause != nil && strings.Contains(cause.Error(), "sse write") {
				t.Fatalf("request %d of %d was cancelled by a failed write: %v", i+1, calls, cause)
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d requests ended", i, calls)
		}
	}
}

// What Config.ContextFunc derives for a request applies to it whether or
// not its response is resumable: a deadline it sets ends the request.
// (Only the client's leaving no longer does, once it can resume.)
func TestContextFuncDeadlineEndsAResumableRequest(t *testing.T) {
	causes := make(chan error, 1)
	errDeadline := errors.New("the ContextFunc's deadline")
	cfg := streamable.Config{ContextFunc: func(ctx context.Context, _ *http.Request) context.Context {
		ctx, cancel := context.WithTimeoutCause(ctx, 50*time.Millisecond, errDeadline)
		context.AfterFunc(ctx, cancel) // released with the context
		return ctx
	}}
	r := newRig(t, cfg, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("forever"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "forever"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	select {
	case cause := <-causes:
		if !errors.Is(cause, errDeadline) {
			t.Fatalf("the request ended with %v, want the ContextFunc's deadline", cause)
		}
	case <-ctx.Done():
		t.Fatal("the ContextFunc's deadline did not end the request")
	}
}

// A server-to-client request (sampling) made on a request's response that
// is cut before the client got it: the client's resume replays it, the
// client's answer (POSTed) reaches the waiting call, and the resumed
// stream carries the request's result.
func TestSamplingOnACutPostStreamIsAnsweredAfterTheResume(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("asks"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := server.ServerFromContext(ctx).RequestSampling(ctx, mcp.CreateMessageRequest{
				CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 5, Messages: []mcp.SamplingMessage{{
					Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: "hello"}}}},
			})
			if err != nil {
				return mcp.NewToolResultText("sampling failed: " + err.Error()), nil
			}
			return mcp.NewToolResultText("sampled " + res.Model), nil
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 8, "method": "tools/call",
		"params": map[string]any{"name": "asks"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(call.Close)
	first, err := call.Next(ctx)
	if err != nil || !first.IsPriming() {
		t.Fatalf("first event %+v (%v), want the priming event", first, err)
	}
	call.Close() // cut: whatever followed the priming event is lost
	resumed := openResume(t, c, first.ID)
	wantStatus(t, "GET resuming the POST stream", resumed.Status, http.StatusOK, resumed.Body)
	req, err := resumed.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "sampling/createMessage" })
	if err != nil {
		t.Fatalf("the sampling request was not replayed: %v", err)
	}
	reply, err := c.Reply(ctx, req.ID, map[string]any{"role": "assistant", "model": "m1",
		"content": map[string]any{"type": "text", "text": "hi"}})
	if err != nil || reply.Status != http.StatusAccepted {
		t.Fatalf("the client's answer: %+v %v", reply, err)
	}
	answer, err := resumed.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "" })
	if err != nil {
		t.Fatalf("no answer on the resumed stream: %v", err)
	}
	if string(answer.ID) != "8" || !strings.Contains(string(answer.Result), "sampled m1") {
		t.Fatalf("answer %s %s, want the sampled result of call 8", answer.ID, answer.Result)
	}
}

// A client that leaves just as its request answers: the transport's
// reaction to its leaving (closing the response, asking the writer to let
// go of it) never touches the ResponseWriter after the handler returned.
// (The race is narrow: many calls make it likely, not certain, on code
// that has it; code without it passes every time.)
func TestClientLeavingAsTheRequestAnswersDoesNotTouchTheReturnedResponse(t *testing.T) {
	srv := demotools.NewServer("review", "1")
	srv.AddTool(mcp.NewTool("quick"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, "notifications/progress",
			map[string]any{"progressToken": "tok", "progress": 1})
		return mcp.NewToolResultText("ok"), nil
	})
	guard := &writerGuard{}
	r := bbStart(t, srv, streamable.Config{HeartbeatInterval: streamable.Disabled}, guard.wrap)
	ctx := testutil.Context(t, 3*wait)
	c := r.session(t, ctx)
	const calls = 300
	for i := range calls {
		call, err := c.PostStream(ctx, bbToolCall(i, "quick", nil, map[string]any{"progressToken": "tok"}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := call.Next(ctx); err != nil { // an id is out: the client may leave
			t.Fatalf("call %d: %v", i, err)
		}
		call.Close()
	}
	testutil.Eventually(t, wait, "every call finished", func() bool { return r.h.Stats().PostStreams == 0 })
	if late := guard.uses(); len(late) > 0 {
		t.Fatalf("%d of %d calls used the ResponseWriter after their handler returned, first: %s", len(late), calls, late[0])
	}
}
