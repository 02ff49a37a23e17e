package lifelineclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// BenchmarkCall compares one tool call through mcp-go's transport and
// through this one, on the same lifeline server: JSON answers (echo) and
// SSE answers (lifeline_progress, 3 steps: 7 events).
func BenchmarkCall(b *testing.B) {
	h := streamable.New(demotools.NewServer("bench", "1"), streamable.Config{HeartbeatInterval: streamable.Disabled, Logger: testLogger()})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer h.Shutdown(context.Background())
	for _, tc := range []struct {
		name string
		make func(hc *http.Client) (transport.Interface, error)
	}{
		{"mcpgo", func(hc *http.Client) (transport.Interface, error) {
			return transport.NewStreamableHTTP(ts.URL, transport.WithHTTPBasicClient(hc), transport.WithHTTPLogger(testLogger()))
		}},
		{"lifelineclient", func(hc *http.Client) (transport.Interface, error) {
			return lifelineclient.Config{HTTPClient: hc, Logger: testLogger()}.NewStreamableHTTP(ts.URL)
		}},
	} {
		for _, tool := range []string{"echo", "lifeline_progress"} {
			b.Run(tc.name+"/"+tool, func(b *testing.B) {
				ht := &http.Transport{}
				defer ht.CloseIdleConnections()
				tr, err := tc.make(&http.Client{Transport: ht})
				if err != nil {
					b.Fatal(err)
				}
				c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20251125))
				defer c.Close()
				ctx := context.Background()
				if err := c.Start(ctx); err != nil {
					b.Fatal(err)
				}
				if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err != nil {
					b.Fatal(err)
				}
				req := mcp.CallToolRequest{}
				req.Params.Name = tool
				req.Params.Arguments = map[string]any{"text": "x", "steps": 3}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.CallTool(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
