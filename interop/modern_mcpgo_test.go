package interop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// elicitorFunc is a client.ElicitationHandler.
type elicitorFunc func(context.Context, mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

func (f elicitorFunc) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return f(ctx, req)
}

// modernMCPGo is mcp-go's client on its defaults (Streamable HTTP without
// continuous listening, no pinned version), so it speaks 2026-07-28, with
// an elicitation handler and every notification counted.
type modernMCPGo struct {
	*client.Client
	notes   *notes
	elicits atomic.Int64
}

// connectModernMCPGo starts the client on h and runs its Initialize,
// which probes server/discover and stays sessionless.
func connectModernMCPGo(t *testing.T, ctx context.Context, h *harness) *modernMCPGo {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(h.URL,
		transport.WithHTTPBasicClient(h.HTTP),
		transport.WithHTTPLogger(logger(h, "mcp-go")),
	)
	if err != nil {
		t.Fatal(err)
	}
	m := &modernMCPGo{notes: newNotes()}
	m.Client = client.NewClient(tr, client.WithElicitationHandler(elicitorFunc(
		func(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
			m.elicits.Add(1)
			if req.Params.Message != askPrompt {
				return nil, fmt.Errorf("elicitation message %q, want %q", req.Params.Message, askPrompt)
			}
			return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
				Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Ada"},
			}}, nil
		})))
	m.OnNotification(func(n mcp.JSONRPCNotification) {
		tag := ""
		switch n.Method {
		case methodProgress:
			tag, _ = n.Params.AdditionalFields["progressToken"].(string)
		case methodLog:
			if data, ok := n.Params.AdditionalFields["data"].(map[string]any); ok {
				tag, _ = data["tag"].(string)
			}
		}
		m.notes.add(n.Method, tag)
	})
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "interop-mcpgo", Version: "1.0.0"}
	res, err := m.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v\nwire:\n%s", err, h.Wire.dump(""))
	}
	if res.ProtocolVersion != modernVersion || m.ProtocolVersion() != modernVersion || m.GetSessionId() != "" {
		t.Fatalf("negotiated %q (client %q), session %q; want %s without a session\nwire:\n%s",
			res.ProtocolVersion, m.ProtocolVersion(), m.GetSessionId(), modernVersion, h.Wire.dump(""))
	}
	return m
}

// callProgress calls toolProgress with tag as its progress token.
func (m *modernMCPGo) callProgress(ctx context.Context, tag string) error {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = toolProgress, map[string]any{"tag": tag}
	req.Params.Meta = &mcp.Meta{ProgressToken: tag}
	res, err := m.CallTool(ctx, req)
	if err != nil {
		return err
	}
	if text := resultText(res); res.IsError || text != tag {
		return fmt.Errorf("%s answered %q (error %v)", toolProgress, text, res.IsError)
	}
	return nil
}

func resultText(res *mcp.CallToolResult) string {
	text := ""
	for _, c := range res.Content {
		text += mcp.GetTextFromContent(c)
	}
	return text
}

// mcp-go's client on 2026-07-28: 600 calls of a tool that sends 3 progress
// notifications and 2 log messages (the client declares its log level with
// SetLevel, which on this version only records it: every request then
// carries _meta io.modelcontextprotocol/logLevel); every notification of
// every call must arrive.
func TestMCPGoModernProgress(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 8*wait)
	m := connectModernMCPGo(t, ctx, h)
	if err := m.SetLevel(ctx, mcp.SetLevelRequest{Params: mcp.SetLevelParams{Level: mcp.LoggingLevelDebug}}); err != nil {
		t.Fatalf("SetLevel: %v", err)
	}
	tags, err := runCalls(ctx, m.callProgress)
	for _, ex := range h.Wire.find(func(ex exchange) bool { return ex.RPC == "tools/call" }) {
		if !strings.Contains(ex.Request, `"io.modelcontextprotocol/logLevel":"debug"`) {
			t.Fatalf("tools/call without the log level in _meta: %s", ex.Request)
		}
	}
	checkProgressRun(t, h, m.notes, tags, err)
}

// mcp-go's client on 2026-07-28 opens a listen stream with Listen (here
// ListenAsync) for tools and prompts list changes: a tool added reaches it,
// and a prompts change made after a burst of 1,000 tools list changes
// reaches it too; nothing unsubscribed arrives (checkListen).
func TestMCPGoModernListen(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 8*wait)
	m := connectModernMCPGo(t, ctx, h)
	listenErr := make(chan error, 1)
	stop, err := m.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true}, func(err error) { listenErr <- err })
	if err != nil {
		t.Fatalf("ListenAsync: %v", err)
	}
	hasTool := func(name string) bool {
		res, err := m.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return slices.Contains(names, name)
	}
	checkListen(t, h, m.notes, hasTool)
	stop()
	select {
	case err := <-listenErr:
		t.Fatalf("the listen stream failed: %v", err)
	default:
	}
	checkModernWire(t, h)
}

// mcp-go's client on 2026-07-28 handles an input_required result (SEP-2322)
// by itself: its elicitation handler answers, it retries with the answer
// and the request state, and CallTool returns the final result.
func TestMCPGoModernInputRequired(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 2*wait)
	m := connectModernMCPGo(t, ctx, h)
	var req mcp.CallToolRequest
	req.Params.Name = toolAsk
	res, err := m.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v\nwire:\n%s", toolAsk, err, h.Wire.dump(""))
	}
	if got := resultText(res); res.IsError || got != "hello Ada" {
		t.Fatalf("%s = %q (error %v), want %q", toolAsk, got, res.IsError, "hello Ada")
	}
	if n := m.elicits.Load(); n != 1 {
		t.Fatalf("the elicitation handler ran %d times, want 1", n)
	}
	checkAskWire(t, h)
	checkModernWire(t, h)
}
