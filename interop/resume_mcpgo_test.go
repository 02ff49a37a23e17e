package interop

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// connectMCPGo starts mcp-go v1.2.1's client with continuous listening
// (which keeps it on the initialize handshake, 2025-11-25, where streams
// carry event ids) through the rig's proxy, recording the progress and
// log notifications it hands the application.
func connectMCPGo(t *testing.T, ctx context.Context, r *resumeRig) (*client.Client, *deliveries) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(r.endpoint,
		transport.WithContinuousListening(),
		transport.WithHTTPBasicClient(r.h.HTTP),
		transport.WithHTTPLogger(logger(r.h, "mcp-go")),
	)
	if err != nil {
		t.Fatal(err)
	}
	d := newDeliveries()
	c := client.NewClient(tr)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		switch n.Method {
		case "notifications/progress":
			v, _ := n.Params.AdditionalFields["progress"].(float64)
			d.addProgress(v)
		case "notifications/message":
			d.addLog(n.Params.AdditionalFields["data"])
		}
	})
	if err := c.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "interop-mcpgo-resume", Version: "1.0.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ProtocolVersion != mcpgoVersion || c.GetSessionId() == "" {
		t.Fatalf("initialize: protocol %q, session %q; want %s and a session", res.ProtocolVersion, c.GetSessionId(), mcpgoVersion)
	}
	return c, d
}

// mcp-go's client (v1.2.1) does not resume a call whose answer stream
// breaks off: its handleSSEResponse resumes (GET with Last-Event-ID) only
// a stream the server ended cleanly before the answer (SEP-1699 polling),
// and a cut reads as an error (io.ErrUnexpectedEOF from the chunked body),
// after which it closes the response channel and CallTool fails at once
// with "unexpected nil response". The progress and log messages sent
// before the cut arrived, the rest and the result (which lifeline recorded
// for a resume) never do, no GET with Last-Event-ID goes out, and the
// session carries on.
func TestMCPGoClientDoesNotResumeACutCallStream(t *testing.T) {
	r := startResumeRig(t)
	ctx := testutil.Context(t, wait)
	c, d := connectMCPGo(t, ctx, r)

	r.cutCall("")
	var req mcp.CallToolRequest
	req.Params.Name = toolDemoProgress
	req.Params.Arguments = map[string]any{"steps": callSteps, "delay_ms": callDelayMS}
	req.Params.Meta = &mcp.Meta{ProgressToken: "mcpgo-resume"}
	res, err := c.CallTool(ctx, req)
	if err == nil {
		t.Fatalf("the cut call returned %+v, want an error (mcp-go does not resume a stream that breaks off)", res)
	}
	if ctx.Err() != nil || !strings.Contains(err.Error(), "unexpected nil response") {
		t.Fatalf("the cut call failed with %v (context %v), want mcp-go's \"unexpected nil response\" at once", err, ctx.Err())
	}
	t.Logf("mcp-go's CallTool after the cut: %v", err)
	r.checkCut(t)
	if res := r.resumes(""); len(res) != 0 {
		t.Errorf("mcp-go resumed with Last-Event-ID: %v", res)
	}
	d.mu.Lock()
	got := fmt.Sprint(d.progress)
	n := len(d.progress)
	d.mu.Unlock()
	var want []float64
	for i := 1; i <= n; i++ {
		want = append(want, float64(i))
	}
	if n == 0 || n >= callSteps || got != fmt.Sprint(want) {
		t.Errorf("progress before the cut: %s, want steps 1..k, k between 1 and %d", got, callSteps-1)
	}
	t.Logf("progress that reached mcp-go before the cut: %s of %d steps", got, callSteps)
	if got, err := callTextMCPGo(ctx, c, toolDemoNotify, map[string]any{"count": 0}); err != nil || got != "sent 0 notifications" {
		t.Errorf("a call after the cut: %q, %v", got, err)
	}
}

// mcp-go's client (v1.2.1) reopens its standalone GET stream after a cut,
// about a second later (listenForever's retryInterval), without
// Last-Event-ID: the notifications lifeline had written into the cut
// connection are lost to it (at least the one cut in the middle), none
// arrives twice, and what was still queued, and everything sent after, arrives
// on the new stream.
func TestMCPGoClientReopensACutStandaloneStreamWithoutResuming(t *testing.T) {
	r := startResumeRig(t)
	ctx := testutil.Context(t, wait)
	r.cutGet()
	c, d := connectMCPGo(t, ctx, r)
	testutil.Eventually(t, wait, "the standalone stream", func() bool { return r.h.H.Stats().GetStreams == 1 })

	notify := func(count, bytes int) {
		t.Helper()
		got, err := callTextMCPGo(ctx, c, toolDemoNotify, map[string]any{"count": count, "bytes": bytes})
		if want := fmt.Sprintf("sent %d notifications", count); err != nil || got != want {
			t.Fatalf("%s: %q, %v; want %q", toolDemoNotify, got, err, want)
		}
	}
	notify(burstCount, burstBytes)
	testutil.Eventually(t, wait, "mcp-go's new GET stream", func() bool {
		gets := r.h.Wire.find(func(ex exchange) bool { return ex.Method == http.MethodGet && ex.Status == http.StatusOK })
		return len(gets) == 2 && r.h.H.Stats().GetStreams == 1
	})
	notify(lateCount, lateBytes)
	testutil.Eventually(t, wait, "the second burst", func() bool { return d.count(lateBytes) == lateCount })
	r.checkCut(t)
	if res := r.resumes(""); len(res) != 0 {
		t.Errorf("mcp-go resumed with Last-Event-ID: %v", res)
	}
	lost, doubled := d.missing(burstBytes, burstCount)
	if len(doubled) > 0 {
		t.Errorf("notifications received twice: %v", doubled)
	}
	if len(lost) == 0 {
		t.Errorf("no notification lost: the cut came before the burst, or mcp-go resumed")
	}
	t.Logf("mcp-go lost %d of %d notifications at the cut (seq %d..%d), none doubled",
		len(lost), burstCount, lost[0], lost[len(lost)-1])
	d.checkNotes(t, lateBytes, lateCount)
}

// callTextMCPGo calls a tool with mcp-go's client and returns the text of
// its result.
func callTextMCPGo(ctx context.Context, c *client.Client, tool string, args map[string]any) (string, error) {
	var req mcp.CallToolRequest
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, content := range res.Content {
		texts = append(texts, mcp.GetTextFromContent(content))
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed: %s", tool, strings.Join(texts, "\n"))
	}
	return strings.Join(texts, "\n"), nil
}
