package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// WithEventStore takes mcp-go's own EventStore: GET stream events carry
// its ids, and a GET with Last-Event-ID replays from it what the client
// missed. WithEventStore(nil) turns resumability off.
func TestWithEventStoreTakesMCPGoStore(t *testing.T) {
	mcp := demotools.NewServer("lifeline-server-test", "1")
	srv := server.New(mcp, server.WithStreamableHTTPLogger(quiet),
		server.WithEventStore(mcpserver.NewInMemoryEventStore()))
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	base, _ := serve(t, srv)
	c := rawClient(t, base+"/mcp")
	ctx := testutil.Context(t, wait)
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	send := func(data string) {
		t.Helper()
		if err := mcp.SendNotificationToSpecificClient(c.SessionID, "notifications/message",
			map[string]any{"level": "info", "data": data}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.OpenStream(ctx)
	if err != nil || s.Status != http.StatusOK {
		t.Fatalf("GET: %v %+v", err, s)
	}
	send("one")
	ev, err := s.NextMessageEvent(ctx)
	if err != nil || ev.ID == "" {
		t.Fatalf("first notification %+v (%v), want an id from the store", ev, err)
	}
	s.Close()
	send("two")
	c.Header = map[string]string{"Last-Event-ID": ev.ID}
	rs, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if rs.Status != http.StatusOK {
		t.Fatalf("resume: %d %s", rs.Status, rs.Body)
	}
	m, err := rs.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
	if err != nil || !strings.Contains(string(m.Params), `"two"`) {
		t.Fatalf("resumed stream: %+v (%v), want the missed notification", m, err)
	}

	off := server.New(demotools.NewServer("off", "1"), server.WithStreamableHTTPLogger(quiet), server.WithEventStore(nil))
	t.Cleanup(func() { _ = off.Shutdown(context.Background()) })
	offBase, _ := serve(t, off)
	oc := rawClient(t, offBase+"/mcp")
	if _, err := oc.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	oc.Header = map[string]string{"Last-Event-ID": "1"}
	fresh, err := oc.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	first, err := fresh.Next(ctx)
	if fresh.Status != http.StatusOK || err != nil || first.ID != "" || !first.IsComment() {
		t.Fatalf("WithEventStore(nil): %d, first %+v (%v), want a fresh stream without ids", fresh.Status, first, err)
	}
}
