package streamable_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The environment of a child replica process (TestClusterReplicaProcess).
const (
	envReplicaRedis     = "LIFELINE_TEST_REPLICA_REDIS"     // the redis-server's address
	envReplicaPrefix    = "LIFELINE_TEST_REPLICA_PREFIX"    // the store's key prefix
	envReplicaHeartbeat = "LIFELINE_TEST_REPLICA_HEARTBEAT" // the heartbeat, as a time.Duration
)

// TestClusterReplicaProcess is not a test of its own but the entry point of
// a child replica process: TestClusterReplicaKilledBySIGKILL re-executes the
// test binary with -test.run=^TestClusterReplicaProcess$ and the
// LIFELINE_TEST_REPLICA_* environment, so that it has a replica it can kill
// with SIGKILL. In a normal run, without that environment, it skips at once;
// everything it does is exercised (and checked) by the parent test. As a
// child it serves the demo tools and the cluster tools through a transport
// on the given Redis and prefix, on a loopback listener whose address it
// prints as "ADDR host:port", until its stdin closes: it never outlives the
// parent, which holds the other end.
func TestClusterReplicaProcess(t *testing.T) {
	addr := os.Getenv(envReplicaRedis)
	if addr == "" {
		t.Skip("runs only as the child replica process of TestClusterReplicaKilledBySIGKILL, which exercises it")
	}
	heartbeat, err := time.ParseDuration(os.Getenv(envReplicaHeartbeat))
	if err != nil {
		t.Fatalf("%s: %v", envReplicaHeartbeat, err)
	}
	rc := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rc.Close()
	store := redisstore.New(rc, redisstore.Options{Prefix: os.Getenv(envReplicaPrefix)})
	defer store.Close()
	var out io.Writer = io.Discard
	if os.Getenv("LIFELINE_TEST_LOG") != "" {
		out = os.Stderr
	}
	mcpServer := demotools.NewServer("lifeline-cluster-test", "1")
	addClusterTools(mcpServer)
	h := streamable.New(mcpServer, streamable.Config{
		HeartbeatInterval: heartbeat,
		Store:             store,
		EventLog:          store.EventLog(sessionstore.EventLogOptions{}),
		Logger:            slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("replica", "A (child)"),
	})
	ts := httptest.NewServer(h) // 127.0.0.1:0
	defer ts.Close()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	}()
	fmt.Printf("ADDR %s\n", ts.Listener.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it, or dies
}

