package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// sessionsOf records the sessions mcp-go registers, so that a test can send
// server-to-client requests with the session itself (they go on its GET
// stream), as a server does outside any request.
func sessionsOf(got chan<- server.ClientSession) func(*server.MCPServer) {
	return func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) {
			if !streamable.IsBroadcastTap(cs) {
				got <- cs
			}
		})
		server.WithHooks(hooks)(s)
		s.EnableSampling()
	}
}

func sampleWith(ctx context.Context, cs server.ClientSession, text string) error {
	_, err := cs.(server.SessionWithSampling).RequestSampling(ctx, mcp.CreateMessageRequest{
		CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(text)}},
			MaxTokens: 10,
		}})
	return err
}

func isSampling(m testutil.Message) bool {
	return m.IsRequest() && m.Method == "sampling/createMessage"
}

// withdrawRig is a session whose registered ClientSession the test holds.
func withdrawRig(t *testing.T, cfg streamable.Config, setup ...func(*server.MCPServer)) (*rig, *testutil.Client, server.ClientSession) {
	t.Helper()
	got := make(chan server.ClientSession, 1)
	r := newRig(t, cfg, append(setup, sessionsOf(got))...)
	c := r.session()
	select {
	case cs := <-got:
		return r, c, cs
	default:
		t.Fatal("the session was not registered")
		return nil, nil, nil
	}
}

// A sampling request whose caller gave up before any GET stream took it is
// withdrawn: the stream the client opens afterwards never delivers it (the
// client would run an LLM call nobody waits for).
func TestTimedOutRequestIsNotDeliveredLater(t *testing.T) {
	r, c, cs := withdrawRig(t, streamable.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := sampleWith(ctx, cs, "dead"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call failed with %v, want its deadline", err)
	}
	s := r.stream(c)
	answerLiveSampling(t, c, cs, s)
}

// answerLiveSampling sends a sampling request, requires it to be the first
// one s delivers, and answers it.
func answerLiveSampling(t *testing.T, c *testutil.Client, cs server.ClientSession, s *testutil.Stream) {
	t.Helper()
	ctx := testutil.Context(t, wait)
	live := make(chan error, 1)
	go func() { live <- sampleWith(ctx, cs, "live") }()
	m, err := s.NextMatching(ctx, isSampling)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Params), "live") {
		t.Fatalf("the stream delivered %s, a request whose caller had given up", m.Params)
	}
	if resp, err := c.Reply(ctx, m.ID, map[string]any{"role": "assistant", "model": "m",
		"content": map[string]any{"type": "text", "text": "hi"}}); err != nil || resp.Status != http.StatusAccepted {
		t.Fatalf("reply: %v %+v", err, resp)
	}
	if err := <-live; err != nil {
		t.Fatalf("the live call: %v", err)
	}
}

// Requests whose callers gave up do not fill the queue: more of them than
// it holds, and later calls are still queued, not refused.
func TestTimedOutRequestsDoNotFillTheQueue(t *testing.T) {
	const queueSize = 4
	r, c, cs := withdrawRig(t, streamable.Config{QueueSize: queueSize})
	for i := range 3 * queueSize {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		err := sampleWith(ctx, cs, fmt.Sprint("dead ", i))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("timed-out call %d failed with %v, want its deadline", i, err)
		}
	}
	if q := r.h.Stats().QueuedMessages; q > queueSize {
		t.Fatalf("%d messages queued, more than the queue holds", q)
	}
	s := r.stream(c)
	answerLiveSampling(t, c, cs, s)
}

// A request already written when its caller gives up is cancelled: the
// same stream carries notifications/cancelled with its id.
func TestTimedOutRequestThatWasWrittenIsCancelled(t *testing.T) {
	r, c, cs := withdrawRig(t, streamable.Config{})
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	callCtx, giveUp := context.WithCancelCause(ctx)
	failed := make(chan error, 1)
	go func() { failed <- sampleWith(callCtx, cs, "slow") }()
	req, err := s.NextMatching(ctx, isSampling)
	if err != nil {
		t.Fatal(err)
	}
	giveUp(errors.New("the tool gave up"))
	if err := <-failed; err == nil {
		t.Fatal("the abandoned call succeeded")
	}
	wantCancelled(t, s, req.ID, "the tool gave up")
}

