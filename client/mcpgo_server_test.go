package lifelineclient_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
)

// Stock mcp-go's StreamableHTTPServer, stateful (WithStateful: its default
// takes any session id), forgets a session on DELETE: 64 calls at once go
// on with one initialize and one session registered, as its hooks count.
func TestMCPGoServerDeletedSession(t *testing.T) {
	var registered atomic.Int64
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { registered.Add(1) })
	s := demotools.NewServer("mcp-go-stock", "1")
	server.WithHooks(hooks)(s)
	cnt := count(server.NewStreamableHTTPServer(s, server.WithStateful(true)))
	ts := newFront(t, cnt)
	c := connect(t, ts.URL, lifelineclient.Config{}, nil)
	c.echo("before")
	old := c.tr.GetSessionId()
	if old == "" {
		t.Fatal("no session id from mcp-go's server")
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.URL, nil)
	req.Header.Set("Mcp-Session-Id", old)
	req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20251125)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	concurrentEchoes(t, c, 64)
	wantReplacedOnce(t, cnt, c, old)
	if got := registered.Load(); got != 2 {
		t.Fatalf("sessions registered (OnRegisterSession): %d, want 2", got)
	}
}
