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

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// listenStream is an open subscriptions/listen response, read event by event.
type listenStream struct {
	resp *http.Response
	rd   *testutil.SSEReader
}

// openListen sends subscriptions/listen with id and the filter, and
// returns its stream once the answer's headers arrived.
func (r *rig) openListen(ctx context.Context, t *testing.T, id any, filter map[string]any) *listenStream {
	t.Helper()
	req := r.modernRequest(ctx, t, modernMsg(id, "subscriptions/listen", map[string]any{"notifications": filter}, nil), nil)
	resp, err := r.client().HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("listen answered %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &listenStream{resp: resp, rd: testutil.NewSSEReader(resp.Body)}
}

// next returns the stream's next JSON-RPC message, skipping comments.
func (l *listenStream) next(t *testing.T) testutil.Message {
	t.Helper()
	for {
		ev, err := l.rd.Next()
		if err != nil {
			t.Fatalf("listen stream: %v", err)
		}
		if ev.IsComment() {
			continue
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
}

// subscriptionID returns the message's _meta subscription id.
func subscriptionID(t *testing.T, m testutil.Message) string {
	t.Helper()
	raw := m.Params
	if len(raw) == 0 {
		raw = m.Result
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return string(p.Meta[mcp.MetaKeySubscriptionID])
}

// The acknowledgement comes first, even with broadcasts racing it; every
// message is tagged with the subscription id; only what the filter asks
// for arrives; a burst of 1,000 resource updates loses none (identical
// ones not yet written are coalesced), and list changes arrive too.
func TestListenStreamAcknowledgedFirstTaggedFilteredNothingLost(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		server.WithPromptCapabilities(true)(s)
		server.WithResourceCapabilities(true, true)(s)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://r/{id}", "r"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	ctx := testutil.Context(t, wait)
	stop := make(chan struct{})
	raced := make(chan struct{})
	go func() { // broadcasts racing the acknowledgement
		defer close(raced)
		for range 100000 {
			select {
			case <-stop:
				return
			default:
			}
			r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", nil)
		}
	}()
	const uris = 100
	subs := []any{"test://r/end"}
	for i := range uris {
		subs = append(subs, fmt.Sprintf("test://r/%d", i))
	}
	l := r.openListen(ctx, t, "L1", map[string]any{"toolsListChanged": true, "resourceSubscriptions": subs})
	first := l.next(t)
	close(stop)
	<-raced
	if first.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %s %s, want the acknowledgement", first.Method, first.Params)
	}
	if got := subscriptionID(t, first); got != `"L1"` {
		t.Fatalf("acknowledgement tagged %s", got)
	}
	for round := range 10 {
		for i := range uris {
			r.mcp.SendNotificationToAllClients("notifications/resources/updated", map[string]any{"uri": fmt.Sprintf("test://r/%d", i)})
		}
		r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"round": round})
		r.mcp.SendNotificationToAllClients("notifications/prompts/list_changed", nil)
		r.mcp.SendNotificationToAllClients("custom/broadcast", map[string]any{"x": 1})
		r.mcp.SendNotificationToAllClients("notifications/resources/updated", map[string]any{"uri": "test://r/unsubscribed"})
	}
	r.mcp.SendNotificationToAllClients("notifications/resources/updated", map[string]any{"uri": "test://r/end"})
	updated := map[string]int{}
	listChanges, total := 0, 0
	for {
		m := l.next(t)
		if tag := subscriptionID(t, m); tag != `"L1"` {
			t.Fatalf("%s tagged %s", m.Method, tag)
		}
		switch m.Method {
		case "notifications/tools/list_changed":
			listChanges++
			continue
		case "notifications/resources/updated":
		default:
			t.Fatalf("the filter did not ask for %s %s", m.Method, m.Params)
		}
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if p.URI == "test://r/end" {
			break
		}
		updated[p.URI]++
		total++
	}
	if len(updated) != uris || listChanges == 0 {
		t.Fatalf("%d of %d resources' updates and %d list changes arrived", len(updated), uris, listChanges)
	}
	t.Logf("1,000 resource updates arrived as %d (coalesced), 10 list changes as %d", total, listChanges)
	// Shutdown ends the stream with its final result, tagged.
	sctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.h.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	for {
		m := l.next(t)
		if m.Method != "" {
			continue
		}
		if string(m.ID) != `"L1"` || subscriptionID(t, m) != `"L1"` {
			t.Fatalf("final result %s %s", m.ID, m.Result)
		}
		break
	}
}

// Past MaxListenStreams a listen request gets 503 with Retry-After and its
// id; a stream that ends frees its place.
func TestListenStreamsCapped(t *testing.T) {
	r := newRig(t, streamable.Config{MaxListenStreams: 2})
	ctx := testutil.Context(t, wait)
	var open []*listenStream
	for i := range 2 {
		l := r.openListen(ctx, t, i, map[string]any{"toolsListChanged": true})
		l.next(t) // acknowledged
		open = append(open, l)
	}
	if st := r.h.Stats(); st.ListenStreams != 2 || st.Sessions != 0 {
		t.Fatalf("Stats %+v: want 2 listen streams, no sessions", st)
	}
	resp := r.modernPost(ctx, t, modernMsg(9, "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil), nil)
	if resp.Status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a third listen answered %d (Retry-After %q)", resp.Status, resp.Header.Get("Retry-After"))
	}
	if id, _, _, _ := rpcErrorOf(t, resp); id != "9" {
		t.Fatalf("503 echoes id %s", id)
	}
	open[0].resp.Body.Close()
	testutil.Eventually(t, wait, "the closed listen stream to end", func() bool { return r.h.Stats().ListenStreams == 1 })
	l := r.openListen(ctx, t, 10, map[string]any{"toolsListChanged": true})
	if m := l.next(t); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("after a stream ended, a listen got %s", m.Method)
	}
}

// A listen stream whose client stops reading is cut off within the write
// timeout once its writes block, and its goroutines are released: nothing
// it was sent grows without bound meanwhile (identical updates coalesce).
func TestListenStreamStalledReaderReleased(t *testing.T) {
	r := newRig(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, func(s *server.MCPServer) {
		server.WithResourceCapabilities(true, true)(s)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://big/{id}", "big"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	ctx := testutil.Context(t, wait)
	pad := strings.Repeat("p", 2000)
	var uris []string
	for i := range 1000 {
		uris = append(uris, fmt.Sprintf("test://big/%d%s", i, pad))
	}
	body := modernMsg("S", "subscriptions/listen", map[string]any{"notifications": map[string]any{"resourceSubscriptions": uris}}, nil)
	sr, err := testutil.DialStalled(ctx, r.ts.URL, http.MethodPost, map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": "subscriptions/listen",
	}, string(body))
	if err != nil {
		t.Fatal(err)
	}
	defer sr.Close()
	testutil.Eventually(t, wait, "the listen stream to open", func() bool { return r.h.Stats().ListenStreams == 1 })
	// About 2 MB per round, far more than the socket buffers hold; the
	// broadcasts never wait for the stalled stream.
	for round := 0; round < 20 && r.h.Stats().ListenStreams == 1; round++ {
		for _, u := range uris {
			r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": u})
		}
	}
	testutil.Eventually(t, wait, "the stalled listen stream to be cut off", func() bool {
		st := r.h.Stats()
		return st.ListenStreams == 0 && st.PostStreams == 0
	})
}
