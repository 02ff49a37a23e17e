package lifelineclient_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// fastResume resumes at once in tests (the server asks for 1 s).
var fastResume = lifelineclient.ResumePolicy{MaxDelay: 5 * time.Millisecond}

// Notifications on the GET stream survive cuts in the middle of an event:
// each is delivered once.
func TestCutGETStreamIsResumed(t *testing.T) {
	for _, mode := range []testutil.CutMode{testutil.CutFIN, testutil.CutRST} {
		t.Run(mode.String(), func(t *testing.T) {
			l := newLifeline(t, streamable.Config{})
			p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{l.ts.URL}, Cut: mode})
			c := connect(t, p.URL(), lifelineclient.Config{Resume: fastResume},
				[]transport.StreamableHTTPCOption{transport.WithContinuousListening()})
			notifyAndWait(t, c, "warmup", 1)
			const cuts = 3
			p.Arm(testutil.Fault{
				Match:    func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet },
				After:    800,
				MidEvent: true,
				Times:    cuts,
			})
			// The GET open now is cut too: its next 800 bytes count.
			p.ArmConns(func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet },
				testutil.Fault{After: 800, MidEvent: true})
			notifyAndWait(t, c, "cut", 60)
			if got := p.Stats().Cuts; got < cuts {
				t.Fatalf("cuts: %d, want at least %d", got, cuts)
			}
			if got := l.cnt.get("initialize"); got != 1 {
				t.Fatalf("initialize POSTs: %d, want 1", got)
			}
		})
	}
}

// Progress and log notifications on a tool call's own SSE response survive
// cuts in the middle of an event, and the call gets its answer.
func TestCutCallStreamIsResumed(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{l.ts.URL}})
	c := connect(t, p.URL(), lifelineclient.Config{Resume: fastResume}, nil)
	c.echo("warmup")
	const steps = 40
	p.Arm(testutil.Fault{
		Match: func(ci testutil.ConnInfo) bool {
			return ci.Method == http.MethodGet || ci.Method == http.MethodPost && ci.Requests > 0
		},
		After:    700,
		MidEvent: true,
		Times:    3,
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "lifeline_progress"
	req.Params.Arguments = map[string]any{"steps": steps, "delay_ms": 1}
	req.Params.Meta = &mcp.Meta{ProgressToken: "p1"}
	res, err := c.c.CallTool(testutil.Context(t, wait), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(mcp.TextContent).Text; got != fmt.Sprintf("done %d steps", steps) {
		t.Fatalf("answer %q", got)
	}
	if got := p.Stats().Cuts; got < 3 {
		t.Fatalf("cuts: %d, want 3", got)
	}
	progress, logs := map[string]int{}, map[string]int{}
	for _, m := range c.notes.all() {
		switch m.Method {
		case "notifications/progress":
			progress[fmt.Sprint(m.Params.AdditionalFields["progress"])]++
		case "notifications/message":
			if d, ok := m.Params.AdditionalFields["data"].(string); ok && strings.HasPrefix(d, "step ") {
				logs[d]++
			}
		}
	}
	if len(progress) != steps || len(logs) != steps {
		t.Fatalf("delivered %d progress and %d log notifications, want %d each", len(progress), len(logs), steps)
	}
	for k, n := range progress {
		if n != 1 {
			t.Errorf("progress %s delivered %d times", k, n)
		}
	}
	for k, n := range logs {
		if n != 1 {
			t.Errorf("log %q delivered %d times", k, n)
		}
	}
}
