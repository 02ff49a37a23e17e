package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// buildDemo builds the demo binary into a temporary directory.
func buildDemo(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build the demo with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "lifeline-demo")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goTool, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var listenURL = regexp.MustCompile(`url=http://(127\.0\.0\.1:\d+)/mcp`)

// getStatus GETs url and returns the status and body.
func getStatus(ctx context.Context, t *testing.T, c *http.Client, url string) (int, string) {
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
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestDemoDrainsOnSIGTERM runs the demo binary, starts a tool call that
// takes a while, and sends SIGTERM in the middle of it: /readyz turns 503
// at once while /livez stays 200, the call still delivers every progress
// notification and its result, and the process exits 0 within its
// shutdown timeout, having logged each step.
func TestDemoDrainsOnSIGTERM(t *testing.T) {
	bin := buildDemo(t)
	logs := newLogBuffer(t)
	const shutdownTimeout = 20 * time.Second
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-heartbeat", "0",
		"-drain-delay", "300ms", "-shutdown-timeout", shutdownTimeout.String())
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when Wait returned, with waitErr
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		// Whatever happened, the process does not outlive the test.
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	}()

	var addr string
	testutil.Eventually(t, wait, "the demo to log its address", func() bool {
		if m := listenURL.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
			return true
		}
		return false
	})
	base := "http://" + addr
	ctx := testutil.Context(t, 2*wait+shutdownTimeout)
	hc := rawClient(t, base).HTTP
	if code, body := getStatus(ctx, t, hc, base+readyPath); code != http.StatusOK || !strings.Contains(body, `"ready"`) {
		t.Fatalf("%s before SIGTERM = %d %q, want 200 ready", readyPath, code, body)
	}
	if code, body := getStatus(ctx, t, hc, base+livePath); code != http.StatusOK || !strings.Contains(body, `"alive"`) {
		t.Fatalf("%s before SIGTERM = %d %q, want 200 alive", livePath, code, body)
	}

	c := rawClient(t, base+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	const steps = 10
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{
		"name":      "lifeline_progress",
		"arguments": map[string]any{"steps": steps, "delay_ms": 200},
		"_meta":     map[string]any{"progressToken": "drain"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	if call.Status != http.StatusOK {
		t.Fatalf("tools/call: status %d: %s", call.Status, call.Body)
	}
	isProgress := func(m testutil.Message) bool { return m.Method == "notifications/progress" }
	if _, err := call.NextMatching(ctx, isProgress); err != nil {
		t.Fatalf("the first progress notification: %v", err)
	}

	// The call is running (one step of ten done): SIGTERM.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, readyPath+" 503 draining after SIGTERM", func() bool {
		code, body := getStatus(ctx, t, hc, base+readyPath)
		return code == http.StatusServiceUnavailable && strings.Contains(body, `"draining"`)
	})
	if code, body := getStatus(ctx, t, hc, base+livePath); code != http.StatusOK {
		t.Errorf("%s while draining = %d %q, want 200", livePath, code, body)
	}

	// The rest of the call: every progress notification, then the result.
	progress := 1
	var result testutil.Message
	for {
		m, err := call.NextMessage(ctx)
		if err != nil {
			t.Fatalf("the call after SIGTERM, %d progress notifications in: %v", progress, err)
		}
		if isProgress(m) {
			progress++
			continue
		}
		if len(m.ID) > 0 {
			result = m
			break
		}
	}
	if progress != steps {
		t.Errorf("%d progress notifications, want %d", progress, steps)
	}
	var res struct {
		Content []struct{ Text string }
		IsError bool
	}
	if result.Error != nil || json.Unmarshal(result.Result, &res) != nil || res.IsError ||
		len(res.Content) != 1 || res.Content[0].Text != "done 10 steps" {
		t.Errorf("the call's answer %+v (result %s), want done 10 steps", result, result.Result)
	}

	select {
	case <-exited:
		if err := waitErr; err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Errorf("the demo exited with %v after SIGTERM, want 0", ee.ProcessState)
			} else {
				t.Errorf("waiting for the demo: %v", err)
			}
		}
	case <-time.After(shutdownTimeout + wait):
		t.Fatalf("the demo did not exit within %v of SIGTERM", shutdownTimeout+wait)
	}
	out := logs.String()
	for _, step := range []string{
		"draining, " + readyPath + " now answers 503",
		"drain delay over",
		"shutting down",
		"lifeline-demo: shut down",
	} {
		if !strings.Contains(out, step) {
			t.Errorf("the logs lack %q", step)
		}
	}
	if i, j := strings.Index(out, "drain delay over"), strings.Index(out, "shutting down"); i < 0 || j < i {
		t.Error("the demo shut down before its drain delay was over")
	}
}

// TestDemoRefusesBadDrainFlags: a negative drain delay or a shutdown
// timeout that is not positive is a flag error.
func TestDemoRefusesBadDrainFlags(t *testing.T) {
	ctx := testutil.Context(t, wait)
	for _, args := range [][]string{
		{"-drain-delay", "-1s"},
		{"-shutdown-timeout", "0"},
	} {
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), "-drain-delay must not be negative") {
			t.Errorf("run %q = %v, want a flag error", args, err)
		}
	}
}

