package soak_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/internal/soak"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// demoBinary is the lifeline-demo binary TestMain builds once for every
// test of the package.
var demoBinary string

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "lifeline-soak-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		demoBinary, err = testutil.BuildDemo(ctx, dir)
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		code := m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				return 1
			}
		}
		return code
	}())
}

// wait bounds every wait of these tests.
const wait = 30 * time.Second

// startReplicas starts a redis-server (the test skips, naming it, if it is
// not installed) and n demo replicas on it behind a fault proxy
// configured by proxy, with the soak's replica flags.
func startReplicas(t *testing.T, n int, proxy testutil.FaultProxyConfig) (*testutil.Replicas, *testutil.RedisServer) {
	t.Helper()
	redis := testutil.StartRedisServer(t)
	// LIFELINE_SOAK_LOGS=dir keeps the replicas' logs in dir/<test>.
	var logs string
	if d := os.Getenv("LIFELINE_SOAK_LOGS"); d != "" {
		logs = filepath.Join(d, t.Name())
		if err := os.MkdirAll(logs, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	reps := testutil.StartReplicas(t, testutil.ReplicaOptions{
		Binary: demoBinary, N: n, RedisAddr: redis.Addr(), Args: soak.ReplicaArgs(), Proxy: proxy, Dir: logs,
	})
	return reps, redis
}

// startClient starts a resuming client on url, closed when the test ends.
func startClient(t *testing.T, url, name string) *testutil.ResumingClient {
	t.Helper()
	c := testutil.NewResumingClient(testutil.ResumingClientConfig{URL: url, Name: name, Logf: t.Logf})
	if err := c.Start(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// isGet picks a connection whose last request is a GET of the MCP
// endpoint.
func isGet(ci testutil.ConnInfo) bool { return ci.Method == "GET" && ci.Target == "/mcp" }

// checkClean fails the test unless the client's counts show nothing
// lost, doubled, refused, failed or hung, and no session lost.
func checkClean(t *testing.T, c *testutil.ResumingClient, what string) testutil.ResumingStats {
	t.Helper()
	ctx := testutil.Context(t, wait)
	if err := c.WaitDelivered(ctx); err != nil {
		t.Errorf("%s: %v; missing: %v", what, err, c.Missing(10))
	}
	st := c.Stats()
	if st.NotesLost != 0 || st.NotesDuplicated != 0 || st.NotesRefused != 0 || st.Failures != 0 || st.Hung != 0 || st.Reinits != 0 {
		t.Errorf("%s: %+v; want nothing lost, duplicated, refused, failed or hung, and no re-initialization", what, st)
	}
	return st
}
