package streamable_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testHeartbeat is the heartbeat the whole transport runs at in tests.
const testHeartbeat = 5 * time.Millisecond

// defaultHeartbeat, as a Config's HeartbeatInterval, asks newRig for the
// transport's own default instead of testHeartbeat.
const defaultHeartbeat time.Duration = -1 << 62

// wait bounds every wait in these tests; a broken build fails, not hangs.
const wait = 10 * time.Second

type rig struct {
	t   *testing.T
	h   *streamable.Handler
	ts  *httptest.Server
	mcp *server.MCPServer
	// shutdownFailed: the test made Shutdown fail on purpose; the cleanup's
	// Shutdown returns the same error.
	shutdownFailed bool
}

// newRig serves the demo MCP server through a lifeline transport on a
// loopback httptest server. Zero fields of cfg take test defaults: a 5 ms
// heartbeat and a quiet logger.
func newRig(t *testing.T, cfg streamable.Config, setup ...func(*server.MCPServer)) *rig {
	t.Helper()
	switch cfg.HeartbeatInterval {
	case 0:
		cfg.HeartbeatInterval = testHeartbeat
	case defaultHeartbeat:
		cfg.HeartbeatInterval = 0 // the transport's own default
	}
	if cfg.Logger == nil {
		var out io.Writer = io.Discard
		if os.Getenv("LIFELINE_TEST_LOG") != "" {
			out = os.Stderr
		}
		cfg.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	mcpServer := demotools.NewServer("lifeline-test", "1")
	for _, f := range setup {
		f(mcpServer)
	}
	h := streamable.New(mcpServer, cfg)
	ts := httptest.NewServer(h)
	r := &rig{t: t, h: h, ts: ts, mcp: mcpServer}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil && !r.shutdownFailed {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return r
}

// client returns a raw client for the rig's endpoint.
func (r *rig) client() *testutil.Client { return testutil.NewClient(r.ts.URL) }

// session returns an initialized client.
func (r *rig) session() *testutil.Client {
	r.t.Helper()
	c := r.client()
	if _, err := c.Initialize(testutil.Context(r.t, wait)); err != nil {
		r.t.Fatal(err)
	}
	return c
}

// stream opens the client's GET stream and requires a 200.
func (r *rig) stream(c *testutil.Client) *testutil.Stream {
	r.t.Helper()
	s, err := c.OpenStream(context.Background())
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(s.Close)
	if s.Status != http.StatusOK {
		r.t.Fatalf("GET status %d: %s", s.Status, s.Body)
	}
	return s
}

// quiesce waits until the handler holds no stream.
func (r *rig) quiesce() {
	r.t.Helper()
	testutil.Eventually(r.t, wait, "all streams closed", func() bool {
		st := r.h.Stats()
		return st.GetStreams == 0 && st.PostStreams == 0
	})
}

// shutDownAtCleanup shuts h down, then closes ts, when t ends: the
// handler first (its Shutdown must succeed within wait), then the server
// that serves it.
func shutDownAtCleanup(t *testing.T, h *streamable.Handler, ts *httptest.Server) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
}

func wantStatus(t testing.TB, what string, got, want int, body []byte) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: status %d, want %d (body %q)", what, got, want, body)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

type benchRig struct {
	h  *streamable.Handler
	ts *httptest.Server
}

// newBenchRig is newRig for benchmarks: the demo tools, quiet logs, shut
// down when the benchmark ends (or earlier with shutdown).
func newBenchRig(b *testing.B, cfg streamable.Config) *benchRig {
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h := streamable.New(demotools.NewServer("lifeline-bench", "1"), cfg)
	r := &benchRig{h: h, ts: httptest.NewServer(h)}
	b.Cleanup(r.shutdown)
	return r
}

func (r *benchRig) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_ = r.h.Shutdown(ctx)
	r.ts.Close()
}
