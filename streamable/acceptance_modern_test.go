package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// Acceptance tests of issue 11's claims, written from the outside by the
// review (modern_review_test.go holds the tests of the bugs it found).

// markerFilterSetup gives a server the capabilities the broadcast tests use.
func markerFilterSetup(s *server.MCPServer) {
	server.WithPromptCapabilities(true)(s)
	server.WithResourceCapabilities(true, true)(s)
}

// One replica: a broadcast raised while a session has no GET stream is
// held in the session's queue and arrives when the stream opens.
func TestBlackboxModernSingleReplicaBroadcastWithoutGetStreamIsHeld(t *testing.T) {
	r := newRig(t, streamable.Config{}, markerFilterSetup)
	cl := r.session()
	r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"gap": 1})
	s := r.stream(cl)
	r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 1)
	if got[`notifications/tools/list_changed {"gap":1}`] != 1 {
		t.Fatalf("GET stream got %v before the marker; want the broadcast raised before it opened", got)
	}
}

// Claim 3, alone: three goroutines raising 999 distinct broadcasts at once
// reach a listen stream, every one (the tap's queue pushes back).
func TestBlackboxModernSingleReplicaBroadcastBurstNoneLost(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		markerFilterSetup(s)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://b/{id}", "burst"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	const n = 999
	uris := make([]string, 0, n)
	for i := range n {
		uris = append(uris, fmt.Sprintf("test://b/%d", i))
	}
	s := openListenOn(t, r.ts.URL, "S", map[string]any{"resourceSubscriptions": uris})
	var wg sync.WaitGroup
	for k := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := k; i < n; i += 3 {
				r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uris[i]})
			}
		}()
	}
	wg.Wait()
	ctx := testutil.Context(t, wait)
	got := map[string]bool{}
	for len(got) < n {
		m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.IsNotification() })
		if err != nil {
			t.Fatalf("%d of %d distinct updates arrived (%v); %+v", len(got), n, err, r.h.Stats())
		}
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(m.Params, &p)
		got[p.URI] = true
	}
}

// Claim 1: 2026-07-28 refusals carry the code and status the version
// defines and echo the request's id (a string id, a numeric one), and a
// notification is accepted with 202 and no body.
func TestBlackboxModernModernRefusalsCodesStatusesIDs(t *testing.T) {
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, wait)
	cases := []struct {
		name   string
		body   []byte
		extra  map[string]string
		status int
		code   int
		id     string
	}{
		{"unknown method", modernMsg("q-1", "no/such", nil, nil), nil, http.StatusNotFound, mcp.METHOD_NOT_FOUND, `"q-1"`},
		{"removed initialize", modernMsg(5, "initialize", nil, nil), nil, http.StatusNotFound, mcp.METHOD_NOT_FOUND, "5"},
		{"no version header", modernMsg(6, "tools/list", nil, nil), map[string]string{"MCP-Protocol-Version": ""}, http.StatusBadRequest, mcp.HEADER_MISMATCH, "6"},
		{"header and _meta disagree", modernMsg(7, "tools/list", nil, map[string]any{mcp.MetaKeyProtocolVersion: "2099-01-01"}), nil, http.StatusBadRequest, mcp.HEADER_MISMATCH, "7"},
		{"version not served", modernMsg(8, "tools/list", nil, map[string]any{mcp.MetaKeyProtocolVersion: "2099-01-01"}),
			map[string]string{"MCP-Protocol-Version": "2099-01-01"}, http.StatusBadRequest, mcp.UNSUPPORTED_PROTOCOL_VERSION, "8"},
		{"Mcp-Method wrong", modernMsg(9, "tools/list", nil, nil), map[string]string{"Mcp-Method": "prompts/list"}, http.StatusBadRequest, mcp.HEADER_MISMATCH, "9"},
		{"unknown tool", modernMsg(10, "tools/call", map[string]any{"name": "nope"}, nil), nil, 0, mcp.INVALID_PARAMS, "10"},
	}
	for _, tc := range cases {
		resp := r.modernPost(ctx, t, tc.body, tc.extra)
		if tc.status != 0 && resp.Status != tc.status {
			t.Errorf("%s: status %d, want %d: %s", tc.name, resp.Status, tc.status, resp.Body)
			continue
		}
		if resp.Header.Get("Mcp-Session-Id") != "" {
			t.Errorf("%s: a session id was minted", tc.name)
		}
		id, code, _, _ := rpcErrorOf(t, resp)
		if code != tc.code || id != tc.id {
			t.Errorf("%s: code %d id %s, want %d %s", tc.name, code, id, tc.code, tc.id)
		}
	}
	resp := r.modernPost(ctx, t, modernMsg(nil, "notifications/cancelled", map[string]any{"requestId": 1}, nil), nil)
	if resp.Status != http.StatusAccepted || len(resp.Body) != 0 {
		t.Fatalf("a 2026-07-28 notification answered %d %q", resp.Status, resp.Body)
	}
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Fatalf("Stats %+v after 2026-07-28 requests only", st)
	}
}

