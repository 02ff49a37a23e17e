package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// TestDemoWithRedis runs the demo on a Redis store under a custom prefix:
// the handshake, tools/list and a tool call over raw HTTP, with the
// session's record in Redis under that prefix.
func TestDemoWithRedis(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	redisURL := "redis://" + redisAddr + "/0"
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL, "-redis-prefix", "demo-test:")
	ctx := testutil.Context(t, wait)

	c := rawClient(t, "http://"+addr+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if got := listTools(ctx, t, c); !slices.Equal(got, demoTools) {
		t.Errorf("tools %q, want %q", got, demoTools)
	}
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "hello, redis"}); got != "hello, redis" {
		t.Errorf("echo returned %q", got)
	}

	// The session lives in Redis, under the prefix given.
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer client.Close()
	store := redisstore.New(client, redisstore.Options{Prefix: "demo-test:"})
	defer store.Close()
	if rec, err := store.Get(ctx, c.SessionID); err != nil || rec.ID != c.SessionID {
		t.Errorf("the session's record under prefix demo-test: is %+v, %v", rec, err)
	}
	defaultPrefix := redisstore.New(client, redisstore.Options{Prefix: demoRedisPrefix})
	defer defaultPrefix.Close()
	if _, err := defaultPrefix.Get(ctx, c.SessionID); !errors.Is(err, sessionstore.ErrNotFound) {
		t.Errorf("the session's record under the default prefix: %v, want ErrNotFound", err)
	}

	if line := startupLine(logs.String()); !strings.Contains(line, "store=redis") ||
		!strings.Contains(line, "redis="+redisURL) || !strings.Contains(line, "redis_prefix=demo-test:") {
		t.Errorf("startup line does not describe the Redis store: %q", line)
	}
	if strings.Contains(logs.String(), "unreachable") {
		t.Errorf("Redis reported unreachable though it runs:\n%s", logs.String())
	}
	if err := stop(); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
}

// startupLine returns the demo's "serving MCP" log line.
func startupLine(logs string) string {
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "lifeline-demo serving MCP") {
			return line
		}
	}
	return ""
}

// TestDemoReplicasShareSessions runs two demos on one Redis: a session
// initialized on one is served by the other, and by the first again. The
// session's record is under the demo's own default prefix (its server
// name), not a prefix every lifeline application would share.
func TestDemoReplicasShareSessions(t *testing.T) {
	redisAddr := testutil.StartRedis(t)
	redisURL := "redis://" + redisAddr + "/0"
	logs := newLogBuffer(t)
	addrA, stopA := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL)
	addrB, stopB := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL)
	ctx := testutil.Context(t, wait)

	c := rawClient(t, "http://"+addrA+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize on replica A: %v", err)
	}
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	defer client.Close()
	for prefix, want := range map[string]error{"lifeline-demo:": nil, "lifeline:": sessionstore.ErrNotFound} {
		store := redisstore.New(client, redisstore.Options{Prefix: prefix})
		_, err := store.Get(ctx, c.SessionID)
		store.Close()
		if want == nil && err != nil || want != nil && !errors.Is(err, want) {
			t.Errorf("the session's record under prefix %q: %v, want %v", prefix, err, want)
		}
	}
	c.URL = "http://" + addrB + "/mcp"
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "on B"}); got != "on B" {
		t.Errorf("echo on replica B returned %q", got)
	}
	if got := listTools(ctx, t, c); !slices.Equal(got, demoTools) {
		t.Errorf("tools on replica B %q, want %q", got, demoTools)
	}
	c.URL = "http://" + addrA + "/mcp"
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "back on A"}); got != "back on A" {
		t.Errorf("echo on replica A returned %q", got)
	}
	for name, stop := range map[string]func() error{"A": stopA, "B": stopB} {
		if err := stop(); err != nil {
			t.Errorf("run of replica %s returned %v, want nil", name, err)
		}
	}
}

// TestDemoBadRedisURL: a -redis value that is not a Redis URL fails
// startup with an error naming the flag (and not repeating a password),
// before anything runs.
func TestDemoBadRedisURL(t *testing.T) {
	testutil.NoLeaks(t)
	for _, bad := range []string{
		"http://127.0.0.1:6379",
		"127.0.0.1:6379",
		"redis://127.0.0.1:6379/not-a-db",
		"redis://user:s3cret@127.0.0.1:6379/0/extra",
		"redis://user:s3cret@127.0.0.1:bad-port/0",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		ready := false
		err := run(ctx, []string{"-addr", "127.0.0.1:0", "-redis", bad}, io.Discard, func(string) { ready = true })
		cancel()
		if err == nil || !strings.Contains(err.Error(), "-redis") {
			t.Errorf("run with -redis %q = %v, want an error naming -redis", bad, err)
			continue
		}
		if ready {
			t.Errorf("run with -redis %q reported ready", bad)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error for -redis %q shows the password: %v", bad, err)
		}
		t.Logf("-redis %q: %v", bad, err)
	}
}

