package streamable

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// A 2026-07-28 tools/call served over HTTP, answered as JSON, ends its
// session without making the session's context or its ended channel: what
// the request path runs never asks for them.
func TestModernCallMakesNoSessionContext(t *testing.T) {
	mcpSrv := server.NewMCPServer("lazy", "1")
	seen := make(chan *session, 1)
	mcpSrv.AddTool(mcp.NewTool("grab"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if rs, ok := server.ClientSessionFromContext(ctx).(*requestSession); ok {
			seen <- rs.session
		}
		return mcp.NewToolResultText("ok"), nil
	})
	h := New(mcpSrv, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), HeartbeatInterval: Disabled})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); _ = h.Close() })

	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"grab","arguments":{},` +
		`"_meta":{"` + mcp.MetaKeyProtocolVersion + `":"` + mcp.ProtocolVersion20260728 + `","` + mcp.MetaKeyClientCapabilities + `":{}}}}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20260728)
	req.Header.Set(mcp.HeaderMethod, "tools/call")
	req.Header.Set(mcp.HeaderName, "grab")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"ok"`) {
		t.Fatalf("the call: status %d, %q, %v", resp.StatusCode, answer, err)
	}
	var s *session
	select {
	case s = <-seen:
	default:
		t.Fatal("the tool did not see lifeline's request session")
	}
	if got := s.state.Load(); got != stateTerminated {
		t.Fatalf("the request's session is in state %d after the answer, want terminated (%d)", got, stateTerminated)
	}
	requireNeitherMade(t, s, "the request path")
}

// requireNeitherMade fails t if s has made its context or its ended
// channel; by names what would have made them.
func requireNeitherMade(t *testing.T, s *session, by string) {
	t.Helper()
	if s.lc.Load() != nil {
		t.Errorf("%s made the session's context", by)
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended != nil {
		t.Errorf("%s made the session's ended channel", by)
	}
}

// A 2026-07-28 request's session that nothing asked for a context or a
// wait on its end makes neither: its end costs no context, no cancel
// function and no channel. One asked for after the end is ended already,
// with the end's cause.
func TestQuietEphemeralSessionMakesNoContextOrEndedChannel(t *testing.T) {
	_, s := addedEphemeral(t, "modern-", true)
	s.endEphemeral()
	requireNeitherMade(t, s, "the quiet session's end")
	ctx := s.ctx()
	select {
	case <-ctx.Done():
	default:
		t.Fatal("a context made after the end is not done")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, errRequestDone) {
		t.Errorf("its cause: %v, want %v", cause, errRequestDone)
	}
	select {
	case <-s.endedChan():
	default:
		t.Error("an ended channel made after the end is not closed")
	}
}

// A session's ended channel, made while it is active, closes when the
// session is terminated, and the same channel is returned to every caller.
func TestEndedChanClosesAtTheEnd(t *testing.T) {
	_, s := addedEphemeral(t, "modern-", true)
	ch := s.endedChan()
	if s.endedChan() != ch {
		t.Fatal("endedChan returned two channels")
	}
	select {
	case <-ch:
		t.Fatal("ended is closed while the session is active")
	default:
	}
	s.endEphemeral()
	select {
	case <-ch:
	default:
		t.Fatal("ended is not closed after the end")
	}
}

// A session's context made while the session starts terminating, on
// another goroutine, ends all the same, with the first cause given; a
// later cause changes nothing. Each round starts the three calls at once,
// in whatever order the scheduler runs them.
func TestSessionContextMadeWhileEndingEnds(t *testing.T) {
	h := newEphemeralRig(t)
	first, later := errors.New("first cause"), errors.New("later cause")
	for range 500 {
		s := newEphemeralSession(h, "modern-", true)
		var wg sync.WaitGroup
		ctxs := make([]context.Context, 2)
		start := make(chan struct{})
		for i := range ctxs {
			wg.Go(func() {
				<-start
				ctxs[i] = s.ctx()
			})
		}
		wg.Go(func() {
			<-start
			s.endContext(first)
		})
		close(start)
		wg.Wait()
		s.endContext(later)
		if ctxs[0] != ctxs[1] {
			t.Fatal("two calls made two contexts")
		}
		select {
		case <-ctxs[0].Done():
		default:
			t.Fatal("a context made while the session ended is not done")
		}
		if cause := context.Cause(ctxs[0]); cause != first {
			t.Fatalf("its cause: %v, want %v", cause, first)
		}
		if cause := s.endedWith(); cause != first {
			t.Fatalf("endedWith: %v, want %v", cause, first)
		}
	}
}
