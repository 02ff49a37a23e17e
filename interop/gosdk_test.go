package interop

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pinnedVersion is the protocol version the Go SDK client is told to ask
// for in the session tests: the client's default is 2026-07-28, which has
// no session (see TestGoSDKDefaultVersion and modern_gosdk_test.go).
const pinnedVersion = "2025-11-25"

// gosdk is an official Go SDK client with the handlers the tests observe.
type gosdk struct {
	h       *harness
	client  *mcp.Client
	logs    chan *mcp.LoggingMessageParams
	samples atomic.Int64
}

func newGoSDK(h *harness) *gosdk {
	g := &gosdk{h: h, logs: make(chan *mcp.LoggingMessageParams, 64)}
	g.client = mcp.NewClient(&mcp.Implementation{Name: "interop-gosdk", Version: "1.0.0"}, &mcp.ClientOptions{
		Logger: logger(h, "go-sdk"),
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case g.logs <- req.Params:
			default:
			}
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			g.samples.Add(1)
			prompt := ""
			if len(req.Params.Messages) > 0 {
				if tc, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					prompt = tc.Text
				}
			}
			return &mcp.CreateMessageResult{Model: "interop-gosdk", Role: "assistant",
				Content: &mcp.TextContent{Text: "sampled: " + prompt}}, nil
		},
	})
	return g
}

// connect opens a session over a new transport; version "" takes the SDK's
// default.
func (g *gosdk) connect(ctx context.Context, version string, tune func(*mcp.StreamableClientTransport)) (*mcp.ClientSession, error) {
	tr := &mcp.StreamableClientTransport{Endpoint: g.h.URL, HTTPClient: g.h.HTTP}
	if tune != nil {
		tune(tr)
	}
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	return g.client.Connect(ctx, tr, opts)
}

func (g *gosdk) mustConnect(t *testing.T, ctx context.Context, tune func(*mcp.StreamableClientTransport)) *mcp.ClientSession {
	t.Helper()
	cs, err := g.connect(ctx, pinnedVersion, tune)
	if err != nil {
		t.Fatalf("connect: %v\nwire:\n%s", err, g.h.Wire.dump(""))
	}
	if got := cs.InitializeResult().ProtocolVersion; got != pinnedVersion {
		t.Fatalf("negotiated protocol version %q, want %q", got, pinnedVersion)
	}
	if cs.ID() == "" {
		t.Fatal("no session id after connect")
	}
	return cs
}

// callText calls a tool and returns the text of its result.
func callText(ctx context.Context, cs *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	return callParams(ctx, cs, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// callParams calls a tool with params and returns the text of its result.
func callParams(ctx context.Context, cs *mcp.ClientSession, params *mcp.CallToolParams) (string, error) {
	tool := params.Name
	res, err := cs.CallTool(ctx, params)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		return text, fmt.Errorf("tool %s failed: %s", tool, text)
	}
	return text, nil
}

func mustEcho(t *testing.T, ctx context.Context, cs *mcp.ClientSession, text string) {
	t.Helper()
	got, err := callText(ctx, cs, toolEcho, map[string]any{"text": text})
	if err != nil || got != text {
		t.Fatalf("echo %q = %q, %v", text, got, err)
	}
}

// waitLog waits, bounded, for a notifications/message whose data carries text.
func (g *gosdk) waitLog(t *testing.T, text string) *mcp.LoggingMessageParams {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case p := <-g.logs:
			if data, ok := p.Data.(map[string]any); ok && data["text"] == text {
				return p
			}
			t.Logf("ignored notifications/message %+v", p)
		case <-timeout:
			t.Fatalf("no notifications/message carrying %q within %v\nwire:\n%s", text, wait, g.h.Wire.dump(""))
			return nil
		}
	}
}

// is404 reports whether err is what a Go SDK call returns when lifeline
// answered 404: the SDK either recognises the status (ErrSessionMissing) or
// surfaces lifeline's JSON-RPC error body ("Session not found", -32001).
func is404(err error) bool {
	if err == nil {
		return false
	}
	s := err.Error()
	return errors.Is(err, mcp.ErrSessionMissing) ||
		(strings.Contains(s, "Session not found") && strings.Contains(s, "Not Found"))
}

// endedBy404 reports whether err is what a call on a client session that a
// 404 ended returns: ErrConnectionClosed, with the 404's error in its text.
func endedBy404(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), mcp.ErrSessionMissing.Error())
}