// A replica killed with SIGKILL loses nothing but its connections: with a
// 400 ms heartbeat, the GET stream it held ends at once, its lease expires
// within three heartbeat intervals (the lease TTL), so the client's
// reconnecting GET on B gets 200 within 3 heartbeats + slack of the kill, and
// the session itself survives: tools/call works on B and C, and a
// notification sent by a tool on C arrives on B's new stream.
func TestClusterReplicaKilledBySIGKILL(t *testing.T) {
	const heartbeat = 400 * time.Millisecond
	c := &cluster{t: t, redis: testutil.StartRedisServer(t)}
	prefix := "t" + rand.Text()[:8] + ":"
	child := startReplicaProcess(t, c.redis.Addr(), prefix, heartbeat)
	for _, name := range []string{"B", "C"} { // c.replicas[0] is B, [1] is C
		c.replicas = append(c.replicas, c.start(name, streamable.Config{HeartbeatInterval: heartbeat}, redisstore.Options{Prefix: prefix}))
	}

	a := testutil.NewClient(child.url)
	if _, err := a.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	if got := toolText(t, c.client(0, a), "echo", map[string]any{"text": "on B"}); got != "on B" {
		t.Fatalf("echo on B = %q", got)
	}
	st, err := a.OpenStream(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	wantStatus(t, "GET on A", st.Status, http.StatusOK, st.Body)
	st.AnswerPings(true)
	testutil.Eventually(t, wait, "a ping on A's stream answered", func() bool { return st.Pongs() > 0 })

	killed := child.kill()
	select {
	case <-st.Ended():
		t.Logf("A's GET stream ended %v after SIGKILL: %v", time.Since(killed).Round(time.Millisecond), streamEndReason(st))
	case <-time.After(wait):
		t.Fatal("A's GET stream is still open after A was killed")
	}
	child.wait()

	// A notification sent from C while A's lease still names A: nobody
	// listens for it, so C keeps it for the client's next stream.
	toolText(t, c.client(1, a), "lifeline_notify_session", map[string]any{"count": 1, "bytes": 2})

	// The client reconnects on B: 409 while A's lease lives, then 200.
	b := c.client(0, a)
	var (
		s2        *testutil.Stream
		conflicts int
	)
	for s2 == nil {
		s, err := b.OpenStream(testutil.Context(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		switch s.Status {
		case http.StatusOK:
			s2 = s
		case http.StatusConflict:
			conflicts++
			s.Close()
			if time.Since(killed) > wait {
				t.Fatalf("GET on B still answered 409 %v after A was killed", wait)
			}
		default:
			t.Fatalf("GET on B: status %d: %s", s.Status, s.Body)
		}
	}
	reconnect := time.Since(killed)
	t.Cleanup(s2.Close)
	s2.AnswerPings(true)
	t.Logf("kill → 200 on B: %v (heartbeat %v, %d × 409 before)", reconnect.Round(time.Millisecond), heartbeat, conflicts)
	if bound := 3*heartbeat + 500*time.Millisecond; reconnect > bound {
		t.Errorf("the reconnecting GET on B got 200 %v after A was killed, want within %v (three heartbeats + slack)", reconnect, bound)
	}

	// The session survives.
	for i, want := range []string{"B", "C"} {
		if got := toolText(t, c.client(i, a), "echo", map[string]any{"text": "still on " + want}); got != "still on "+want {
			t.Errorf("echo on %s = %q", want, got)
		}
	}
	toolText(t, c.client(1, a), "lifeline_notify_session", map[string]any{"count": 1, "bytes": 4})
	isLog := func(m testutil.Message) bool { return m.Method == "notifications/message" }
	for _, want := range []string{`"xx"`, `"xxxx"`} {
		m, err := s2.NextMatching(testutil.Context(t, wait), isLog)
		if err != nil {
			t.Fatalf("B's new stream, waiting for %s: %v", want, err)
		}
		if !strings.Contains(string(m.Params), want) {
			t.Fatalf("B's new stream got %s, want the notification with payload %s from C (sent %s)", m.Params, want,
				map[string]string{`"xx"`: "while A's lease lived", `"xxxx"`: "after the reconnect"}[want])
		}
	}
}

// replicaProcess is a child replica: the test binary running
// TestClusterReplicaProcess.
type replicaProcess struct {
	t          *testing.T
	cmd        *exec.Cmd
	url        string // its MCP endpoint
	stdin      io.WriteCloser
	stdoutDone chan struct{} // closed when its stdout reached EOF (it exited)
	stderr     bytes.Buffer  // read only once cmd.Wait has returned
	killed     bool
	waitOnce   sync.Once
}

// startReplicaProcess starts a child replica on the Redis at redisAddr with
// the given prefix and heartbeat and waits (bounded) for its address. It is
// stopped, and always waited for, when the test ends.
func startReplicaProcess(t *testing.T, redisAddr, prefix string, heartbeat time.Duration) *replicaProcess {
	t.Helper()
	p := &replicaProcess{t: t, stdoutDone: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestClusterReplicaProcess$", "-test.count=1")
	p.cmd.Env = append(os.Environ(),
		envReplicaRedis+"="+redisAddr,
		envReplicaPrefix+"="+prefix,
		envReplicaHeartbeat+"="+heartbeat.String())
	if os.Getenv("LIFELINE_TEST_LOG") != "" {
		p.cmd.Stderr = os.Stderr
	} else {
		p.cmd.Stderr = &p.stderr
	}
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start the child replica: %v", err)
	}
	t.Cleanup(p.stop)
	addr := make(chan string, 1)
	go func() {
		defer close(p.stdoutDone)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout) // a line too long for the scanner
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.stdoutDone:
		p.stop()
		t.Fatalf("the child replica exited before printing its address: %s", p.stderr.String())
	case <-time.After(wait):
		t.Fatalf("the child replica printed no address within %v", wait)
	}
	return p
}

// kill sends SIGKILL and returns when it was sent.
func (p *replicaProcess) kill() time.Time {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatalf("kill the child replica: %v", err)
	}
	p.killed = true
	return time.Now()
}

// stop closes the child's stdin, which makes it shut down and exit, and
// waits for it.
func (p *replicaProcess) stop() {
	_ = p.stdin.Close()
	p.wait()
}

// wait joins the child (killing it if it does not exit within the test
// bound) and reports a data race it found or, unless it was killed, a
// failed exit.
func (p *replicaProcess) wait() {
	p.waitOnce.Do(func() {
		select {
		case <-p.stdoutDone:
		case <-time.After(wait):
			p.t.Errorf("the child replica did not exit within %v; killing it", wait)
			_ = p.cmd.Process.Kill()
			<-p.stdoutDone
		}
		err := p.cmd.Wait()
		var exit *exec.ExitError
		switch {
		case strings.Contains(p.stderr.String(), "DATA RACE"):
			p.t.Errorf("the child replica found a data race:\n%s", p.stderr.String())
		case p.killed && errors.As(err, &exit):
			// Killed, as intended.
		case err != nil:
			p.t.Errorf("the child replica: %v\n%s", err, p.stderr.String())
		}
	})
}

// streamEndReason says why a stream that has ended did.
func streamEndReason(st *testutil.Stream) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for {
		if _, err := st.Next(ctx); err != nil {
			return err
		}
	}
}
