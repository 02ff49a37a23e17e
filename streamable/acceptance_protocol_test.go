package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestBlackboxSubscriptionBounds(t *testing.T) {
	srv := server.NewMCPServer("bb-res", "1", server.WithResourceCapabilities(true, true))
	read := func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, Text: "x"}}, nil
	}
	srv.AddResource(mcp.NewResource("test://exists", "exists"), read)
	srv.AddResourceTemplate(mcp.NewResourceTemplate("test://items/{id}", "items"), read)
	rig := bbStart(t, srv, streamable.Config{}, nil)
	ctx := testutil.Context(t, 120*time.Second)
	c := rig.session(t, ctx)

	nextID := 1000
	subscribe := func(uri string) (testutil.Message, int) {
		t.Helper()
		nextID++
		resp, err := c.Post(ctx, map[string]any{"jsonrpc": "2.0", "id": nextID, "method": "resources/subscribe",
			"params": map[string]any{"uri": uri}})
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		m, err := resp.Last()
		if err != nil {
			t.Fatalf("subscribe %.60s: status %d, no message: %s", uri, resp.Status, resp.Body)
		}
		if got := bbCompact(m.ID); got != fmt.Sprint(nextID) {
			t.Errorf("subscribe answer id %s, want %d", got, nextID)
		}
		return m, resp.Status
	}
	accept := func(what, uri string) {
		t.Helper()
		if m, status := subscribe(uri); m.Error != nil {
			t.Errorf("%s: refused (status %d): %d %s", what, status, m.Error.Code, m.Error.Message)
		}
	}
	refuse := func(what, uri string) {
		t.Helper()
		m, status := subscribe(uri)
		if m.Error == nil {
			t.Errorf("%s: accepted (status %d, result %s), want a JSON-RPC error", what, status, m.Result)
			return
		}
		t.Logf("%s: status %d, error %d %s", what, status, m.Error.Code, m.Error.Message)
	}

	accept("existing resource", "test://exists")
	accept("URI matching a resource template", "test://items/42")
	refuse("unknown resource", "test://nope")
	refuse("unknown resource under another scheme", "other://items/42")

	long := "test://items/" + strings.Repeat("a", streamable.MaxSubscriptionURIBytes+1-len("test://items/"))
	refuse(fmt.Sprintf("URI of %d bytes", len(long)), long)
	atLimit := "test://items/" + strings.Repeat("b", streamable.MaxSubscriptionURIBytes-len("test://items/"))
	accept(fmt.Sprintf("URI of exactly %d bytes", len(atLimit)), atLimit)

	// Three subscriptions held so far; fill up to the bound.
	held := 3
	for i := 0; held < streamable.MaxSubscriptionsPerSession; i++ {
		m, status := subscribe(fmt.Sprintf("test://items/n%d", i))
		if m.Error != nil {
			t.Fatalf("subscription %d of %d refused (status %d): %d %s",
				held+1, streamable.MaxSubscriptionsPerSession, status, m.Error.Code, m.Error.Message)
		}
		held++
	}
	refuse(fmt.Sprintf("subscription %d", held+1), "test://items/one-too-many")
	refuse(fmt.Sprintf("subscription %d, another template match", held+1), "test://items/still-too-many")
}

// ---------------------------------------------------------------- 6: batches