// The whole life of a session with the Go SDK client: connect, list, call,
// a notification on the GET stream, a sampling round trip on the call's
// stream, heartbeat pings answered, and Close ending the session by DELETE.
func TestGoSDKClientSession(t *testing.T) {
	h := start(t, streamable.Config{HeartbeatInterval: 200 * time.Millisecond})
	ctx := testutil.Context(t, 2*wait)
	g := newGoSDK(h)

	cs := g.mustConnect(t, ctx, nil)
	sid := cs.ID()
	testutil.Eventually(t, wait, "the client's GET stream to open", func() bool { return h.H.Stats().GetStreams == 1 })
	if n := h.H.Stats().Sessions; n != 1 {
		t.Fatalf("%d sessions after connect, want 1", n)
	}
	t.Logf("connected: session %s, protocol %s; wire:\n%s", sid, cs.InitializeResult().ProtocolVersion, h.Wire.dump(sid))

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{toolEcho, toolNotify, toolSample} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list = %v, missing %s", names, want)
		}
	}

	mustEcho(t, ctx, cs, "hello from go-sdk")

	// A notification to the session arrives on the GET stream.
	if got, err := callText(ctx, cs, toolNotify, map[string]any{"text": "gosdk-note"}); err != nil || got != "notified" {
		t.Fatalf("%s = %q, %v", toolNotify, got, err)
	}
	if p := g.waitLog(t, "gosdk-note"); p.Level != "info" || p.Logger != "interop" {
		t.Fatalf("notifications/message %+v, want level info, logger interop", p)
	}
	onGET := h.Wire.find(func(ex exchange) bool {
		return ex.Method == http.MethodGet && ex.SessionID == sid && strings.Contains(ex.Body, "gosdk-note")
	})
	onPOST := h.Wire.find(func(ex exchange) bool {
		return ex.Method == http.MethodPost && strings.Contains(ex.Body, "gosdk-note")
	})
	if len(onGET) != 1 || len(onPOST) != 0 {
		t.Fatalf("the notification went out on %d GET and %d POST answers, want 1 and 0\nwire:\n%s",
			len(onGET), len(onPOST), h.Wire.dump(sid))
	}

	// Sampling: the request arrives on the call's stream, the client POSTs
	// its answer, and the tool sees it.
	got, err := callText(ctx, cs, toolSample, map[string]any{"prompt": "gosdk-prompt"})
	if want := "model=interop-gosdk role=assistant text=sampled: gosdk-prompt"; err != nil || got != want {
		t.Fatalf("%s = %q, %v; want %q", toolSample, got, err, want)
	}
	if n := g.samples.Load(); n != 1 {
		t.Fatalf("CreateMessageHandler ran %d times, want 1", n)
	}
	if got := h.Wire.find(func(ex exchange) bool {
		return ex.RPC == "tools/call" && strings.Contains(ex.Request, "gosdk-prompt") && strings.Contains(ex.Body, "sampling/createMessage")
	}); len(got) != 1 {
		t.Fatalf("the sampling request did not go out on the tools/call's own answer\nwire:\n%s", h.Wire.dump(sid))
	}
	// The tool may see the answer before its POST has been answered 202.
	testutil.Eventually(t, wait, "the sampling answer's POST to be answered 202", func() bool {
		answers := h.Wire.find(func(ex exchange) bool {
			return ex.RPC == "response" && ex.SessionID == sid && strings.Contains(ex.Request, "sampled: gosdk-prompt")
		})
		return len(answers) == 1 && answers[0].Status == http.StatusAccepted
	})

	// Heartbeat pings on the GET stream are answered (POSTed {} results, 202).
	testutil.Eventually(t, wait, "the client to answer a heartbeat ping", func() bool {
		return len(h.Wire.find(func(ex exchange) bool {
			return ex.RPC == "response" && ex.SessionID == sid && strings.Contains(ex.Request, `"result":{}`) &&
				ex.Status == http.StatusAccepted
		})) > 0
	})

	// Every request after initialize named the session and the version.
	for _, ex := range h.Wire.exchanges() {
		if ex.RPC == "initialize" {
			if ex.SessionID != "" || ex.Status != http.StatusOK {
				t.Fatalf("initialize exchange %v", ex)
			}
			continue
		}
		if ex.SessionID != sid || ex.Version != pinnedVersion {
			t.Fatalf("exchange %v: want session %s and version %s", ex, sid, pinnedVersion)
		}
	}

	if err := cs.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	deletes := h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodDelete && ex.SessionID == sid })
	if len(deletes) != 1 || deletes[0].Status != http.StatusOK {
		t.Fatalf("DELETEs on Close: %v, want one answered 200", deletes)
	}
	testutil.Eventually(t, wait, "the session and its GET stream to be gone", func() bool {
		st := h.H.Stats()
		return st.Sessions == 0 && st.GetStreams == 0
	})
	t.Logf("wire:\n%s", h.Wire.dump(""))
}

