package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// get GETs url with c and returns the status and body.
func get(ctx context.Context, t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// demoScenario initializes a session on the demo at base, calls echo (one
// success, one tool error), opens and closes its GET stream, and deletes
// it.
func demoScenario(ctx context.Context, t *testing.T, base string, hc *http.Client) {
	t.Helper()
	c := testutil.NewClient(base + "/mcp")
	c.HTTP = hc
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{{"text": "hi"}, {}} {
		if resp, err := c.CallTool(ctx, "echo", args); err != nil || resp.Status != http.StatusOK {
			t.Fatalf("echo %v: %v %+v", args, err, resp)
		}
	}
	s, err := c.OpenStream(ctx)
	if err != nil || s.Status != http.StatusOK {
		t.Fatalf("GET stream: %v %+v", err, s)
	}
	s.Close()
	if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
}

// TestDemoServesMetricsAndHealth: with -metrics the demo serves the
// transport's metrics in the Prometheus text format at /metrics, lifeline's
// own and the MCP conventions', and its health checks (/readyz, /livez,
// /healthz) on the same listener.
func TestDemoServesMetricsAndHealth(t *testing.T) {
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-metrics", "-heartbeat", "50ms")
	base := "http://" + addr
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	ctx := testutil.Context(t, wait)
	demoScenario(ctx, t, base, hc)

	status, body := get(ctx, t, hc, base+"/metrics")
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", status, body)
	}
	for _, want := range []string{
		"lifeline_sessions_created_total", "lifeline_sessions_ended_total", "lifeline_sessions_open",
		"mcp_server_operation_duration_seconds_bucket", `mcp_method_name="tools/call"`, `gen_ai_tool_name="echo"`,
		`error_type="tool_error"`, "mcp_server_session_duration_seconds",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	for path, want := range map[string]string{"/readyz": `"ready"`, "/livez": `"alive"`, "/healthz": `"alive"`} {
		if status, body := get(ctx, t, hc, base+path); status != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d %s", path, status, body)
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// Without -metrics there is no /metrics.
func TestDemoWithoutMetricsServesNone(t *testing.T) {
	logs := newLogBuffer(t)
	addr, _ := startDemo(t, logs, "-addr", "127.0.0.1:0")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	if status, _ := get(testutil.Context(t, wait), t, &http.Client{Transport: tr}, "http://"+addr+"/metrics"); status != http.StatusNotFound {
		t.Fatalf("GET /metrics without -metrics: %d", status)
	}
}

// otlpSink is an OTLP/HTTP collector that keeps what is posted to
// /v1/traces.
type otlpSink struct {
	mu    sync.Mutex
	posts [][]byte
	ctype []string
}

func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.Error(w, "not an OTLP traces endpoint", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	s.posts = append(s.posts, body)
	s.ctype = append(s.ctype, r.Header.Get("Content-Type"))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (s *otlpSink) all() ([]byte, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Join(s.posts, nil), append([]string(nil), s.ctype...)
}

// TestDemoExportsTracesOverOTLP: with -otlp the demo posts its spans to the
// collector, flushed at shutdown at the latest.
func TestDemoExportsTracesOverOTLP(t *testing.T) {
	sink := &otlpSink{}
	collector := httptest.NewServer(sink)
	defer collector.Close()
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-otlp", strings.TrimPrefix(collector.URL, "http://"))
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	demoScenario(testutil.Context(t, wait), t, "http://"+addr, &http.Client{Transport: tr})
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got, ctypes := sink.all()
	if len(ctypes) == 0 || ctypes[0] != "application/x-protobuf" {
		t.Fatalf("the collector got %d posts (Content-Types %v)", len(ctypes), ctypes)
	}
	for _, want := range []string{"initialize", "tools/call echo", "mcp.session.id", "lifeline-demo"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("the exported spans lack %q", want)
		}
	}
}

func TestOTLPFlagValues(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:4318":                  "http://127.0.0.1:4318/v1/traces",
		"http://collector:4318/":          "http://collector:4318/v1/traces",
		"https://collector/custom/traces": "https://collector/custom/traces",
	} {
		if got, err := otlpURL(in); err != nil || got != want {
			t.Errorf("otlpURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := otlpURL("ftp://x"); err == nil {
		t.Error("otlpURL took an ftp URL")
	}
}