// TestDemoEmptyRedisPrefix: an empty -redis-prefix fails startup with an
// error naming the flag, before anything runs.
func TestDemoEmptyRedisPrefix(t *testing.T) {
	testutil.NoLeaks(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	ready := false
	err := run(ctx, []string{"-addr", "127.0.0.1:0", "-redis", "redis://127.0.0.1:6379/0", "-redis-prefix", ""}, io.Discard,
		func(string) { ready = true })
	if err == nil || !strings.Contains(err.Error(), "-redis-prefix") || ready {
		t.Errorf("run with an empty -redis-prefix = %v (ready %t), want an error naming -redis-prefix", err, ready)
	}
}

// TestDemoRedisDownAtStartup: a Redis that does not answer at startup is a
// warning, not a failure. Requests that need it get 503 meanwhile, and the
// demo serves once Redis is back, with no restart.
func TestDemoRedisDownAtStartup(t *testing.T) {
	r := testutil.StartRedisServer(t)
	r.Stop()
	logs := newLogBuffer(t)
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", "redis://"+r.Addr()+"/0")
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "Redis is unreachable") {
		t.Errorf("no warning that Redis is unreachable:\n%s", logs.String())
	}
	ctx := testutil.Context(t, wait)
	c := rawClient(t, "http://"+addr+"/mcp")
	resp, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "lifeline-demo-test", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := resp.Last(); resp.Status != http.StatusServiceUnavailable || err != nil || m.Error == nil ||
		!strings.Contains(strings.ToLower(m.Error.Message), "redis is unavailable") {
		t.Errorf("initialize with Redis down: status %d, body %q; want 503 with a JSON-RPC error saying Redis is unavailable", resp.Status, resp.Body)
	}

	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	var initErr error
	testutil.Eventually(t, wait, "initialize to succeed once Redis is back", func() bool {
		_, initErr = c.Initialize(ctx)
		return initErr == nil
	})
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "recovered"}); got != "recovered" {
		t.Errorf("echo returned %q", got)
	}
	if err := stop(); err != nil {
		t.Errorf("run returned %v, want nil", err)
	}
}

// TestDemoReplicasBehindRoundRobinProxy runs three demos on one Redis behind
// a proxy that sends each request to the next replica: the handshake, the
// GET stream and the calls of one session each land on a different replica,
// and the session's notifications still reach its stream.
func TestDemoReplicasBehindRoundRobinProxy(t *testing.T) {
	redisURL := "redis://" + testutil.StartRedis(t) + "/0"
	logs := newLogBuffer(t)
	var backends []string
	for range 3 {
		addr, _ := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL, "-heartbeat", "50ms")
		backends = append(backends, "http://"+addr)
	}
	p, err := testutil.NewRoundRobinProxy(backends...)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Close()
		front.Close()
		p.Close()
	})
	ctx := testutil.Context(t, wait)

	c := rawClient(t, front.URL+"/mcp")
	p.Pin(0)
	if _, err := c.Initialize(ctx); err != nil { // initialize on 0, initialized on 1
		t.Fatalf("initialize: %v", err)
	}
	s, err := c.OpenStream(ctx) // on 2
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Status != http.StatusOK {
		t.Fatalf("GET stream through the proxy: status %d, body %q", s.Status, s.Body)
	}
	// From here on the heartbeat's pongs take turns too, so which replica
	// serves what varies; every request still goes to the next one.
	s.AnswerPings(true)
	if got := listTools(ctx, t, c); !slices.Equal(got, demoTools) {
		t.Errorf("tools %q, want %q", got, demoTools)
	}
	if got := callOK(ctx, t, c, "lifeline_notify_session", map[string]any{"count": 2}); got != "sent 2 notifications" {
		t.Errorf("lifeline_notify_session returned %q", got)
	}
	for i := range 2 {
		m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
		if err != nil {
			t.Fatalf("notification %d on the GET stream: %v", i, err)
		}
		if !strings.Contains(string(m.Params), `"lifeline_notify_session"`) {
			t.Errorf("notification %d: %s", i, m.Params)
		}
	}
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "still here"}); got != "still here" {
		t.Errorf("echo returned %q", got)
	}
}