// Without a pinned version the client asks for its default, 2026-07-28, by
// POSTing server/discover first. lifeline serves that version, so the
// client runs sessionless: no Mcp-Session-Id, no GET stream.
func TestGoSDKDefaultVersion(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 2*wait)
	g := newGoSDK(h)
	cs, err := g.connect(ctx, "", nil)
	if err != nil {
		t.Fatalf("connect with the SDK's default version: %v\nwire:\n%s", err, h.Wire.dump(""))
	}
	defer cs.Close()
	version := cs.InitializeResult().ProtocolVersion
	t.Logf("negotiated %s; wire:\n%s", version, h.Wire.dump(""))
	first := h.Wire.exchanges()[0]
	if first.RPC != "server/discover" || first.Version != "2026-07-28" || first.SessionID != "" {
		t.Fatalf("first exchange %v, want server/discover with MCP-Protocol-Version 2026-07-28", first)
	}
	if version != "2026-07-28" || first.Status != http.StatusOK {
		t.Fatalf("negotiated %q (server/discover answered %d), want 2026-07-28", version, first.Status)
	}
	if n := h.H.Stats().Sessions; n != 0 || cs.ID() != "" {
		t.Fatalf("%d sessions, client session id %q; want none on the sessionless protocol", n, cs.ID())
	}
	mustEcho(t, ctx, cs, "sessionless")
	if gets := h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodGet }); len(gets) != 0 {
		t.Fatalf("GET on the sessionless protocol: %v", gets)
	}
}

func (g *gosdk) mustNotify(t *testing.T, ctx context.Context, cs *mcp.ClientSession, text string) {
	t.Helper()
	if got, err := callText(ctx, cs, toolNotify, map[string]any{"text": text}); err != nil || got != "notified" {
		t.Fatalf("%s = %q, %v", toolNotify, got, err)
	}
	g.waitLog(t, text)
}

// forget makes the server forget a session the way an operator or another
// replica would: a raw DELETE with its id, behind the client's back.
func forget(t *testing.T, ctx context.Context, h *harness, sid string) {
	t.Helper()
	raw := testutil.NewClient(h.URL)
	raw.HTTP = h.HTTP
	raw.SessionID, raw.ProtocolVersion = sid, pinnedVersion
	resp, err := raw.Delete(ctx)
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("raw DELETE of %s: %v, %v", sid, resp, err)
	}
}

// waitEnded waits, bounded, for a client session to end by itself and
// returns what Wait returned.
func waitEnded(t *testing.T, cs *mcp.ClientSession) error {
	t.Helper()
	ended := make(chan error, 1)
	go func() { ended <- cs.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-time.After(wait):
		t.Fatalf("the client session did not end within %v", wait)
		return nil
	}
}

// recovers checks that a new session on the same *mcp.Client works fully:
// a call, and a notification on its new GET stream.
func (g *gosdk) recovers(t *testing.T, ctx context.Context, old string, tune func(*mcp.StreamableClientTransport)) {
	t.Helper()
	cs := g.mustConnect(t, ctx, tune)
	defer cs.Close()
	if cs.ID() == old {
		t.Fatalf("the new session reuses the forgotten id %s", old)
	}
	mustEcho(t, ctx, cs, "after re-initialize")
	if tune == nil {
		g.mustNotify(t, ctx, cs, "after re-initialize")
	}
}

