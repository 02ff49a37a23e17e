package interop

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// mcpgoVersion is the version the mcp-go client negotiates: with
// continuous listening (the GET stream) it stays on the initialize
// handshake and asks for the newest version that has one.
const mcpgoVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION

// samplerFunc is a client.SamplingHandler.
type samplerFunc func(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error)

func (f samplerFunc) CreateMessage(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return f(ctx, req)
}

// mcpgoClient is mcp-go's own client over its Streamable HTTP transport,
// with the GET stream on, a sampling handler and a notification handler.
type mcpgoClient struct {
	*client.Client
	logs    chan mcp.JSONRPCNotification
	samples atomic.Int64
}

func newMCPGoClient(t *testing.T, c *cluster) *mcpgoClient {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(c.URL,
		transport.WithContinuousListening(),
		transport.WithHTTPBasicClient(c.HTTP),
		transport.WithHTTPLogger(c.logger("mcp-go")),
	)
	if err != nil {
		t.Fatal(err)
	}
	m := &mcpgoClient{logs: make(chan mcp.JSONRPCNotification, 64)}
	m.Client = client.NewClient(tr, client.WithSamplingHandler(samplerFunc(
		func(_ context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			m.samples.Add(1)
			prompt := ""
			if len(req.Messages) > 0 {
				prompt = mcp.GetTextFromContent(req.Messages[0].Content)
			}
			return &mcp.CreateMessageResult{
				SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled: " + prompt)},
				Model:           "interop-mcpgo",
			}, nil
		})))
	m.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == "notifications/message" {
			select {
			case m.logs <- n:
			default:
			}
		}
	})
	return m
}

// callText calls a tool and returns the text of its result.
func (m *mcpgoClient) callText(ctx context.Context, tool string, args map[string]any) (string, error) {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := m.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, c := range res.Content {
		texts = append(texts, mcp.GetTextFromContent(c))
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		return text, fmt.Errorf("tool %s failed: %s", tool, text)
	}
	return text, nil
}

// waitLog waits, bounded, for a notifications/message whose data carries
// text, and returns its params.
func (m *mcpgoClient) waitLog(t *testing.T, c *cluster, text string) map[string]any {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case n := <-m.logs:
			p := n.Params.AdditionalFields
			if data, ok := p["data"].(map[string]any); ok && data["text"] == text {
				return p
			}
			t.Logf("ignored notifications/message %v", p)
		case <-timeout:
			t.Fatalf("no notifications/message carrying %q within %v\nwire:\n%s", text, wait, c.dump())
			return nil
		}
	}
}

// mcp-go's own client (v1.2.1, Streamable HTTP with continuous listening)
// runs a whole conversation through a round-robin proxy in front of three
// replicas sharing one redis-server: initialize, tools/list, echo, a
// notification that crosses to the replica holding its GET stream,
// sampling on the call's own answer and on the GET stream, heartbeat pings
// answered, and Close's DELETE, after which every replica answers 404.
func TestMCPGoClientThroughCluster(t *testing.T) {
	c := startCluster(t, streamable.Config{HeartbeatInterval: clusterHeartbeat})
	ctx := testutil.Context(t, 4*wait)
	m := newMCPGoClient(t, c)
	if err := m.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = m.Close()
		}
	})

	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "interop-mcpgo", Version: "1.0.0"}
	res, err := m.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v\nwire:\n%s", err, c.dump())
	}
	sid := m.GetSessionId()
	if sid == "" || res.ProtocolVersion != mcpgoVersion {
		t.Fatalf("initialize: session %q, protocol %q; want a session and %s", sid, res.ProtocolVersion, mcpgoVersion)
	}
	holder := c.streamHolder(t, sid)
	t.Logf("session %s, protocol %s, GET stream on replica %s", sid, res.ProtocolVersion, c.Replicas[holder].Name)

	tools, err := m.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{toolEcho, toolNotify, toolSample, toolSampleOnStream} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v, missing %s", names, want)
		}
	}
	if got, err := m.callText(ctx, toolEcho, map[string]any{"text": "hello from mcp-go"}); err != nil || got != "hello from mcp-go" {
		t.Fatalf("echo = %q, %v", got, err)
	}

	// A notification made on a replica that does not hold the GET stream
	// reaches the client on that stream.
	notifiedOn, note := c.callAway(t, holder, "mcpgo-note", func(tag string) {
		if got, err := m.callText(ctx, toolNotify, map[string]any{"text": tag}); err != nil || got != "notified" {
			t.Fatalf("%s = %q, %v", toolNotify, got, err)
		}
	}, c.toolCallReplica)
	if p := m.waitLog(t, c, note); p["level"] != "info" || p["logger"] != "interop" {
		t.Errorf("notifications/message %v, want level info, logger interop", p)
	}
	c.checkNotifiedOnStream(t, sid, holder, note)

	// Sampling during the call: the request goes out on the call's own
	// answer, the client's answer is POSTed through the proxy (to any
	// replica) and reaches the tool.
	got, err := m.callText(ctx, toolSample, map[string]any{"prompt": "mcpgo-prompt"})
	if want := "model=interop-mcpgo role=assistant text=sampled: mcpgo-prompt"; err != nil || got != want {
		t.Fatalf("%s = %q, %v; want %q", toolSample, got, err, want)
	}
	sampledOn := c.toolCallReplica("mcpgo-prompt")
	answeredOn := c.checkSampled(t, sid, holder, "mcpgo-prompt", "sampled: mcpgo-prompt", false)

	// Sampling on the GET stream (streamable.OnSessionStream) from a
	// replica that does not hold it: the request crosses to the stream,
	// the client answers it from its GET reader.
	streamSampledOn, prompt := c.callAway(t, holder, "mcpgo-stream-prompt", func(tag string) {
		got, err := m.callText(ctx, toolSampleOnStream, map[string]any{"prompt": tag})
		if want := "model=interop-mcpgo role=assistant text=sampled: " + tag; err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q\nwire:\n%s", toolSampleOnStream, got, err, want, c.dump())
		}
	}, c.toolCallReplica)
	streamAnsweredOn := c.checkSampled(t, sid, holder, prompt, "sampled: "+prompt, true)
	if n := m.samples.Load(); n < 2 {
		t.Errorf("the sampling handler ran %d times, want at least 2", n)
	}

	pongsOn := c.waitPingAnswered(t, sid)
	// mcp-go starts its GET as soon as the initialize answer arrives,
	// racing the client's recording of the negotiated version: the GET
	// sometimes carries no MCP-Protocol-Version (lifeline accepts it).
	c.checkHeaders(t, sid, mcpgoVersion, 0, true)
	getVersion := "(none)"
	if gets := c.find(func(ex exchange) bool { return ex.Method == http.MethodGet && ex.SessionID == sid }); len(gets) > 0 && gets[0].Version != "" {
		getVersion = gets[0].Version
	}
	counts := c.counts()
	c.requireSpread(t, counts)

	closed = true
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	deletedOn := c.checkDeleted(t, sid).Replica
	c.requireGoneEverywhere(t, sid, mcpgoVersion)

	name := c.name
	t.Logf("GET stream on %s (its MCP-Protocol-Version: %s); notify called on %s; sampling in call on %s (answer POSTed to %s); "+
		"sampling on stream called on %s (answer POSTed to %s); ping answers on %v; DELETE on %s; requests per replica %v",
		name(holder), getVersion, name(notifiedOn), name(sampledOn), name(answeredOn), name(streamSampledOn), name(streamAnsweredOn),
		c.names(pongsOn), name(deletedOn), counts)
	t.Logf("wire:\n%s", c.dump())
}
