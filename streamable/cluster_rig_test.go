package streamable_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// clusterHeartbeat is the heartbeat of the replicas in cluster tests: short,
// but long enough for a Redis round trip per renewal.
const clusterHeartbeat = 20 * time.Millisecond

// Tools the cluster tests add to the demo server.
const (
	toolWhoAmI         = "test_whoami"
	toolSampleOnStream = "test_sample_on_stream"
	toolSampleInCall   = "test_sample_in_call"
)

// replica is one transport of a cluster: its own MCPServer, Redis client
// and store, on its own loopback listener.
type replica struct {
	name  string
	mcp   *server.MCPServer
	h     *streamable.Handler
	ts    *httptest.Server
	store *redisstore.Store
}

// cluster is three replicas sharing one redis-server under a prefix of
// their own, and a round-robin proxy in front of them.
type cluster struct {
	t        testing.TB
	setup    []func(*server.MCPServer) // run on each replica's MCPServer
	redis    *testutil.RedisServer
	replicas []*replica
	rr       *testutil.RoundRobinProxy
	proxy    string // the round-robin proxy's base URL
	// wrap, when set, wraps the store of the replica named name (a slow
	// store, say).
	wrap func(name string, store sessionstore.Store) sessionstore.Store
	// configure, when set, adjusts each replica's Config with its store
	// (to give it the store's event log, say).
	configure func(store *redisstore.Store, cfg *streamable.Config)
	// shutdownMayFail names the replicas whose Shutdown a test made fail
	// (its ctx ended first): the cleanup's Shutdown returns that error.
	shutdownMayFail map[string]bool
}

// newCluster starts a redis-server and three replicas on it. Zero fields
// of cfg take the cluster test defaults; opts configures each store.
func newCluster(t *testing.T, cfg streamable.Config, opts redisstore.Options) *cluster {
	t.Helper()
	return newClusterTB(t, cfg, opts)
}

// newClusterTB is newCluster for tests and benchmarks alike; setup runs on
// each replica's MCPServer.
func newClusterTB(t testing.TB, cfg streamable.Config, opts redisstore.Options, setup ...func(*server.MCPServer)) *cluster {
	t.Helper()
	return newConfiguredCluster(t, cfg, opts, nil, setup...)
}

// newConfiguredCluster is newClusterTB with configure applied to each
// replica's Config and store.
func newConfiguredCluster(t testing.TB, cfg streamable.Config, opts redisstore.Options,
	configure func(*redisstore.Store, *streamable.Config), setup ...func(*server.MCPServer)) *cluster {
	t.Helper()
	c := &cluster{t: t, redis: testutil.StartRedisServer(t), setup: setup, configure: configure}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = clusterHeartbeat
	}
	opts.Prefix = "t" + rand.Text()[:8] + ":"
	var urls []string
	for _, name := range []string{"A", "B", "C"} {
		r := c.start(name, cfg, opts)
		c.replicas = append(c.replicas, r)
		urls = append(urls, r.ts.URL)
	}
	rr, err := testutil.NewRoundRobinProxy(urls...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(rr)
	t.Cleanup(func() { rr.Close(); ts.Close(); rr.Close() })
	c.rr, c.proxy = rr, ts.URL
	return c
}

func (c *cluster) start(name string, cfg streamable.Config, opts redisstore.Options) *replica {
	rc := redis.NewClient(&redis.Options{Addr: c.redis.Addr(), ContextTimeoutEnabled: true})
	store := redisstore.New(rc, opts)
	cfg.Store = store
	if c.configure != nil {
		c.configure(store, &cfg)
	}
	if c.wrap != nil {
		cfg.Store = c.wrap(name, store)
	}
	var out io.Writer = io.Discard
	if os.Getenv("LIFELINE_TEST_LOG") != "" {
		out = os.Stderr
	}
	cfg.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("replica", name)
	mcpServer := demotools.NewServer("lifeline-cluster-test", "1")
	addClusterTools(mcpServer)
	for _, f := range c.setup {
		f(mcpServer)
	}
	h := streamable.New(mcpServer, cfg)
	r := &replica{name: name, mcp: mcpServer, h: h, ts: httptest.NewServer(h), store: store}
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil && !c.shutdownMayFail[name] {
			c.t.Errorf("replica %s: Shutdown: %v", name, err)
		}
		r.ts.Close()
		_ = store.Close()
		_ = rc.Close()
	})
	return r
}