// wantCancelled reads s until notifications/cancelled for id arrives.
func wantCancelled(t *testing.T, s *testutil.Stream, id json.RawMessage, reason string) {
	t.Helper()
	ctx := testutil.Context(t, 3*time.Second)
	m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.IsNotification() })
	if err != nil {
		t.Fatalf("no notifications/cancelled for request %s: %v", id, err)
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	}
	if m.Method != "notifications/cancelled" || json.Unmarshal(m.Params, &p) != nil ||
		string(p.RequestID) != string(id) || !strings.Contains(p.Reason, reason) {
		t.Fatalf("got %s %s, want notifications/cancelled for request %s naming %q", m.Method, m.Params, id, reason)
	}
}

// The same on a request's own stream: a tool's sampling request, written
// on the POST stream, is cancelled there when the tool stops waiting, before
// the tool's answer.
func TestToolThatStopsWaitingCancelsItsSamplingRequest(t *testing.T) {
	giveUp := make(chan context.CancelCauseFunc, 1)
	r, c, _ := withdrawRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("ask_then_give_up"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sctx, cancel := context.WithCancelCause(ctx)
			giveUp <- cancel
			_, err := s.RequestSampling(sctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}},
				MaxTokens: 10,
			}})
			return mcp.NewToolResultText(fmt.Sprint("gave up: ", err)), nil
		})
	})
	_ = r
	ctx := testutil.Context(t, wait)
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call",
		"params": map[string]any{"name": "ask_then_give_up"}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	req, err := call.NextMatching(ctx, isSampling)
	if err != nil {
		t.Fatal(err)
	}
	(<-giveUp)(errors.New("the tool gave up"))
	wantCancelled(t, call, req.ID, "the tool gave up")
	answer, err := call.NextMatching(ctx, func(m testutil.Message) bool { return string(m.ID) == "9" })
	if err != nil || !strings.Contains(string(answer.Result), "gave up") {
		t.Fatalf("the tool's answer: %+v, %v", answer, err)
	}
}

// With replicas: a request sent on the session's stream from a replica that
// does not hold it waits in that replica's pump; if its caller gives up
// meanwhile, the pump drops it, and the stream the client opens on another
// replica delivers only later requests.
func TestClusterTimedOutRequestIsNotForwarded(t *testing.T) {
	const giveUpTool = "sample_on_stream_then_give_up"
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool(giveUpTool), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sctx, cancel := context.WithTimeout(streamable.OnSessionStream(ctx, s), 20*time.Millisecond)
			defer cancel()
			_, err := s.RequestSampling(sctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("dead")}},
				MaxTokens: 10,
			}})
			return mcp.NewToolResultText(fmt.Sprint("gave up: ", err)), nil
		})
	})
	a := c.session(0)
	if got := toolText(t, c.client(1, a), giveUpTool, nil); !strings.Contains(got, "deadline") {
		t.Fatalf("the abandoned call: %s", got)
	}
	st := c.stream(c.client(2, a))
	ctx := testutil.Context(t, wait)
	result := make(chan string, 1)
	go func() {
		resp, err := c.client(1, a).CallTool(ctx, toolSampleOnStream, map[string]any{"prompt": "live"})
		if err != nil {
			result <- err.Error()
			return
		}
		m, _ := resp.Last()
		result <- string(m.Result)
	}()
	req, err := st.NextMatching(ctx, isSampling)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(req.Params), "live") {
		t.Fatalf("the stream delivered %s, a request whose caller had given up", req.Params)
	}
	if _, err := c.client(2, a).Reply(ctx, req.ID, samplingResult("ok")); err != nil {
		t.Fatal(err)
	}
	if got := <-result; !strings.Contains(got, "sampled: ok") {
		t.Fatalf("the live call: %s", got)
	}
}