// The server forgets the session while the client is using it: the next
// call gets lifeline's 404, which the SDK recognises (ErrSessionMissing);
// the whole client session ends, later calls fail without reaching the
// server, Close sends no DELETE, and only a new Connect recovers.
func TestGoSDKCallAfterSessionForgotten(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 2*wait)
	g := newGoSDK(h)
	cs := g.mustConnect(t, ctx, nil)
	sid := cs.ID()
	testutil.Eventually(t, wait, "the client's GET stream to open", func() bool { return h.H.Stats().GetStreams == 1 })
	mustEcho(t, ctx, cs, "before")

	forget(t, ctx, h, sid)
	if st := h.H.Stats(); st.Sessions != 0 || st.GetStreams != 0 {
		t.Fatalf("after DELETE: %+v, want no session and no GET stream", st)
	}
	// The call races the client's GET reconnect (1-2 s away); either way it
	// must fail with a 404-derived error.
	_, err := callText(ctx, cs, toolEcho, map[string]any{"text": "after"})
	t.Logf("call after the session was forgotten: %v", err)
	if !is404(err) {
		t.Fatalf("call after the session was forgotten: %v, want a 404-derived error", err)
	}
	if got := h.Wire.find(func(ex exchange) bool {
		return ex.SessionID == sid && ex.Status == http.StatusNotFound
	}); len(got) == 0 || !strings.Contains(got[0].Body, `"code":-32001`) {
		t.Fatalf("404 answers to the forgotten session: %v, want at least one with code -32001", got)
	}
	if err := waitEnded(t, cs); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("the client session ended with %v, want ErrSessionMissing", err)
	}
	before := len(h.Wire.exchanges())
	_, err = callText(ctx, cs, toolEcho, map[string]any{"text": "again"})
	t.Logf("second call: %v", err)
	if !endedBy404(err) {
		t.Fatalf("second call on the ended session: %v, want ErrConnectionClosed naming the 404", err)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("Close of the ended session: %v", err)
	}
	if after := h.Wire.exchanges()[before:]; len(after) != 0 {
		t.Fatalf("the ended session still reached the server: %v", after)
	}
	g.recovers(t, ctx, sid, nil)
	t.Logf("wire:\n%s", h.Wire.dump(""))
}

// The server forgets the session while the client is idle: the client's
// GET stream ends, its reconnect gets 404, and the client session ends by
// itself with ErrSessionMissing. A new Connect recovers.
func TestGoSDKIdleAfterSessionForgotten(t *testing.T) {
	h := start(t, streamable.Config{})
	ctx := testutil.Context(t, 2*wait)
	g := newGoSDK(h)
	cs := g.mustConnect(t, ctx, nil)
	sid := cs.ID()
	testutil.Eventually(t, wait, "the client's GET stream to open", func() bool { return h.H.Stats().GetStreams == 1 })

	forget(t, ctx, h, sid)
	err := waitEnded(t, cs)
	t.Logf("the client session ended with: %v", err)
	if !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("the client session ended with %v, want ErrSessionMissing", err)
	}
	gets := h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodGet && ex.SessionID == sid })
	if len(gets) != 2 || gets[0].Status != http.StatusOK || gets[1].Status != http.StatusNotFound {
		t.Fatalf("GETs of the session: %v, want the stream (200) and one reconnect (404)", gets)
	}
	if _, err := callText(ctx, cs, toolEcho, map[string]any{"text": "after"}); !endedBy404(err) {
		t.Fatalf("call on the ended session: %v, want ErrConnectionClosed naming the 404", err)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("Close of the ended session: %v", err)
	}
	g.recovers(t, ctx, sid, nil)
	t.Logf("wire:\n%s", h.Wire.dump(""))
}

// The session expires (IdleTTL) while the client holds no GET stream (an
// open GET stream keeps a session alive, so the client runs without one):
// the next call gets a 404-derived error and a new Connect recovers.
func TestGoSDKCallAfterIdleExpiry(t *testing.T) {
	h := start(t, streamable.Config{IdleTTL: time.Second})
	ctx := testutil.Context(t, 2*wait)
	g := newGoSDK(h)
	noGET := func(tr *mcp.StreamableClientTransport) { tr.DisableStandaloneSSE = true }
	cs := g.mustConnect(t, ctx, noGET)
	sid := cs.ID()
	mustEcho(t, ctx, cs, "before")
	testutil.Eventually(t, wait, "the idle session to expire", func() bool { return h.H.Stats().Sessions == 0 })

	_, err := callText(ctx, cs, toolEcho, map[string]any{"text": "after"})
	t.Logf("call after expiry: %v", err)
	if !is404(err) {
		t.Fatalf("call after expiry: %v, want a 404-derived error", err)
	}
	if err := waitEnded(t, cs); !errors.Is(err, mcp.ErrSessionMissing) {
		t.Fatalf("the client session ended with %v, want ErrSessionMissing", err)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("Close of the ended session: %v", err)
	}
	if got := h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodDelete }); len(got) != 0 {
		t.Fatalf("Close of the ended session sent DELETE: %v", got)
	}
	g.recovers(t, ctx, sid, noGET)
}
