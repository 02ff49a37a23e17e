package testutil

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Defaults of ReplicaOptions.
const (
	DefaultReplicaReadyTimeout = 20 * time.Second
	DefaultReplicaExitTimeout  = 30 * time.Second
)

// demoPackage is the import path BuildDemo builds.
const demoPackage = "github.com/lifeline-mcp/lifeline/cmd/lifeline-demo"

// BuildDemo builds the lifeline-demo command into dir and returns the
// binary's path. It runs "go build" in the current directory, which must
// be inside the lifeline module (a test's package directory, or the
// module root for "go run"); ctx bounds it.
func BuildDemo(ctx context.Context, dir string) (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("build lifeline-demo: no go command: %w", err)
	}
	bin := filepath.Join(dir, "lifeline-demo")
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, demoPackage).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build lifeline-demo: %w\n%s", err, out)
	}
	return bin, nil
}

// ReplicaOptions configures a Replicas set.
type ReplicaOptions struct {
	// Binary is the lifeline-demo binary every replica runs (BuildDemo).
	Binary string
	// N is how many replicas; 1 when 0.
	N int
	// RedisAddr is the redis-server the replicas share ("host:port");
	// empty, each replica has the in-memory store (sensible with N = 1).
	RedisAddr string
	// Prefix is the replicas' Redis key prefix; a random one when empty.
	Prefix string
	// Args are more flags for every replica ("-heartbeat", "500ms", say).
	// The rig sets -addr, -debug and, with RedisAddr, -redis and
	// -redis-prefix itself.
	Args []string
	// Dir receives each replica's log, replica-<i>.log, appended across
	// restarts. It must exist.
	Dir string
	// Proxy configures the FaultProxy in front of the replicas; the rig
	// sets its Backends.
	Proxy FaultProxyConfig
	// ReadyTimeout bounds the wait for a started replica's /readyz to
	// answer 200 (DefaultReplicaReadyTimeout).
	ReadyTimeout time.Duration
	// ExitTimeout bounds the wait for a replica to exit after SIGTERM
	// (Drain) or SIGKILL (DefaultReplicaExitTimeout).
	ExitTimeout time.Duration
}

// Replicas is a set of lifeline-demo processes on 127.0.0.1, each on a
// port of its own that it keeps across restarts, optionally sharing one
// redis-server, behind a round-robin FaultProxy. Every process it starts
// is reaped: by Kill, Drain or Close. It is safe for concurrent use.
type Replicas struct {
	opts  ReplicaOptions
	proxy *FaultProxy

	mu    sync.Mutex
	procs []*replicaProc // by index; an entry's cmd is nil while stopped
}

// replicaProc is one replica's slot: its port and the process running on
// it, if any.
type replicaProc struct {
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited and was waited for
	err  error         // cmd.Wait's result, set before done closes
}

