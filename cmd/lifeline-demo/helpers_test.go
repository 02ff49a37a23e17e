package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// wait bounds every wait in these tests; a broken build fails, not hangs.
const wait = 10 * time.Second

// logBuffer collects what the demo and the client log. It stays safe to
// write to after the test ends, and is shown only when the test failed.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLogBuffer(t *testing.T) *logBuffer {
	l := &logBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", l.String())
		}
	})
	return l
}

// startDemo runs the demo with args in a goroutine and returns its address
// and a stop function that cancels its context and returns what run
// returned. The test fails if run is still running at the end. The drain
// delay is 0 unless args set it.
func startDemo(t *testing.T, logs io.Writer, args ...string) (addr string, stop func() error) {
	t.Helper()
	args = append([]string{"-drain-delay", "0"}, args...)
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, args, logs, func(a string) { addrc <- a }) }()

	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case runErr = <-errc:
			case <-time.After(wait):
				runErr = fmt.Errorf("run did not return within %v of its context ending", wait)
			}
		})
		return runErr
	}
	t.Cleanup(func() { _ = stop() })

	select {
	case addr = <-addrc:
		return addr, stop
	case err := <-errc:
		cancel()
		t.Fatalf("run returned before it was ready: %v", err)
	case <-time.After(wait):
		t.Fatalf("run was not ready within %v", wait)
	}
	return "", nil
}

// wire is an http.RoundTripper that watches what the mcp-go client sends
// and receives: every byte read from GET streams, the answers to the
// client's replies (pongs) and to its DELETEs.
type wire struct {
	base http.RoundTripper

	mu       sync.Mutex
	getBytes bytes.Buffer
	gets     int
	deletes  []int

	pongs     atomic.Int64
	pongOnce  sync.Once
	firstPong chan struct{} // closed when a reply to a ping got 202
}

func newWire(base http.RoundTripper) *wire {
	return &wire{base: base, firstPong: make(chan struct{})}
}

func (w *wire) RoundTrip(req *http.Request) (*http.Response, error) {
	isReply := false
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			b, _ := io.ReadAll(body)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result json.RawMessage `json:"result"`
			}
			isReply = json.Unmarshal(b, &m) == nil && m.Method == "" && len(m.ID) > 0 && len(m.Result) > 0
		}
	}
	resp, err := w.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch {
	case req.Method == http.MethodGet:
		w.mu.Lock()
		w.gets++
		w.mu.Unlock()
		resp.Body = &teeBody{ReadCloser: resp.Body, w: w}
	case req.Method == http.MethodDelete:
		w.mu.Lock()
		w.deletes = append(w.deletes, resp.StatusCode)
		w.mu.Unlock()
	case isReply && resp.StatusCode == http.StatusAccepted:
		w.pongs.Add(1)
		w.pongOnce.Do(func() { close(w.firstPong) })
	}
	return resp, nil
}

// getStreamText returns everything read from GET streams so far.
func (w *wire) getStreamText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.getBytes.String()
}

func (w *wire) deleteStatuses() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.deletes)
}

type teeBody struct {
	io.ReadCloser
	w *wire
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.mu.Lock()
		b.w.getBytes.Write(p[:n])
		b.w.mu.Unlock()
	}
	return n, err
}

// notes queues the notifications the mcp-go client's handler receives.
type notes struct {
	ch      chan mcp.JSONRPCNotification
	dropped atomic.Int64
}

func (n *notes) handle(m mcp.JSONRPCNotification) {
	select {
	case n.ch <- m:
	default:
		n.dropped.Add(1)
	}
}

// collect waits, bounded by ctx, until want notifications for which match
// is true have arrived, and returns them in order. Others are skipped.
func (n *notes) collect(ctx context.Context, want int, match func(mcp.JSONRPCNotification) bool) ([]mcp.JSONRPCNotification, error) {
	var got []mcp.JSONRPCNotification
	for len(got) < want {
		select {
		case m := <-n.ch:
			if match(m) {
				got = append(got, m)
			}
		case <-ctx.Done():
			return got, fmt.Errorf("got %d of %d notifications: %w", len(got), want, ctx.Err())
		}
	}
	return got, nil
}

// logParams is the params of a notifications/message.
type logParams struct {
	Level  string          `json:"level"`
	Logger string          `json:"logger"`
	Data   json.RawMessage `json:"data"`
}

type progressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total"`
	Message       string  `json:"message"`
}

func decodeParams(t *testing.T, n mcp.JSONRPCNotification, v any) {
	t.Helper()
	b, err := json.Marshal(n.Params)
	if err != nil {
		t.Fatalf("encode %s params: %v", n.Method, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode %s params %s: %v", n.Method, b, err)
	}
}

func isLogFrom(logger string) func(mcp.JSONRPCNotification) bool {
	return func(n mcp.JSONRPCNotification) bool {
		if n.Method != "notifications/message" {
			return false
		}
		b, err := json.Marshal(n.Params)
		if err != nil {
			return false
		}
		var p logParams
		return json.Unmarshal(b, &p) == nil && p.Logger == logger
	}
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool returned an error result: %+v", res.Content)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tool result has %d contents, want 1: %+v", len(res.Content), res.Content)
	}
	tc, ok := mcp.AsTextContent(res.Content[0])
	if !ok {
		t.Fatalf("tool result content is %T, want text", res.Content[0])
	}
	return tc.Text
}