// client returns a raw client for replica i (0 = A) that carries from's
// session, or a fresh one when from is nil.
func (c *cluster) client(i int, from *testutil.Client) *testutil.Client {
	cl := testutil.NewClient(c.replicas[i].ts.URL)
	if from != nil {
		cl.SessionID, cl.ProtocolVersion = from.SessionID, from.ProtocolVersion
	}
	return cl
}

// session initializes a session on replica i.
func (c *cluster) session(i int) *testutil.Client {
	c.t.Helper()
	cl := c.client(i, nil)
	if _, err := cl.Initialize(testutil.Context(c.t, wait)); err != nil {
		c.t.Fatal(err)
	}
	return cl
}

// stream opens cl's GET stream and requires a 200.
func (c *cluster) stream(cl *testutil.Client) *testutil.Stream {
	c.t.Helper()
	s, err := cl.OpenStream(context.Background())
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(s.Close)
	if s.Status != http.StatusOK {
		c.t.Fatalf("GET on %s: status %d: %s", cl.URL, s.Status, s.Body)
	}
	return s
}

// toolText calls a tool and returns its first text content, failing the
// test on anything but a successful result.
func toolText(t testing.TB, cl *testutil.Client, name string, args map[string]any) string {
	t.Helper()
	resp, err := cl.CallTool(testutil.Context(t, wait), name, args)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "tools/call "+name, resp.Status, http.StatusOK, resp.Body)
	m, err := resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	if m.Error != nil {
		t.Fatalf("tools/call %s: error %d %s", name, m.Error.Code, m.Error.Message)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 || res.IsError {
		t.Fatalf("tools/call %s: result %s (%v)", name, m.Result, err)
	}
	return res.Content[0].Text
}

// addClusterTools adds the tools the cluster tests need: one reporting what
// the serving replica knows of the session, and two asking the client for a
// sampling round trip, on the session's GET stream and on the call's own
// response.
func addClusterTools(s *server.MCPServer) {
	s.EnableSampling()
	s.AddTool(mcp.NewTool(toolWhoAmI, mcp.WithDescription("Reports the session's client info and protocol version.")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs := server.ClientSessionFromContext(ctx)
			info := cs.(server.SessionWithClientInfo)
			pv := cs.(server.SessionWithProtocolVersion)
			return mcp.NewToolResultText(fmt.Sprintf("%s/%s %s sampling=%t",
				info.GetClientInfo().Name, info.GetClientInfo().Version, pv.ProtocolVersion(),
				info.GetClientCapabilities().Sampling != nil)), nil
		})
	sample := func(onStream bool) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if onStream {
				ctx = streamable.OnSessionStream(ctx, s)
			}
			res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(req.GetString("prompt", ""))}},
				MaxTokens: 16,
			}})
			if err != nil {
				return mcp.NewToolResultError("sampling failed: " + err.Error()), nil
			}
			text, _ := res.Content.(mcp.TextContent)
			return mcp.NewToolResultText("sampled: " + text.Text), nil
		}
	}
	s.AddTool(mcp.NewTool(toolSampleOnStream, mcp.WithString("prompt")), sample(true))
	s.AddTool(mcp.NewTool(toolSampleInCall, mcp.WithString("prompt")), sample(false))
}

// samplingResult is a client's answer to sampling/createMessage.
func samplingResult(text string) map[string]any {
	return map[string]any{"role": "assistant", "model": "test",
		"content": map[string]any{"type": "text", "text": text}}
}

// pauseRedis makes the cluster's redis-server hang (SIGSTOP) and returns
// the function that resumes it; the test's cleanup resumes it if the test
// did not.
func (c *cluster) pauseRedis() (resume func()) {
	c.t.Helper()
	if err := c.redis.Pause(); err != nil {
		c.t.Fatal(err)
	}
	var once sync.Once
	resume = func() {
		once.Do(func() {
			if err := c.redis.Resume(); err != nil {
				c.t.Error(err)
			}
		})
	}
	c.t.Cleanup(resume)
	return resume
}
