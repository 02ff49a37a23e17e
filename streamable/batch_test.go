package streamable_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// session20250326 returns a client with a session of protocol version
// 2025-03-26, which sends no MCP-Protocol-Version header (that version
// has none).
func session20250326(t *testing.T, r *rig) *testutil.Client {
	t.Helper()
	c := r.client()
	ctx := testutil.Context(t, wait)
	resp, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-03-26",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "batch-test", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if last, _ := resp.Last(); resp.Status != http.StatusOK || !strings.Contains(string(last.Result), `"2025-03-26"`) {
		t.Fatalf("initialize 2025-03-26: %d %s", resp.Status, resp.Body)
	}
	c.SessionID = resp.Header.Get("Mcp-Session-Id")
	if ack, err := c.Notify(ctx, "notifications/initialized", nil); err != nil || ack.Status != http.StatusAccepted {
		t.Fatalf("initialized: %v %v", ack, err)
	}
	return c
}

type batchAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func postBatch(t *testing.T, c *testutil.Client, items ...string) *testutil.Response {
	t.Helper()
	resp, err := c.PostRaw(testutil.Context(t, wait), []byte("["+strings.Join(items, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func jsonAnswers(t *testing.T, resp *testutil.Response) []batchAnswer {
	t.Helper()
	if resp.Status != http.StatusOK || resp.IsSSE() {
		t.Fatalf("batch: %d %s, want 200 with a JSON array", resp.Status, resp.Body)
	}
	var out []batchAnswer
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		t.Fatalf("batch answer %q is not a JSON array: %v", resp.Body, err)
	}
	return out
}

func TestBatchIn20250326GetsOneArrayOfAnswers(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := session20250326(t, r)
	resp := postBatch(t, c,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","id":"two","method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`,
		`{"jsonrpc":"1.0","id":4,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}`,
		`{"no":"message"}`,
	)
	got := jsonAnswers(t, resp)
	want := []struct {
		id      string
		errPart string // "" for a result
	}{{"1", ""}, {`"two"`, ""}, {"3", "no/such/method"}, {"4", "jsonrpc"}, {"5", "initialize must not be part"}, {"null", "jsonrpc"}}
	if len(got) != len(want) {
		t.Fatalf("%d answers, want %d: %s", len(got), len(want), resp.Body)
	}
	for i, w := range want {
		a := got[i]
		if string(a.ID) != w.id {
			t.Fatalf("answer %d has id %s, want %s: %s", i, a.ID, w.id, resp.Body)
		}
		switch {
		case w.errPart == "" && (a.Error != nil || len(a.Result) == 0):
			t.Fatalf("answer %d: want a result: %s", i, resp.Body)
		case w.errPart != "" && (a.Error == nil || !strings.Contains(a.Error.Message, w.errPart)):
			t.Fatalf("answer %d: want an error mentioning %q: %s", i, w.errPart, resp.Body)
		}
	}
	if !strings.Contains(string(got[0].Result), "one") {
		t.Fatalf("echo's answer: %s", got[0].Result)
	}
}

func TestBatchOfNotificationsGets202(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := session20250326(t, r)
	resp := postBatch(t, c,
		`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`,
	)
	if resp.Status != http.StatusAccepted || len(strings.TrimSpace(string(resp.Body))) != 0 {
		t.Fatalf("a batch of notifications: %d %q, want 202 and no body", resp.Status, resp.Body)
	}
}

func TestBatchThatStreamsDeliversEverythingInOrder(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := session20250326(t, r)
	resp := postBatch(t, c,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"before"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lifeline_progress","arguments":{"steps":3},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after"}}}`,
	)
	if resp.Status != http.StatusOK || !resp.IsSSE() {
		t.Fatalf("a batch whose request streams: %d %s, want an SSE answer", resp.Status, resp.Body)
	}
	var order []string
	for _, m := range resp.Messages {
		switch {
		case m.Method == "notifications/progress":
			order = append(order, "progress")
		case m.Method != "":
			continue // logging
		default:
			order = append(order, "answer "+string(m.ID))
		}
	}
	want := "answer 1,progress,progress,progress,answer 2,answer 3"
	if got := strings.Join(order, ","); got != want {
		t.Fatalf("stream order %s, want %s", got, want)
	}
}

func TestBatchBounds(t *testing.T) {
	// A heartbeat well beyond the batch's run: a request still running
	// at a heartbeat opens a stream for a keep-alive, and 64 pings under
	// the race detector on a busy machine can outlast the rig's 5 ms.
	r := newRig(t, streamable.Config{HeartbeatInterval: time.Hour})
	c := session20250326(t, r)
	items := make([]string, 65)
	for i := range items {
		items[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
	}
	resp := postBatch(t, c, items...)
	if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), "at most 64") {
		t.Fatalf("a batch of 65: %d %s", resp.Status, resp.Body)
	}
	if got := jsonAnswers(t, postBatch(t, c, items[:64]...)); len(got) != 64 {
		t.Fatalf("a batch of 64: %d answers", len(got))
	}
}

func TestBatchRefusedInLaterVersions(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session() // 2025-11-25
	resp := postBatch(t, c, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if resp.Status != http.StatusBadRequest || !strings.Contains(string(resp.Body), "2025-03-26 only") {
		t.Fatalf("a batch in 2025-11-25: %d %s", resp.Status, resp.Body)
	}
}

func TestStatelessBatch(t *testing.T) {
	r := newRig(t, streamable.Config{Stateless: true})
	c := r.client() // no header: 2025-03-26
	got := jsonAnswers(t, postBatch(t, c,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`))
	if len(got) != 2 || string(got[1].ID) != "2" || got[1].Error != nil {
		t.Fatalf("stateless batch: %+v", got)
	}
	if n := r.h.Stats().Sessions; n != 0 {
		t.Fatalf("%d sessions left after a stateless batch", n)
	}
}
