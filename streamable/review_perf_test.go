package streamable_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/heartbeat"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// connWriter is a framework's writer over one kept-alive connection that
// serves several requests in turn (next): its write deadline is the
// connection's, as a net.Conn's is, and the framework does not reset it
// between requests. A write at or past the deadline fails. now is the
// connection's clock, which next advances.
type connWriter struct {
	mu       sync.Mutex
	header   http.Header
	status   int
	body     bytes.Buffer
	deadline time.Time
	now      time.Time
}

func newConnWriter() *connWriter {
	return &connWriter{header: make(http.Header), now: time.Now()}
}

func (w *connWriter) Header() http.Header { return w.header }
func (w *connWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = status
	}
}

func (w *connWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.deadline.IsZero() && !w.now.Before(w.deadline) {
		return 0, os.ErrDeadlineExceeded
	}
	return w.body.Write(p)
}
func (w *connWriter) Flush()          {}
func (w *connWriter) CanStream() bool { return true }

func (w *connWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = t
	return nil
}

// next makes w the writer of the connection's next request, after idle.
func (w *connWriter) next(idle time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.header, w.status = make(http.Header), 0
	w.body.Reset()
	w.now = w.now.Add(idle)
}

func (w *connWriter) result() (int, time.Time, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.status, w.deadline, w.body.String()
}

// Through Handle, a streamed response's answer is written by writeLast,
// which arms the framework writer's write deadline and, unlike every other
// write, never clears it ("net/http clears it after": there is no net/http
// here). On a framework whose deadline is the connection's, the next
// request on that connection has its plain JSON answer (written without a
// deadline of its own) refused by the stale deadline.
func TestReviewHandleStreamedAnswerLeavesFrameworkDeadlineSet(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: defaultHeartbeat})
	ctx := testutil.Context(t, wait)
	id := handleInit(t, r.h, ctx)

	w := newConnWriter()
	r.h.Handle(w, handleRequest(ctx, http.MethodPost, id, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "lifeline_progress", "arguments": map[string]any{"steps": 1}}}))
	status, dl, body := w.result()
	if status != http.StatusOK || !strings.Contains(body, "event: message") || !strings.Contains(body, "done 1 steps") {
		t.Fatalf("streamed call through Handle: %d %q", status, body)
	}
	streamedDeadline := dl

	w.next(time.Hour) // the client's next request on the same connection, an hour later
	r.h.Handle(w, handleRequest(ctx, http.MethodPost, id, map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
		"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": "after-streamed"}}}))
	status, _, body = w.result()
	if !strings.Contains(body, "after-streamed") {
		t.Fatalf("the next request on the connection lost its answer (status %d, body %q): the streamed response left the "+
			"framework writer's deadline at %v (zero when cleared)", status, body, streamedDeadline)
	}
}

// Shutdown returns ctx's error only if handlers were still running when
// ctx ended. With nothing running, an ended ctx still makes it fail about
// half the time: writerPool.close selects between its (closed) done and
// ctx.Done at random.
func TestReviewShutdownWithEndedContextAndNothingRunning(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	failed := 0
	var first error
	const rounds = 32
	for range rounds {
		h := streamable.New(demotools.NewServer("review", "1"), streamable.Config{Logger: quiet})
		if err := h.Shutdown(ctx); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d Shutdowns of a transport with no session and no request failed: %v", failed, rounds, first)
	}
}

// steppedClock is the system's wall clock, which an operator (or NTP, or
// a VM's restore) may step: Now carries no monotonic reading, as a clock
// read from the wall does not.
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) Now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.offset.Load()))
}
func (c *steppedClock) NewTimer(d time.Duration) heartbeat.Timer {
	return heartbeat.SystemClock{}.NewTimer(d)
}

// A replica skips Touch while now - touchedAt < IdleTTL/16, both wall-clock
// Unix times: once the wall clock steps back (by an hour here), every
// difference is negative for that hour, so the replica only checks the
// session, never extends it, and Redis (on its own clock) expires a
// session that gets a request every 20 ms.
func TestReviewClusterTouchSurvivesWallClockStepBack(t *testing.T) {
	const ttl = 1600 * time.Millisecond
	clock := &steppedClock{}
	c := newCluster(t, streamable.Config{IdleTTL: ttl, Clock: clock}, redisstore.Options{})
	a := c.session(0)
	ctx := testutil.Context(t, 4*ttl+wait)
	if resp, err := a.Call(ctx, "ping", nil); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("ping: %+v %v", resp, err)
	}
	clock.offset.Store(int64(-time.Hour))
	pace := time.NewTicker(20 * time.Millisecond) // the load's pace, not a wait for an event
	defer pace.Stop()
	start := time.Now()
	for requests := 0; time.Since(start) < 2*ttl; requests++ {
		resp, err := a.Call(ctx, "ping", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusOK {
			t.Fatalf("ping %d, %v after the wall clock stepped back, into a session that gets a request every 20 ms "+
				"(IdleTTL %v): %d %s", requests, time.Since(start), ttl, resp.Status, resp.Body)
		}
		<-pace.C
	}
}

// Guard: over HTTP/2 a streamed response's small answer, which writeLast
// leaves unflushed in the server's buffer, reaches the client with the
// body's end, once for each request, on the plain path and on a resumable
// request's worker (whose handler goroutine returns only after the worker
// wrote the answer).
func TestReviewHTTP2StreamedAnswerLeftInBufferArrives(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  bool
	}{{"plain", false}, {"resumable", true}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := streamable.Config{HeartbeatInterval: testHeartbeat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if tc.log {
				cfg.EventLog = sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})
			}
			h := streamable.New(demotools.NewServer("review", "1"), cfg)
			ts := httptest.NewUnstartedServer(h)
			ts.EnableHTTP2 = true
			ts.StartTLS()
			shutDownAtCleanup(t, h, ts)
			c := testutil.NewClient(ts.URL)
			c.HTTP = ts.Client()
			ctx := testutil.Context(t, wait)
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			for i := range 20 {
				resp, err := c.CallTool(ctx, "lifeline_progress", map[string]any{"steps": 2})
				if err != nil {
					t.Fatal(err)
				}
				if resp.Status != http.StatusOK || !resp.IsSSE() {
					t.Fatalf("call %d: %d %q", i, resp.Status, resp.Body)
				}
				answers := 0
				for _, m := range resp.Messages {
					if m.Method == "" {
						answers++
					}
				}
				last, err := resp.Last()
				if err != nil || answers != 1 || !strings.Contains(string(last.Result), "done 2 steps") {
					t.Fatalf("call %d over HTTP/2: %d answers, last %+v (%v)", i, answers, last, err)
				}
			}
		})
	}
}