// StartReplicas is LaunchReplicas for a test: the demo binary is built (once
// per call, into t.TempDir) unless opts.Binary is set, logs go to
// t.TempDir unless opts.Dir is set, the test fails if a replica does not
// become ready, and every replica and the proxy are closed when the test
// ends.
func StartReplicas(t testing.TB, opts ReplicaOptions) *Replicas {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if opts.Binary == "" {
		bin, err := BuildDemo(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		opts.Binary = bin
	}
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	r, err := LaunchReplicas(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// LaunchReplicas starts opts.N replicas and the proxy in front of them, and
// returns once every replica's /readyz answers 200. On error nothing it
// started is left running. The caller must Close the set.
func LaunchReplicas(ctx context.Context, opts ReplicaOptions) (*Replicas, error) {
	if opts.Binary == "" || opts.Dir == "" {
		return nil, errors.New("replicas: Binary and Dir are required")
	}
	if opts.N <= 0 {
		opts.N = 1
	}
	if opts.Prefix == "" {
		opts.Prefix = "soak" + rand.Text()[:8] + ":"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReplicaReadyTimeout
	}
	if opts.ExitTimeout <= 0 {
		opts.ExitTimeout = DefaultReplicaExitTimeout
	}
	r := &Replicas{opts: opts}
	var backends []string
	for range opts.N {
		port, err := freePort()
		if err != nil {
			r.Close()
			return nil, err
		}
		r.procs = append(r.procs, &replicaProc{port: port})
		backends = append(backends, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	for i := range opts.N {
		if err := r.start(ctx, i); err != nil {
			r.Close()
			return nil, err
		}
	}
	pcfg := opts.Proxy
	pcfg.Backends = backends
	p, err := NewFaultProxy(pcfg)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.proxy = p
	return r, nil
}

// N returns how many replicas the set has.
func (r *Replicas) N() int { return len(r.procs) }

// Prefix returns the replicas' Redis key prefix.
func (r *Replicas) Prefix() string { return r.opts.Prefix }

// Proxy returns the round-robin FaultProxy in front of the replicas.
func (r *Replicas) Proxy() *FaultProxy { return r.proxy }

// URL returns the MCP endpoint through the proxy.
func (r *Replicas) URL() string { return r.proxy.URL() + "/mcp" }

// Base returns replica i's base URL, http://127.0.0.1:port, the same
// across restarts.
func (r *Replicas) Base(i int) string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(r.procs[i].port))
}

// ReplicaURL returns replica i's own MCP endpoint (not through the proxy).
func (r *Replicas) ReplicaURL(i int) string { return r.Base(i) + "/mcp" }

// Running reports whether replica i's process is running.
func (r *Replicas) Running(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[i].cmd != nil
}

// start runs replica i on its port and waits until it is ready.
func (r *Replicas) start(ctx context.Context, i int) error {
	p := r.procs[i]
	args := []string{"-addr", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), "-debug"}
	if r.opts.RedisAddr != "" {
		args = append(args, "-redis", "redis://"+r.opts.RedisAddr+"/0", "-redis-prefix", r.opts.Prefix)
	}
	args = append(args, r.opts.Args...)
	logFile, err := os.OpenFile(filepath.Join(r.opts.Dir, fmt.Sprintf("replica-%d.log", i)),
		os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("replica %d: open its log: %w", i, err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(r.opts.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	r.mu.Lock()
	if p.cmd != nil {
		r.mu.Unlock()
		return fmt.Errorf("replica %d is already running", i)
	}
	if err := cmd.Start(); err != nil {
		r.mu.Unlock()
		return fmt.Errorf("replica %d: start %s: %w", i, r.opts.Binary, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.err = cmd, done, nil
	r.mu.Unlock()
	go func() {
		err := cmd.Wait()
		r.mu.Lock()
		p.err = err
		r.mu.Unlock()
		close(done)
	}()
	if err := r.waitReady(ctx, i, done); err != nil {
		_ = r.Kill(i)
		return err
	}
	return nil
}

// waitReady polls replica i's /readyz until it answers 200, the process
// exits, ctx ends or ReadyTimeout passes.
func (r *Replicas) waitReady(ctx context.Context, i int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.ReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	url := r.Base(i) + "/readyz"
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil); err == nil {
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("replica %d exited before it was ready: %s", i,
				logTail(filepath.Join(r.opts.Dir, fmt.Sprintf("replica-%d.log", i))))
		case <-ctx.Done():
			return fmt.Errorf("replica %d: %s not 200 within %v: %w", i, url, r.opts.ReadyTimeout, ctx.Err())
		case <-tick.C:
		}
	}
}

// Kill sends SIGKILL to replica i, as a crash would, and waits for it to
// exit. Killing a stopped replica does nothing.
func (r *Replicas) Kill(i int) error {
	return r.stop(i, syscall.SIGKILL, r.opts.ExitTimeout)
}

// Drain sends SIGTERM to replica i, which drains and shuts down, and waits
// (ExitTimeout at most, then SIGKILL) for it to exit. It returns an error
// if the replica did not exit in time or exited with a failure (the demo
// exits 1 when calls were still running at its -shutdown-timeout).
func (r *Replicas) Drain(i int) error {
	return r.stop(i, syscall.SIGTERM, r.opts.ExitTimeout)
}

func (r *Replicas) stop(i int, sig syscall.Signal, timeout time.Duration) error {
	r.mu.Lock()
	p := r.procs[i]
	cmd, done := p.cmd, p.done
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("replica %d: signal %v: %w", i, sig, err)
	}
	var failure error
	select {
	case <-done:
	case <-time.After(timeout):
		failure = fmt.Errorf("replica %d did not exit within %v of %v; killed", i, timeout, sig)
		_ = cmd.Process.Kill()
		<-done
	}
	r.mu.Lock()
	exitErr := p.err
	p.cmd, p.done = nil, nil
	r.mu.Unlock()
	if failure == nil && sig != syscall.SIGKILL && exitErr != nil {
		failure = fmt.Errorf("replica %d exited after %v: %w", i, sig, exitErr)
	}
	return failure
}

// Restart starts replica i again on its port (it must be stopped: Kill or
// Drain first) and waits until it is ready.
func (r *Replicas) Restart(ctx context.Context, i int) error {
	return r.start(ctx, i)
}

// Close kills every replica still running, waits for each, and closes the
// proxy. It is idempotent.
func (r *Replicas) Close() {
	if r.proxy != nil {
		r.proxy.Close()
	}
	for i := range r.procs {
		_ = r.Kill(i)
	}
}
