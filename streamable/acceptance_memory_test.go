package streamable_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestBlackboxEndedSessionsFreeMemory(t *testing.T) {
	const (
		n       = 50
		payload = 256 << 10
		slack   = 4 << 20 // a third of what 50 retained payloads weigh
	)
	rig := bbStart(t, demotools.NewServer("bb-mem", "1"), streamable.Config{
		MaxSessions:       n,
		IdleTTL:           streamable.Disabled,
		HeartbeatInterval: streamable.Disabled,
	}, nil)
	ctx := testutil.Context(t, 120*time.Second)

	half := strings.Repeat("m", payload/2)
	initBody := func(id int) []byte {
		b, err := json.Marshal(map[string]any{
			"jsonrpc": "2.0", "id": id, "method": "initialize",
			"params": map[string]any{
				"protocolVersion": testutil.ProtocolVersion,
				"capabilities": map[string]any{
					"experimental": map[string]any{"bb-blob": map[string]any{"data": half}},
				},
				"clientInfo": map[string]any{"name": "bb-" + half, "version": "1"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	open := func(id int) *testutil.Client {
		c := rig.client()
		resp, err := c.PostRaw(ctx, initBody(id))
		if err != nil {
			t.Fatalf("initialize %d: %v", id, err)
		}
		if resp.Status != http.StatusOK {
			t.Fatalf("initialize %d: status %d: %s", id, resp.Status, resp.Body)
		}
		c.SessionID = resp.Header.Get("Mcp-Session-Id")
		c.ProtocolVersion = testutil.ProtocolVersion
		if ack, err := c.Notify(ctx, "notifications/initialized", nil); err != nil || ack.Status != http.StatusAccepted {
			t.Fatalf("initialized %d: %v %+v", id, err, ack)
		}
		return c
	}
	del := func(c *testutil.Client) {
		resp, err := c.Delete(ctx)
		if err != nil || resp.Status != http.StatusOK {
			t.Fatalf("DELETE: %v %+v", err, resp)
		}
	}

	// Warm up whatever is allocated once, then measure.
	del(open(0))
	rig.hc.CloseIdleConnections()
	base := bbHeap()

	clients := make([]*testutil.Client, 0, n)
	for i := 1; i <= n; i++ {
		clients = append(clients, open(i))
	}
	full := bbHeap()
	t.Logf("heap: base %d KiB, with %d live sessions %d KiB (+%d KiB)", base>>10, n, full>>10, int64(full-base)>>10)

	// Initializes refused at MaxSessions leave nothing behind.
	for i := range n {
		c := rig.client()
		resp, err := c.PostRaw(ctx, initBody(1000+i))
		if err != nil {
			t.Fatalf("refused initialize: %v", err)
		}
		if resp.Status != http.StatusServiceUnavailable {
			t.Fatalf("initialize beyond MaxSessions: status %d, want 503: %s", resp.Status, resp.Body)
		}
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("503 without Retry-After")
		}
	}
	if got := rig.h.Stats().Sessions; got != n {
		t.Errorf("Stats().Sessions after refusals = %d, want %d", got, n)
	}
	afterRefused := bbHeap()
	t.Logf("heap after %d refused initializes: %d KiB (%+d KiB)", n, afterRefused>>10, (int64(afterRefused)-int64(full))>>10)
	if int64(afterRefused)-int64(full) > slack {
		t.Errorf("refused initializes left %d KiB on the heap", (int64(afterRefused)-int64(full))>>10)
	}

	for _, c := range clients {
		del(c)
	}
	clients = nil
	rig.hc.CloseIdleConnections()
	if got := rig.h.Stats().Sessions; got != 0 {
		t.Errorf("Stats().Sessions after DELETE = %d, want 0", got)
	}
	// Bounded poll: the heap must come back near its base.
	var end uint64
	deadline := time.Now().Add(5 * time.Second)
	for {
		end = bbHeap()
		if int64(end)-int64(base) <= slack || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("heap after DELETE of all: %d KiB (%+d KiB over base)", end>>10, (int64(end)-int64(base))>>10)
	if int64(end)-int64(base) > slack {
		t.Errorf("after DELETE of %d sessions of ~%d KiB each the heap stays %d KiB above its base",
			n, payload>>10, (int64(end)-int64(base))>>10)
	}
}

// ---------------------------------------------------------------- 2: answers during Shutdown / DELETE
