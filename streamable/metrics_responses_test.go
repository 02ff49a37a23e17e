package streamable_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// statusRecorder counts the statuses a handler answered with.
type statusRecorder struct {
	mu     sync.Mutex
	counts map[int]int
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *statusRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		s.mu.Lock()
		s.counts[sw.status]++
		s.mu.Unlock()
	})
}

// lifeline.http.responses counts each HTTP answer once, with the status the
// client got: for every status, the metric's count is the number of answers
// a recorder around the handler saw with it.
func TestMetricsResponsesMatchTheAnswers(t *testing.T) {
	mr := newMeterRig(t)
	rec := &statusRecorder{counts: map[int]int{}}
	h := streamable.New(demotools.NewServer("lifeline-test", "1"), streamable.Config{
		MeterProvider: mr.mp, HeartbeatInterval: testHeartbeat, MaxBodyBytes: 1 << 10,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(rec.wrap(h))
	r := &rig{t: t, h: h, ts: ts}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.Close()
	})
	ctx := testutil.Context(t, wait)
	do := func(method string, c *testutil.Client, body []byte, hdr map[string]string) int {
		t.Helper()
		req, err := c.NewRequest(ctx, method, body)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			if v == "" {
				req.Header.Del(k)
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	c := r.session()
	echo := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`)
	do(http.MethodPost, c, echo, nil)
	do(http.MethodPost, c, []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lifeline_progress","arguments":{"steps":2},"_meta":{"progressToken":"p"}}}`), nil)
	do(http.MethodPost, c, echo, map[string]string{"Content-Type": "text/plain"})
	do(http.MethodPost, c, []byte(`{"jsonrpc":`), nil)
	do(http.MethodPost, c, echo, map[string]string{"Accept": "text/html"})
	do(http.MethodPut, c, echo, nil)
	do(http.MethodPost, c, []byte(`{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"`+strings.Repeat("y", 2<<10)+`"}}`), nil)
	do(http.MethodPost, c, []byte(`{"jsonrpc":"2.0","id":99999,"result":{}}`), nil)
	do(http.MethodPost, testutil.NewClient(ts.URL), echo, nil)
	do(http.MethodPost, c, echo, map[string]string{"Mcp-Session-Id": "no-such-session"})
	do(http.MethodPost, c, echo, map[string]string{"MCP-Protocol-Version": "1999-01-01"})
	do(http.MethodOptions, c, nil, map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
	do(http.MethodPost, c, echo, map[string]string{"Origin": "http://evil.example"})
	s := r.stream(c)
	if st := do(http.MethodGet, c, nil, nil); st != http.StatusConflict {
		t.Fatalf("second GET: %d, want 409", st)
	}
	s.Close()
	testutil.Eventually(t, wait, "the GET to end", func() bool { return h.Stats().GetStreams == 0 })
	r.modernPost(ctx, t, modernMsg(5, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "m"}}, nil), nil)
	r.modernPost(ctx, t, modernMsg(6, "no/such", nil, nil), nil)
	old := session20250326(t, r)
	postBatch(t, old,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	postBatch(t, old, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	do(http.MethodDelete, c, nil, nil)
	do(http.MethodDelete, c, nil, nil)
	do(http.MethodGet, c, nil, nil)

	ms := mr.collect()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	total := 0
	for status, n := range rec.counts {
		total += n
		ms.check(t, float64(n), "lifeline.http.responses", attrStatus(status))
	}
	ms.check(t, float64(total), "lifeline.http.responses")
	if len(rec.counts) < 10 {
		t.Errorf("the scenario gave only statuses %v", rec.counts)
	}
}
