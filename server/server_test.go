package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests; a broken build fails, not hangs.
const wait = 10 * time.Second

var quiet = slog.New(slog.DiscardHandler)

// newServer returns a Server for the demo tools, shut down (bounded) when
// the test ends if the test did not.
func newServer(t *testing.T, opts ...server.Option) *server.Server {
	t.Helper()
	opts = append([]server.Option{
		server.WithStreamableHTTPLogger(quiet),
		server.WithHeartbeatInterval(20 * time.Millisecond),
	}, opts...)
	srv := server.New(demotools.NewServer("lifeline-server-test", "1"), opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	return srv
}

// serve runs srv.Serve on a fresh loopback listener and returns the base
// URL and a channel with Serve's result.
func serve(t *testing.T, srv *server.Server) (string, <-chan error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		// Whatever the test did, Serve must not outlive it.
		l.Close()
	})
	return "http://" + l.Addr().String(), served
}

// httpClient returns a client with its own transport, whose idle
// connections are closed when the test ends.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func rawClient(t *testing.T, url string) *testutil.Client {
	c := testutil.NewClient(url)
	c.HTTP = httpClient(t)
	return c
}

func awaitServe(t *testing.T, served <-chan error) error {
	t.Helper()
	select {
	case err := <-served:
		return err
	case <-time.After(wait):
		t.Fatalf("Serve did not return within %v", wait)
		return nil
	}
}

func TestServeInitializeShutdown(t *testing.T) {
	srv := newServer(t)
	base, served := serve(t, srv)
	ctx := testutil.Context(t, wait)

	c := rawClient(t, base+server.DefaultEndpointPath)
	m, err := c.Initialize(ctx)
	if err != nil {
		t.Fatalf("initialize at %s: %v", c.URL, err)
	}
	if !strings.Contains(string(m.Result), `"lifeline-server-test"`) {
		t.Errorf("initialize result %s does not name the server", m.Result)
	}
	resp, err := c.CallTool(ctx, "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if last, err := resp.Last(); err != nil || resp.Status != http.StatusOK || !strings.Contains(string(last.Result), `"hi"`) {
		t.Fatalf("echo: status %d, message %+v, err %v", resp.Status, last, err)
	}
	if got := srv.Handler().Stats().Sessions; got != 1 {
		t.Errorf("Stats().Sessions = %d after one initialize, want 1", got)
	}

	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v, want nil", err)
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
	if got := srv.Handler().Stats(); got != (streamable.Stats{}) {
		t.Errorf("Stats after Shutdown = %+v, want all zero", got)
	}
	// The listener is closed: nothing answers any more.
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "again"}); err == nil {
		t.Error("a request after Shutdown got an answer")
	}
	// A second Shutdown is harmless.
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("second Shutdown = %v, want nil", err)
	}
}

// Shutdown ends open GET streams itself, so it does not wait for their
// clients to go away.
func TestShutdownEndsOpenStreams(t *testing.T) {
	srv := newServer(t)
	base, served := serve(t, srv)
	ctx := testutil.Context(t, wait)

	c := rawClient(t, base+server.DefaultEndpointPath)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Status != http.StatusOK {
		t.Fatalf("GET status %d: %s", s.Status, s.Body)
	}
	s.AnswerPings(true)
	testutil.Eventually(t, wait, "the GET stream is registered", func() bool {
		return srv.Handler().Stats().GetStreams == 1
	})

	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with an open GET stream = %v, want nil", err)
	}
	select {
	case <-s.Ended():
	case <-ctx.Done():
		t.Fatal("the GET stream was still open after Shutdown returned")
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
}

func TestWithEndpointPath(t *testing.T) {
	srv := newServer(t, server.WithEndpointPath("/custom"))
	base, served := serve(t, srv)
	ctx := testutil.Context(t, wait)

	if _, err := rawClient(t, base+"/custom").Initialize(ctx); err != nil {
		t.Errorf("initialize at /custom: %v", err)
	}
	resp, err := rawClient(t, base+"/mcp").Call(ctx, "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "t", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusNotFound {
		t.Errorf("initialize at /mcp with WithEndpointPath(/custom): status %d, want 404", resp.Status)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
}

func TestStartConflictingAddress(t *testing.T) {
	hs := &http.Server{Addr: "127.0.0.1:1"}
	srv := newServer(t, server.WithStreamableHTTPServer(hs))
	err := srv.Start("127.0.0.1:2")
	if err == nil {
		t.Fatal("Start with an address other than the http.Server's = nil, want an error")
	}
	for _, want := range []string{"conflicting listen address", `"127.0.0.1:1"`, `"127.0.0.1:2"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Start error %q does not contain %s", err, want)
		}
	}
	if hs.Addr != "127.0.0.1:1" {
		t.Errorf("the http.Server's Addr changed to %q", hs.Addr)
	}
	// The failed Start left the Server usable: Serve on a listener works.
	base, served := serve(t, srv)
	ctx := testutil.Context(t, wait)
	if _, err := rawClient(t, base+server.DefaultEndpointPath).Initialize(ctx); err != nil {
		t.Errorf("initialize after a failed Start: %v", err)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
}

// A Server given an http.Server whose Handler is already set uses it as is:
// the caller routes the endpoint.
func TestWithStreamableHTTPServerOwnMux(t *testing.T) {
	mux := http.NewServeMux()
	hs := &http.Server{Handler: mux}
	srv := newServer(t, server.WithStreamableHTTPServer(hs))
	mux.Handle("/elsewhere", srv)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	base, served := serve(t, srv)
	ctx := testutil.Context(t, wait)

	if _, err := rawClient(t, base+"/elsewhere").Initialize(ctx); err != nil {
		t.Errorf("initialize at the caller's route: %v", err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: status %d", resp.StatusCode)
	}
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := awaitServe(t, served); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
	}
}

// Shutdown before Serve: Serve must not start serving a transport that is
// already shut down ("serves until Shutdown, when it returns
// http.ErrServerClosed"). net/http's own Server returns ErrServerClosed at
// once when Serve follows Shutdown.
func TestShutdownBeforeServe(t *testing.T) {
	srv := newServer(t)
	ctx := testutil.Context(t, wait)
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown of a Server that never served = %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve after Shutdown returned %v, want http.ErrServerClosed", err)
		}
		// Like net/http's Serve ("Serve always returns a non-nil error and
		// closes l"), it must not leave the port listening with nobody
		// accepting, where connections would hang.
		conn, err := net.DialTimeout("tcp", l.Addr().String(), time.Second)
		if err == nil {
			conn.Close()
			t.Errorf("Serve after Shutdown returned but left its listener open: connections to %s are accepted by the kernel and never served", l.Addr())
		}
	case <-time.After(2 * time.Second):
		resp, rerr := rawClient(t, "http://"+l.Addr().String()+server.DefaultEndpointPath).Call(ctx, "ping", nil)
		status := 0
		if rerr == nil {
			status = resp.Status
		}
		t.Errorf("BUG: Serve after Shutdown is still serving after 2s (a request gets status %d): "+
			"Shutdown found no http.Server (Serve creates the default one lazily), so the later Serve "+
			"builds one and serves a shut-down transport until its listener is closed", status)
		l.Close()
		<-served
	}
}
