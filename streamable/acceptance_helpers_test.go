package streamable_test

// Black-box acceptance tests, written from the transport's documented
// promises and public API only (README, go doc), against a real net/http
// server on 127.0.0.1 spoken to with raw HTTP.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// ---------------------------------------------------------------- rig

type bbRig struct {
	url string
	h   *streamable.Handler
	hc  *http.Client
}

// bbStart serves srv through a lifeline Handler on a loopback httptest
// server. wrap, when not nil, wraps the handler (to observe requests from
// the outside). The handler is shut down before the server is closed.
func bbStart(t *testing.T, srv *server.MCPServer, cfg streamable.Config, wrap func(http.Handler) http.Handler) *bbRig {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h := streamable.New(srv, cfg)
	var handler http.Handler = h
	if wrap != nil {
		handler = wrap(h)
	}
	ts := httptest.NewServer(handler)
	tr := &http.Transport{MaxIdleConnsPerHost: 16}
	hc := &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.Close()
	})
	t.Cleanup(func() { // runs first
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	return &bbRig{url: ts.URL, h: h, hc: hc}
}

func (r *bbRig) client() *testutil.Client {
	c := testutil.NewClient(r.url)
	c.HTTP = r.hc
	return c
}

func (r *bbRig) session(t *testing.T, ctx context.Context) *testutil.Client {
	t.Helper()
	c := r.client()
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

type bbResult struct {
	resp *testutil.Response
	err  error
}

// bbPostAsync posts msg on c in a goroutine; the answer arrives on the channel.
func bbPostAsync(ctx context.Context, c *testutil.Client, msg any) <-chan bbResult {
	ch := make(chan bbResult, 1)
	go func() {
		r, err := c.Post(ctx, msg)
		ch <- bbResult{r, err}
	}()
	return ch
}

func bbAwait[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("not within %v: %s", d, what)
		var zero T
		return zero
	}
}

func bbToolCall(id any, name string, args map[string]any, meta map[string]any) map[string]any {
	params := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		params["_meta"] = meta
	}
	return map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}
}

// bbToolText returns the text of a tools/call result's first content item.
func bbToolText(t *testing.T, m testutil.Message) string {
	t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatalf("decode tool result %.200s: %v", m.Result, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("tool result without content: %.200s", m.Result)
	}
	return res.Content[0].Text
}

func bbCompact(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}

// bbErrorBody decodes a JSON-RPC error answer body: its raw id ("" when the
// member is absent) and error code.
func bbErrorBody(t *testing.T, body []byte) (id string, code int) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("error body is not a JSON object: %q: %v", body, err)
	}
	var e struct {
		Code int `json:"code"`
	}
	if raw, ok := m["error"]; !ok {
		t.Errorf("error body has no error member: %s", body)
	} else if err := json.Unmarshal(raw, &e); err != nil {
		t.Errorf("bad error member: %s", body)
	}
	if raw, ok := m["id"]; ok {
		id = bbCompact(raw)
	}
	return id, e.Code
}

// ---------------------------------------------------------------- 1: memory

func bbHeap() uint64 {
	for range 3 {
		runtime.GC()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
