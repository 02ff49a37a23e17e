package interop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// modernGoSDK is the Go SDK client on its defaults (no pinned version), so
// it speaks 2026-07-28, with an elicitation handler and every
// notification counted.
type modernGoSDK struct {
	client  *mcp.Client
	notes   *notes
	elicits atomic.Int64
}

// newModernGoSDK builds the client; with listChanges it registers tools and
// prompts list-change handlers, which makes Connect open a
// subscriptions/listen stream for them.
func newModernGoSDK(h *harness, listChanges bool) *modernGoSDK {
	g := &modernGoSDK{notes: newNotes()}
	opts := &mcp.ClientOptions{
		Logger: logger(h, "go-sdk"),
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			tag, _ := req.Params.ProgressToken.(string)
			g.notes.add(methodProgress, tag)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			tag := ""
			if data, ok := req.Params.Data.(map[string]any); ok {
				tag, _ = data["tag"].(string)
			}
			g.notes.add(methodLog, tag)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			g.notes.add(methodResourcesChanged, "")
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			g.elicits.Add(1)
			if req.Params.Message != askPrompt {
				return nil, fmt.Errorf("elicitation message %q, want %q", req.Params.Message, askPrompt)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	}
	if listChanges {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) {
			g.notes.add(methodToolsChanged, "")
		}
		opts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) {
			g.notes.add(methodPromptsChanged, "")
		}
	}
	g.client = mcp.NewClient(&mcp.Implementation{Name: "interop-gosdk", Version: "1.0.0"}, opts)
	return g
}

// connect connects with the SDK's default version and checks that it
// negotiated 2026-07-28 without a session.
func (g *modernGoSDK) connect(t *testing.T, ctx context.Context, h *harness) *mcp.ClientSession {
	t.Helper()
	cs, err := g.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL, HTTPClient: h.HTTP}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nwire:\n%s", err, h.Wire.dump(""))
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != modernVersion || cs.ID() != "" {
		t.Fatalf("negotiated %q, session %q; want %s without a session", v, cs.ID(), modernVersion)
	}
	return cs
}

// callProgress calls toolProgress with tag as its progress token and the
// log level in _meta (the SDK has no per-session setting on 2026-07-28:
// SetLoggingLevel sends the removed logging/setLevel).
func callProgress(ctx context.Context, cs *mcp.ClientSession, tag string) error {
	params := &mcp.CallToolParams{Name: toolProgress, Arguments: map[string]any{"tag": tag},
		Meta: mcp.Meta{mcp.MetaKeyLogLevel: "debug"}}
	params.SetProgressToken(tag)
	got, err := callParams(ctx, cs, params)
	if err != nil {
		return err
	}
	if got != tag {
		return fmt.Errorf("%s answered %q", toolProgress, got)
	}
	return nil
}

// The Go SDK client on 2026-07-28: 600 calls of a tool that sends 3
// progress notifications and 2 log messages; every notification of every
// call must arrive.
func TestGoSDKModernProgress(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 8*wait)
	g := newModernGoSDK(h, false)
	cs := g.connect(t, ctx, h)
	tags, err := runCalls(ctx, func(ctx context.Context, tag string) error { return callProgress(ctx, cs, tag) })
	for _, ex := range h.Wire.find(func(ex exchange) bool { return ex.RPC == "tools/call" }) {
		if !strings.Contains(ex.Request, `"io.modelcontextprotocol/logLevel":"debug"`) {
			t.Fatalf("tools/call without the log level in _meta: %s", ex.Request)
		}
	}
	checkProgressRun(t, h, g.notes, tags, err)
}

// The Go SDK client on 2026-07-28 opens a listen stream by itself at
// Connect, for the list changes it has handlers for (tools and prompts
// here; it has no exported way to open one otherwise, except Subscribe for
// one resource): a tool added reaches it, and a prompts change made after
// a burst of 1,000 tools list changes reaches it too; nothing unsubscribed
// arrives (checkListen).
func TestGoSDKModernListen(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 8*wait)
	g := newModernGoSDK(h, true)
	cs := g.connect(t, ctx, h)
	hasTool := func(name string) bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return slices.Contains(names, name)
	}
	checkListen(t, h, g.notes, hasTool)
	checkModernWire(t, h)
	if err := cs.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// The Go SDK client on 2026-07-28 handles an input_required result
// (SEP-2322) by itself (its multi round-trip middleware, on by default):
// its elicitation handler answers, it retries with the answer and the
// request state, and CallTool returns the final result.
func TestGoSDKModernInputRequired(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 2*wait)
	g := newModernGoSDK(h, false)
	cs := g.connect(t, ctx, h)
	got, err := callText(ctx, cs, toolAsk, nil)
	if err != nil || got != "hello Ada" {
		t.Fatalf("%s = %q, %v; want %q\nwire:\n%s", toolAsk, got, err, "hello Ada", h.Wire.dump(""))
	}
	if n := g.elicits.Load(); n != 1 {
		t.Fatalf("the elicitation handler ran %d times, want 1", n)
	}
	checkAskWire(t, h)
	checkModernWire(t, h)
}