func TestBlackboxBatches(t *testing.T) {
	rig := bbStart(t, demotools.NewServer("bb-batch", "1"), streamable.Config{}, nil)
	ctx := testutil.Context(t, 30*time.Second)

	old := rig.client()
	resp, err := old.Call(ctx, "initialize", map[string]any{
		"protocolVersion": "2025-03-26",
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bb-old", "version": "1"},
	})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("initialize 2025-03-26: %v %+v", err, resp)
	}
	if m, err := resp.Last(); err != nil || !strings.Contains(string(m.Result), `"2025-03-26"`) {
		t.Fatalf("initialize 2025-03-26: %v %s", err, m.Result)
	}
	old.SessionID = resp.Header.Get("Mcp-Session-Id")
	old.ProtocolVersion = "" // 2025-03-26 clients send no MCP-Protocol-Version
	if ack, err := old.Notify(ctx, "notifications/initialized", nil); err != nil || ack.Status != http.StatusAccepted {
		t.Fatalf("initialized: %v %+v", err, ack)
	}

	t.Run("requests", func(t *testing.T) {
		batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` +
			`{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}},` +
			`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
			`{"jsonrpc":"2.0","id":3,"method":"ping"}]`
		resp, err := old.PostRaw(ctx, []byte(batch))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", resp.Status, resp.Body)
		}
		var answers []testutil.Message
		if err := json.Unmarshal(resp.Body, &answers); err != nil {
			t.Fatalf("answer is not one JSON array (Content-Type %q): %.500s: %v", resp.Header.Get("Content-Type"), resp.Body, err)
		}
		byID := map[string]testutil.Message{}
		for _, a := range answers {
			byID[bbCompact(a.ID)] = a
		}
		if len(answers) != 3 || len(byID) != 3 {
			t.Fatalf("%d answers (%d distinct ids), want 3: %.500s", len(answers), len(byID), resp.Body)
		}
		for _, id := range []string{`1`, `"two"`, `3`} {
			a, ok := byID[id]
			if !ok {
				t.Errorf("no answer with id %s: %.500s", id, resp.Body)
				continue
			}
			if a.Error != nil || a.Result == nil {
				t.Errorf("answer %s: %+v %s", id, a.Error, a.Result)
			}
		}
		if a, ok := byID[`"two"`]; ok && a.Result != nil {
			if text := bbToolText(t, a); text != "hi" {
				t.Errorf("echo in batch returned %q", text)
			}
		}
		if a, ok := byID[`1`]; ok && !strings.Contains(string(a.Result), `"echo"`) {
			t.Errorf("tools/list in batch: %s", a.Result)
		}
	})

	t.Run("bad message in a batch", func(t *testing.T) {
		// README: a bad message in a batch gets an error answer with its id.
		batch := `[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"no/such/method"}]`
		resp, err := old.PostRaw(ctx, []byte(batch))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusOK {
			t.Fatalf("status %d, want 200: %s", resp.Status, resp.Body)
		}
		var answers []testutil.Message
		if err := json.Unmarshal(resp.Body, &answers); err != nil {
			t.Fatalf("answer is not one JSON array: %.500s: %v", resp.Body, err)
		}
		if len(answers) != 2 {
			t.Fatalf("%d answers, want 2: %s", len(answers), resp.Body)
		}
		for _, a := range answers {
			switch bbCompact(a.ID) {
			case `5`:
				if a.Error != nil {
					t.Errorf("ping in batch: %+v", a.Error)
				}
			case `6`:
				if a.Error == nil {
					t.Errorf("unknown method in batch answered without error: %s", a.Result)
				}
			default:
				t.Errorf("answer with unexpected id %s: %s", a.ID, resp.Body)
			}
		}
	})

	t.Run("notifications only", func(t *testing.T) {
		batch := `[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},` +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":987}}]`
		resp, err := old.PostRaw(ctx, []byte(batch))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusAccepted {
			t.Fatalf("status %d, want 202: %s", resp.Status, resp.Body)
		}
	})

	t.Run("2025-11-25 session", func(t *testing.T) {
		modern := rig.session(t, ctx)
		batch := `[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
		resp, err := modern.PostRaw(ctx, []byte(batch))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusBadRequest {
			t.Fatalf("status %d, want 400: %s", resp.Status, resp.Body)
		}
		if _, code := bbErrorBody(t, resp.Body); code != -32600 {
			t.Errorf("JSON-RPC code %d, want -32600", code)
		}
		// The session is unharmed.
		if r, err := modern.CallTool(ctx, "echo", map[string]any{"text": "ok"}); err != nil || r.Status != http.StatusOK {
			t.Errorf("session after a refused batch: %v %+v", err, r)
		}
	})
}

// ---------------------------------------------------------------- 7: slow steady reader