// TestProgressDelayBounds: lifeline_progress's delay_ms outside
// 0..MaxStepDelayMS gets a tool error that names the bound.
func TestProgressDelayBounds(t *testing.T) {
	addr, stop := startDemo(t, newLogBuffer(t), "-addr", "127.0.0.1:0")
	ctx := testutil.Context(t, wait)
	c := rawClient(t, "http://"+addr+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	for _, delay := range []int{-1, demotools.MaxStepDelayMS + 1} {
		resp, err := c.CallTool(ctx, "lifeline_progress", map[string]any{"steps": 1, "delay_ms": delay})
		if err != nil {
			t.Fatal(err)
		}
		m, err := resp.Last()
		if err != nil || !strings.Contains(string(m.Result), `"isError":true`) ||
			!strings.Contains(string(m.Result), fmt.Sprintf("delay_ms must be 0..%d", demotools.MaxStepDelayMS)) {
			t.Errorf("delay_ms %d: %+v (result %s), %v; want a tool error naming the bound", delay, m, m.Result, err)
		}
	}
	if got := callOK(ctx, t, c, "lifeline_progress", map[string]any{"steps": 2, "delay_ms": 1}); got != "done 2 steps" {
		t.Errorf("delay_ms 1: %q", got)
	}
	if err := stop(); err != nil {
		t.Errorf("run = %v", err)
	}
}

// TestDemoReplicaDrainKeepsSessions is a rolling deploy of two demos on one
// Redis: replica A is stopped (as on SIGTERM) while a call of a session
// runs on it. A's readiness turns 503 while B's stays 200, the call still
// gets its result (with the Redis store's event log, the default, A lets
// go of the call's stream and the client resumes it on B), A's run returns
// nil, and the session goes on, on B.
func TestDemoReplicaDrainKeepsSessions(t *testing.T) {
	redisURL := "redis://" + testutil.StartRedis(t) + "/0"
	logs := newLogBuffer(t)
	addrA, stopA := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL, "-drain-delay", "200ms")
	addrB, stopB := startDemo(t, logs, "-addr", "127.0.0.1:0", "-redis", redisURL)
	ctx := testutil.Context(t, 2*wait)
	hc := rawClient(t, "http://"+addrA).HTTP

	c := rawClient(t, "http://"+addrA+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatalf("initialize on replica A: %v", err)
	}
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": map[string]any{
		"name":      "lifeline_progress",
		"arguments": map[string]any{"steps": 5, "delay_ms": 100},
		"_meta":     map[string]any{"progressToken": "deploy"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	// The Redis store's event log is the default: every event carries an
	// id, the cursor a resume starts from.
	lastID := ""
	var result *testutil.Message
	next := func() (testutil.Message, error) {
		ev, err := call.NextMessageEvent(ctx)
		if err != nil {
			return testutil.Message{}, err
		}
		if ev.ID != "" {
			lastID = ev.ID
		}
		return ev.Message()
	}
	for {
		m, err := next()
		if err != nil {
			t.Fatalf("the first progress notification: %v", err)
		}
		if m.Method == "notifications/progress" {
			break
		}
	}
	if lastID == "" {
		t.Fatal("the call's events carry no id: no event log by default with Redis")
	}

	stoppedA := make(chan error, 1)
	go func() { stoppedA <- stopA() }()
	testutil.Eventually(t, wait, "replica A's "+readyPath+" 503 once it drains", func() bool {
		code, _ := getStatus(ctx, t, hc, "http://"+addrA+readyPath)
		return code == http.StatusServiceUnavailable
	})
	if code, body := getStatus(ctx, t, hc, "http://"+addrB+readyPath); code != http.StatusOK {
		t.Errorf("replica B's %s while A drains = %d %q, want 200", readyPath, code, body)
	}
	// A lets go of the call's stream as it drains (or the call ends
	// first); the client resumes on B, where the call's rest and its result
	// come from the shared log while the call finishes on A.
	for result == nil {
		m, err := next()
		if err != nil {
			break // A let go of the stream
		}
		if len(m.ID) > 0 {
			result = &m
		}
	}
	if result == nil {
		t.Logf("A let go of the call's stream; resuming on B after %s", lastID)
		onB := rawClient(t, "http://"+addrB+"/mcp")
		onB.SessionID, onB.ProtocolVersion = c.SessionID, c.ProtocolVersion
		onB.Header = map[string]string{"Last-Event-ID": lastID}
		resumed, err := onB.OpenStream(ctx)
		if err != nil || resumed.Status != http.StatusOK {
			t.Fatalf("resume the call on B after %s: %v %+v", lastID, err, resumed)
		}
		defer resumed.Close()
		m, err := resumed.NextMatching(ctx, func(m testutil.Message) bool { return len(m.ID) > 0 })
		if err != nil {
			t.Fatalf("the call's result on B: %v", err)
		}
		result = &m
	}
	if result.Error != nil || !strings.Contains(string(result.Result), "done 5 steps") {
		t.Errorf("the call running on A as it stopped: %+v (result %s); want done 5 steps", result, result.Result)
	}
	select {
	case err := <-stoppedA:
		if err != nil {
			t.Errorf("replica A's run = %v, want nil", err)
		}
	case <-ctx.Done():
		t.Fatal("replica A did not stop")
	}

	c.URL = "http://" + addrB + "/mcp"
	if got := callOK(ctx, t, c, "echo", map[string]any{"text": "after A left"}); got != "after A left" {
		t.Errorf("echo on replica B after A stopped returned %q", got)
	}
	if err := stopB(); err != nil {
		t.Errorf("replica B's run = %v", err)
	}
}
