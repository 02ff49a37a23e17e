package lifelineclient_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A call's stream that ends (a clean end of the body, as through a proxy
// that closes the connection) in the middle of an event after an event
// id: the stream is resumed from that id and the server sends the event
// again, whole. The piece of it that arrived first must not reach mcp-go,
// which dispatches what an ended body left: the notification would be
// delivered twice.
func TestEventCutByTheEndOfACallStreamIsDeliveredOnce(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	note := func(text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%q}}`, text)
	}
	var (
		mu     sync.Mutex
		callID json.RawMessage
	)
	front := count(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && peekMethod(r) == "tools/call" {
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			body, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(body, &msg)
			mu.Lock()
			callID = msg.ID
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			// "two" lacks its blank line: the stream ends inside it.
			fmt.Fprintf(w, "retry: 1\nid: s-1\ndata: %s\n\nid: s-2\ndata: %s\n", note("one"), note("two"))
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "s-1" {
			mu.Lock()
			id := callID
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: s-2\ndata: %s\n\nid: s-3\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}}\n\n", note("two"), id)
			return
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	ts := newFront(t, front)
	c := connect(t, ts.URL, lifelineclient.Config{}, nil)
	got, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if err != nil || got != "x" {
		t.Fatalf("call: %q, %v", got, err)
	}
	var texts []string
	for _, n := range c.notes.all() {
		if n.Method == string(mcp.MethodNotificationMessage) {
			texts = append(texts, fmt.Sprint(n.Params.AdditionalFields["data"]))
		}
	}
	if fmt.Sprint(texts) != "[one two]" {
		t.Fatalf("notifications/message delivered: %q, want [one two]", texts)
	}
}
