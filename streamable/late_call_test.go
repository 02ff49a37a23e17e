package streamable_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// hookWriter runs hook once, on the first Write of a response whose hook is
// armed: here, the tool call's JSON answer, written after the request's
// writer was stopped and before the request's context ends.
type hookWriter struct {
	http.ResponseWriter
	hook func()
}

func (w *hookWriter) Write(p []byte) (int, error) {
	if w.hook != nil && strings.Contains(string(p), `"result"`) {
		h := w.hook
		w.hook = nil
		h()
	}
	return w.ResponseWriter.Write(p)
}

func (w *hookWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// A server-to-client request made through a POST's session once the
// request's writer has stopped (its answer being written, its context not
// yet ended) is refused at once, not queued where nothing reads it.
func TestCallAfterWriterStoppedIsRefused(t *testing.T) {
	var (
		mu   sync.Mutex
		sess server.ClientSession
	)
	srv := demotools.NewServer("lifeline-test", "1")
	srv.AddTool(mcp.NewTool("capture"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		sess = server.ClientSessionFromContext(ctx)
		mu.Unlock()
		return mcp.NewToolResultText("ok"), nil
	})
	h := streamable.New(srv, streamable.Config{HeartbeatInterval: time.Hour})
	var callErr error
	called := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hw := &hookWriter{ResponseWriter: w}
		hw.hook = func() {
			mu.Lock()
			s := sess
			mu.Unlock()
			if s == nil {
				return
			}
			// Synchronously, inside the answer's write: the request's
			// handler has returned and its writer was stopped, but its
			// context has not ended yet.
			defer close(called)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, callErr = s.(server.SessionWithSampling).RequestSampling(ctx, mcp.CreateMessageRequest{
				CreateMessageParams: mcp.CreateMessageParams{MaxTokens: 5,
					Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.TextContent{Type: "text", Text: "hi"}}}},
			})
		}
		h.ServeHTTP(hw, r)
	}))
	defer ts.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	}()
	c := testutil.NewClient(ts.URL)
	if _, err := c.Initialize(testutil.Context(t, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(testutil.Context(t, 10*time.Second), "capture", nil); err != nil {
		t.Fatal(err)
	}
	<-called
	if errors.Is(callErr, context.DeadlineExceeded) {
		t.Fatalf("a request made after its POST's writer stopped waited out its deadline (%v); want it refused at once (the request has ended)", callErr)
	}
	t.Logf("late call: %v", callErr)
}
