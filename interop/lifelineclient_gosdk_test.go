package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// lcRestartable serves the Go SDK's StreamableHTTPHandler, replaced by a
// new one (a server restart: every session forgotten) on restart, and
// counts, server side, the initialize POSTs and the sessions the SDK saw
// initialized.
type lcRestartable struct {
	h           atomic.Pointer[sdk.StreamableHTTPHandler]
	initPosts   atomic.Int64
	initialized atomic.Int64
}

func (s *lcRestartable) restart() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "gosdk-server", Version: "1"}, &sdk.ServerOptions{
		InitializedHandler: func(context.Context, *sdk.InitializedRequest) { s.initialized.Add(1) },
		Logger:             slog.New(slog.DiscardHandler),
	})
	type in struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}}, nil, nil
	})
	s.h.Store(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{Logger: slog.New(slog.DiscardHandler)}))
}

func (s *lcRestartable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &m) == nil && m.Method == "initialize" {
			s.initPosts.Add(1)
		}
	}
	s.h.Load().ServeHTTP(w, r)
}

// lifelineclient against the Go SDK's server: after a restart forgets the
// session, 64 calls at once go on with exactly one initialize, counted on
// the server (initialize POSTs, and sessions its InitializedHandler saw).
func TestLifelineClientAgainstGoSDKServerRestart(t *testing.T) {
	srv := &lcRestartable{}
	srv.restart()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ht := &http.Transport{}
	t.Cleanup(ht.CloseIdleConnections)
	var swaps atomic.Int64
	tr, err := lifelineclient.Config{
		HTTPClient:        &http.Client{Transport: ht},
		OnSessionReplaced: func(string, string) { swaps.Add(1) },
		Logger:            slog.New(slog.DiscardHandler),
	}.NewStreamableHTTP(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpgoclient.NewClient(tr, mcpgoclient.WithProtocolVersion(pinnedVersion))
	ctx := testutil.Context(t, wait)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var listChanged atomic.Int64
	c.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == mcpgo.MethodNotificationToolsListChanged {
			listChanged.Add(1)
		}
	})
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = pinnedVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "lifelineclient", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatal(err)
	}
	echo := func(text string) error {
		r := mcpgo.CallToolRequest{}
		r.Params.Name = "echo"
		r.Params.Arguments = map[string]any{"text": text}
		res, err := c.CallTool(ctx, r)
		if err != nil {
			return err
		}
		if got := res.Content[0].(mcpgo.TextContent).Text; got != text {
			return fmt.Errorf("echo %q answered %q", text, got)
		}
		return nil
	}
	if err := echo("before"); err != nil {
		t.Fatal(err)
	}
	old := c.GetSessionId()
	retired := srv.h.Load()
	srv.restart()
	// The retired server's session still runs: end it when the test ends.
	t.Cleanup(func() {
		del := httptest.NewRequest(http.MethodDelete, "/", nil)
		del.Header.Set("Mcp-Session-Id", old)
		del.Header.Set("Mcp-Protocol-Version", pinnedVersion)
		retired.ServeHTTP(httptest.NewRecorder(), del)
	})

	start := testutil.NewBarrier(64)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			if err := start.Wait(ctx); err != nil {
				errs <- err
				return
			}
			errs <- echo(fmt.Sprint("call-", i))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := srv.initPosts.Load(); got != 2 {
		t.Errorf("initialize POSTs on the Go SDK server: %d, want 2", got)
	}
	if got := srv.initialized.Load(); got != 2 {
		t.Errorf("sessions initialized on the Go SDK server: %d, want 2", got)
	}
	if got := swaps.Load(); got != 1 {
		t.Errorf("OnSessionReplaced: %d calls, want 1", got)
	}
	if got := listChanged.Load(); got != 1 {
		t.Errorf("tools/list_changed delivered %d times, want 1", got)
	}
	if now := c.GetSessionId(); now == "" || now == old {
		t.Errorf("session id %q after the restart (old %q)", now, old)
	}
}