// Claim 1 and 2: Shutdown ends a listen stream at once, with its final
// result (tagged, after everything else on the stream), while a running
// 2026-07-28 tools/call gets its grace and answers; Shutdown returns nil.
func TestBlackboxModernShutdownEndsListenAtOnceRunningCallFinishes(t *testing.T) {
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		markerFilterSetup(s)
		s.AddTool(mcp.NewTool("hold"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			<-release // does not watch ctx: a job that finishes on its own
			return mcp.NewToolResultText("finished"), nil
		})
	})
	ctx := testutil.Context(t, wait)
	l := r.openListen(ctx, t, "L", map[string]any{"toolsListChanged": true})
	if m := l.next(t); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first %s", m.Method)
	}
	call := r.modernCallAsync(ctx, t, 3, "hold")
	<-started
	down := r.shutdownAsync()
	for { // the listen stream ends while the call still runs
		m := l.next(t)
		if m.Method != "" {
			continue
		}
		if string(m.ID) != `"L"` || subscriptionID(t, m) != `"L"` {
			t.Fatalf("final result %s %s", m.ID, m.Result)
		}
		break
	}
	if ev, err := l.rd.Next(); err == nil && !ev.IsComment() {
		t.Fatalf("an event after the final result: %+v", ev)
	}
	close(release)
	resp := <-call
	if resp == nil || resp.Status != http.StatusOK {
		t.Fatalf("the running call answered %+v", resp)
	}
	last, err := resp.Last()
	if err != nil || string(last.ID) != "3" || len(last.Result) == 0 {
		t.Fatalf("the running call's answer %s %s (%v)", last.ID, last.Result, err)
	}
	if err := <-down; err != nil {
		t.Fatal(err)
	}
}

// Claim 2: a listen client that stops reading is cut off within the write
// timeout, its place (Stats.ListenStreams) freed, and its goroutines
// released (goleak at the end of the package's tests).
func TestBlackboxModernStalledListenClientCutOff(t *testing.T) {
	r := newRig(t, streamable.Config{WriteTimeout: 200 * time.Millisecond}, markerFilterSetup)
	ctx := testutil.Context(t, wait)
	body := string(modernMsg("X", "subscriptions/listen", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}, nil))
	st, err := testutil.DialStalled(ctx, r.ts.URL, "POST", map[string]string{
		"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": mcp.ProtocolVersion20260728, "Mcp-Method": "subscriptions/listen",
	}, body)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	testutil.Eventually(t, wait, "the listen stream to open", func() bool { return r.h.Stats().ListenStreams == 1 })
	big := strings.Repeat("x", 64<<10)
	start := time.Now()
	for i := 0; r.h.Stats().ListenStreams == 1; i++ {
		if time.Since(start) > wait {
			t.Fatalf("the stalled listen stream still open after %d broadcasts of 64 KiB in %v", i, wait)
		}
		r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"i": i, "pad": big})
	}
	testutil.Eventually(t, wait, "the stalled stream's request to end", func() bool { return r.h.Stats().PostStreams == 0 })
	// A new listen stream still works.
	l := r.openListen(ctx, t, "Y", map[string]any{"toolsListChanged": true})
	if m := l.next(t); m.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first %s", m.Method)
	}
}

// Claim 3: a broadcast raised on replica B reaches a listen stream on C and
// the GET stream (held on C) of a session created on A, exactly once; the
// same broadcast raised at once by A and B reaches them once. (The listen
// stream may coalesce the two tools list changes if both are unwritten.)
func TestBlackboxModernClusterBroadcastAnyReplicaOnce(t *testing.T) {
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, func(s *server.MCPServer) {
		markerFilterSetup(s)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://m/{id}", "marker"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	listen := openListenOn(t, c.replicas[2].ts.URL, "C1", map[string]any{"toolsListChanged": true,
		"resourceSubscriptions": []string{"test://m/0", "test://m/1", "test://m/2"}})
	cl := c.session(0)
	get := c.stream(c.client(2, cl))
	c.replicas[1].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"from": "B"})
	var wg sync.WaitGroup
	for _, i := range []int{0, 1} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.replicas[i].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"from": "both"})
		}()
	}
	wg.Wait()
	for i, r := range c.replicas { // each after its own broadcasts
		r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": fmt.Sprintf("test://m/%d", i)})
	}
	const fromB, both = `notifications/tools/list_changed {"from":"B"}`, `notifications/tools/list_changed {"from":"both"}`
	got := collectUntil(t, get, mcp.MethodNotificationResourceUpdated, 3)
	if got[fromB] != 1 || got[both] != 1 || len(got) != 2 {
		t.Fatalf("GET stream got %v", got)
	}
	got = collectUntil(t, listen, mcp.MethodNotificationResourceUpdated, 3)
	if got[fromB]+got[both] == 0 || got[fromB] > 1 || got[both] > 1 || len(got) > 2 {
		t.Fatalf("listen stream got %v", got)
	}
}

// Alone, a broadcast's large integer reaches a session's GET stream exact
// (compare TestClusterBroadcastKeepsLargeIntegers).
func TestBlackboxModernSingleReplicaBroadcastKeepsLargeIntegers(t *testing.T) {
	r := newRig(t, streamable.Config{}, markerFilterSetup)
	cl := r.session()
	get := r.stream(cl)
	r.mcp.SendNotificationToAllClients("custom/big", map[string]any{"n": int64(1<<53 + 1)})
	m, err := get.NextMatching(testutil.Context(t, wait), func(m testutil.Message) bool { return m.Method == "custom/big" })
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		N json.RawMessage `json:"n"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || string(p.N) != "9007199254740993" {
		t.Fatalf("n arrived as %s (%v)", p.N, err)
	}
}
