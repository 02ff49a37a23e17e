package streamable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// openListenOn opens a subscriptions/listen stream on url and reads its
// acknowledgement.
func openListenOn(t *testing.T, url string, id any, filter map[string]any) *testutil.Stream {
	t.Helper()
	cl := testutil.NewClient(url)
	cl.ProtocolVersion = mcp.ProtocolVersion20260728
	cl.Header = map[string]string{"Mcp-Method": "subscriptions/listen"}
	var msg map[string]any
	if err := json.Unmarshal(modernMsg(id, "subscriptions/listen", map[string]any{"notifications": filter}, nil), &msg); err != nil {
		t.Fatal(err)
	}
	s, err := cl.PostStream(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if s.Status != http.StatusOK {
		t.Fatalf("listen on %s: %d %s", url, s.Status, s.Body)
	}
	ack, err := s.NextMessage(testutil.Context(t, wait))
	if err != nil || ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("listen on %s: first %s (%v)", url, ack.Method, err)
	}
	return s
}

// collectUntil reads s's notifications until markers of method marker
// arrived, and returns how many of each other method (and params) arrived
// before. (Broadcasts go out in order per replica, not across replicas.)
func collectUntil(t *testing.T, s *testutil.Stream, marker string, markers int) map[string]int {
	t.Helper()
	ctx := testutil.Context(t, wait)
	got := map[string]int{}
	for {
		m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.IsNotification() })
		if err != nil {
			t.Fatalf("waiting for %s: %v (so far %v)", marker, err, got)
		}
		if m.Method == marker {
			if markers--; markers == 0 {
				return got
			}
			continue
		}
		var p map[string]json.RawMessage
		_ = json.Unmarshal(m.Params, &p)
		delete(p, "_meta")
		key, _ := json.Marshal(p)
		got[m.Method+" "+string(key)]++
	}
}

// startBroadcastCluster starts the cluster, a listen stream on each replica
// and a session per replica whose GET stream the next replica holds.
func startBroadcastCluster(t *testing.T) (*cluster, []*testutil.Stream, []*testutil.Stream) {
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, func(s *server.MCPServer) {
		server.WithPromptCapabilities(true)(s)
		server.WithResourceCapabilities(true, true)(s)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://m/{id}", "marker"),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil })
	})
	filter := map[string]any{"toolsListChanged": true, "resourceSubscriptions": []string{"test://m/0", "test://m/1", "test://m/2"}}
	var listens, gets []*testutil.Stream
	for i, r := range c.replicas {
		listens = append(listens, openListenOn(t, r.ts.URL, fmt.Sprintf("L%d", i), filter))
	}
	for i := range c.replicas {
		cl := c.session(i)
		gets = append(gets, c.stream(c.client((i+1)%3, cl)))
	}
	return c, listens, gets
}

// A broadcast raised on one replica reaches every listen stream and every
// session's GET stream exactly once, whichever replica holds it.
func TestClusterBroadcastReachesEveryStreamOnce(t *testing.T) {
	c, listens, gets := startBroadcastCluster(t)
	start := time.Now()
	c.replicas[0].mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"seq": 1})
	c.replicas[0].mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": "test://m/0"})
	const want = `notifications/tools/list_changed {"seq":1}`
	for i, s := range append(listens, gets...) {
		got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 1)
		if got[want] != 1 || len(got) != 1 {
			t.Fatalf("stream %d got %v before the marker; want the broadcast exactly once", i, got)
		}
	}
	t.Logf("a broadcast and a marker reached 6 streams on 3 replicas in %v", time.Since(start))
}

// Every replica raising the same broadcast at the same moment (say, each
// registering the same tool) reaches each client once, not once per
// replica; distinct broadcasts from one replica are each delivered.
func TestClusterSimultaneousIdenticalBroadcastsReachClientsOnce(t *testing.T) {
	c, listens, gets := startBroadcastCluster(t)
	var wg sync.WaitGroup
	ready := make(chan struct{})
	for _, r := range c.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-ready
			r.mcp.SendNotificationToAllClients("notifications/tools/list_changed", map[string]any{"tool": "same"})
		}()
	}
	close(ready)
	wg.Wait()
	c.replicas[2].mcp.SendNotificationToAllClients("custom/distinct", map[string]any{"n": 1})
	c.replicas[2].mcp.SendNotificationToAllClients("custom/distinct", map[string]any{"n": 2})
	for i, r := range c.replicas { // each after its own broadcasts
		r.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": fmt.Sprintf("test://m/%d", i)})
	}
	for i, s := range listens {
		got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 3)
		if got[`notifications/tools/list_changed {"tool":"same"}`] != 1 || len(got) != 1 {
			t.Fatalf("listen stream %d got %v; want the identical broadcasts once", i, got)
		}
	}
	for i, s := range gets {
		got := collectUntil(t, s, mcp.MethodNotificationResourceUpdated, 3)
		if got[`notifications/tools/list_changed {"tool":"same"}`] != 1 ||
			got[`custom/distinct {"n":1}`] != 1 || got[`custom/distinct {"n":2}`] != 1 || len(got) != 3 {
			t.Fatalf("GET stream %d got %v; want the identical broadcasts once and each distinct one", i, got)
		}
	}
}
