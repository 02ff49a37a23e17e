package lifelineclient_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

type fixedSampler struct{}

func (fixedSampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled")},
		Model:           "test-model",
	}, nil
}

// addAsk adds the tool "ask", which asks the client for a sampling.
func addAsk(s *server.MCPServer) {
	s.EnableSampling()
	s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
			Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}},
			MaxTokens: 5,
		}})
		if err != nil {
			return nil, err
		}
		return mcp.NewToolResultText(res.Content.(mcp.TextContent).Text), nil
	})
}

// tagged counts the notifications/message whose data carries tag, by seq.
func tagged(n *notes, tag string) map[int]int {
	seen := map[int]int{}
	for _, m := range n.all() {
		if m.Method != "notifications/message" {
			continue
		}
		raw, _ := json.Marshal(m.Params.AdditionalFields["data"])
		var d struct {
			Seq int    `json:"seq"`
			Tag string `json:"tag"`
		}
		if json.Unmarshal(raw, &d) == nil && d.Tag == tag {
			seen[d.Seq]++
		}
	}
	return seen
}

// notifyAndWait has the server send count notifications tagged tag to the
// client's session (they travel on its GET stream) and waits for all.
func notifyAndWait(t *testing.T, c *conn, tag string, count int) {
	t.Helper()
	got, err := c.call(testutil.Context(t, wait), "lifeline_notify_session", map[string]any{"count": count, "tag": tag})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(got)
	c.notes.waitFor(t, tag+" notifications", func() bool { return len(tagged(c.notes, tag)) == count })
	for seq, n := range tagged(c.notes, tag) {
		if n != 1 {
			t.Errorf("%s notification %d delivered %d times", tag, seq, n)
		}
	}
}

// After a new session, the GET stream is open on it, and sampling (a
// server-to-client request) works on it.
func TestNewSessionKeepsStreamAndHandlers(t *testing.T) {
	l := newLifeline(t, streamable.Config{}, addAsk)
	c := connect(t, l.ts.URL, lifelineclient.Config{},
		[]transport.StreamableHTTPCOption{transport.WithContinuousListening()},
		client.WithSamplingHandler(fixedSampler{}))
	notifyAndWait(t, c, "first", 3)
	if got, err := c.call(testutil.Context(t, wait), "ask", nil); err != nil || got != "sampled" {
		t.Fatalf("sampling: %q, %v", got, err)
	}
	old := c.tr.GetSessionId()
	deleteSession(t, l.ts.URL, old)
	if got, err := c.call(testutil.Context(t, wait), "ask", nil); err != nil || got != "sampled" {
		t.Fatalf("sampling on the new session: %q, %v", got, err)
	}
	wantReplacedOnce(t, l.cnt, c, old)
	notifyAndWait(t, c, "second", 3)
	testutil.Eventually(t, wait, "the GET stream on the new session", func() bool { return l.h.Stats().GetStreams == 1 })
}

// A client that only listens learns of a lost session from its GET stream
// (404 on the session it was open on) and starts a new one with no call
// of its own; the stream reopens on it.
func TestIdleListenerGetsNewSession(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	c := connect(t, l.ts.URL, lifelineclient.Config{Resume: fastResume},
		[]transport.StreamableHTTPCOption{transport.WithContinuousListening()})
	notifyAndWait(t, c, "first", 2)
	old := c.tr.GetSessionId()
	deleteSession(t, l.ts.URL, old)
	c.notes.waitFor(t, "the synthesized tools/list_changed", func() bool {
		return c.notes.count(mcp.MethodNotificationToolsListChanged) == 1
	})
	wantReplacedOnce(t, l.cnt, c, old)
	if got := l.cnt.get("tools/call"); got != 1 {
		t.Fatalf("tools/call POSTs: %d, want 1 (the client made no call since)", got)
	}
	notifyAndWait(t, c, "second", 2)
}
