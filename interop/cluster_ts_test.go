package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// runNodeScript runs a script of ts/ with node against url, then args (bounded, with
// INTEROP_WAIT_MS set to wait) and returns the steps it printed in order,
// by name. A line that is not JSON, or the script failing, fails the test.
func runNodeScript(t *testing.T, node, script, url string, args ...string) (map[string]tsStep, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("ts", script), url}, args...)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("INTEROP_WAIT_MS=%d", wait.Milliseconds()))
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	steps := map[string]tsStep{}
	var order []string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		t.Logf("ts: %s", line)
		var st tsStep
		if err := json.Unmarshal([]byte(line), &st); err != nil {
			t.Errorf("%s printed a line that is not JSON: %q", script, line)
			continue
		}
		name := st.str("step")
		steps[name] = st
		order = append(order, name)
	}
	if runErr != nil {
		t.Errorf("node %s: %v\nstderr:\n%s", script, runErr, stderr.String())
	}
	return steps, order
}

// checkSteps fails the test unless the script printed exactly the steps
// of want, in order, each with ok true.
func checkSteps(t *testing.T, steps map[string]tsStep, order, want []string) {
	t.Helper()
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("steps printed: %v\nwant: %v", order, want)
	}
	for _, name := range want {
		if st, ok := steps[name]; ok && st["ok"] != true {
			t.Errorf("step %s failed: %v", name, st)
		}
	}
}

// The official TypeScript SDK client (ts/cluster-client.mjs, run by Node)
// runs a whole conversation through a round-robin proxy in front of three
// replicas sharing one redis-server: initialize, the GET stream the SDK
// opens by itself, tools/list, echo, notifications on the GET stream,
// sampling on the call's answer and on the GET stream, a heartbeat ping
// answered, terminateSession's DELETE, after which every replica answers
// 404.
func TestTypeScriptClientThroughCluster(t *testing.T) {
	node := nodeAndSDK(t)
	c := startCluster(t, streamable.Config{HeartbeatInterval: clusterHeartbeat})
	steps, order := runNodeScript(t, node, "cluster-client.mjs", c.URL)

	want := []string{"connect", "get_stream", "list_tools", "echo", "notify", "sampling", "sampling_on_stream",
		"ping", "terminate", "done"}
	checkSteps(t, steps, order, want)
	if t.Failed() {
		t.FailNow()
	}

	conn := steps["connect"]
	sid, version := conn.str("sessionId"), conn.str("protocolVersion")
	if version != "2025-11-25" {
		t.Errorf("negotiated protocol version %q, want 2025-11-25", version)
	}
	gets := c.find(func(ex exchange) bool {
		return ex.Method == http.MethodGet && ex.SessionID == sid && ex.Status == http.StatusOK
	})
	if len(gets) != 1 {
		t.Fatalf("GET streams of the session: %v, want one\nwire:\n%s", gets, c.dump())
	}
	holder := gets[0].Replica

	// Each notification went out on the stream; at least one was made on
	// another replica than the stream's (round-robin spreads the calls).
	var notifiedOn []int
	for i := 1; i <= 3; i++ {
		text := fmt.Sprintf("ts-cluster-note-%d", i)
		c.checkNotifiedOnStream(t, sid, holder, text)
		notifiedOn = append(notifiedOn, c.toolCallReplica(text))
	}
	if st := steps["notify"]; st.str("level") != "info" || st.str("logger") != "interop" {
		t.Errorf("notifications/message %v, want level info, logger interop", st)
	}
	answeredOn := c.checkSampled(t, sid, holder, "ts-cluster-prompt", "sampled: ts-cluster-prompt", false)
	var streamSampledOn, streamAnsweredOn []int
	for i := 1; i <= 3; i++ {
		prompt := fmt.Sprintf("ts-cluster-stream-prompt-%d", i)
		streamSampledOn = append(streamSampledOn, c.toolCallReplica(prompt))
		streamAnsweredOn = append(streamAnsweredOn, c.checkSampled(t, sid, holder, prompt, "sampled: "+prompt, true))
	}
	crossed := func(on []int) bool {
		for _, r := range on {
			if r != holder {
				return true
			}
		}
		return false
	}
	if !crossed(notifiedOn) || !crossed(streamSampledOn) {
		t.Errorf("notify calls on %v and sampling-on-stream calls on %v: want some on another replica than the stream's (%s)",
			c.names(notifiedOn), c.names(streamSampledOn), c.name(holder))
	}
	pongsOn := c.waitPingAnswered(t, sid)

	del := c.checkDeleted(t, sid)
	if del.Version != version {
		t.Errorf("terminateSession's DELETE: %v, want version %s", del.exchange, version)
	}
	if st := steps["terminate"]; st["sessionIdAfter"] != nil {
		t.Errorf("the transport kept session id %v after terminateSession", st["sessionIdAfter"])
	}
	c.checkHeaders(t, sid, version, del.Seq, false)
	counts := c.counts()
	c.requireSpread(t, counts)
	c.requireGoneEverywhere(t, sid, version)

	t.Logf("GET stream on %s; notify called on %v; sampling in call answered on %s; sampling on stream called on %v "+
		"(answers POSTed to %v); ping answers on %v; DELETE on %s; requests per replica %v",
		c.name(holder), c.names(notifiedOn), c.name(answeredOn), c.names(streamSampledOn), c.names(streamAnsweredOn),
		c.names(pongsOn), c.name(del.Replica), counts)
	t.Logf("wire:\n%s", c.dump())
}
