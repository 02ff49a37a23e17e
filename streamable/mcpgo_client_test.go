package streamable_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

type fixedSampler struct{}

func (fixedSampler) CreateMessage(context.Context, mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	return &mcp.CreateMessageResult{
		SamplingMessage: mcp.SamplingMessage{Role: mcp.RoleAssistant, Content: mcp.NewTextContent("sampled")},
		Model:           "test-model",
	}, nil
}

// mcp-go's own client, pinned to 2025-11-25: sampling round trip, client
// info on the session, then the server forgets the session: the client gets
// 404 (ErrSessionTerminated) and recovers by initializing again.
func TestMCPGoClientSamplingAnd404Recovery(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.EnableSampling()
		s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}},
				MaxTokens: 5,
			}})
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(res.Content.(mcp.TextContent).Text), nil
		})
		s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cs := server.ClientSessionFromContext(ctx)
			info := cs.(server.SessionWithClientInfo).GetClientInfo()
			version := cs.(server.SessionWithProtocolVersion).ProtocolVersion()
			return mcp.NewToolResultText(info.Name + "@" + version), nil
		})
	})
	c := r.mcpgoClient(nil, client.WithSamplingHandler(fixedSampler{}),
		client.WithProtocolVersion(mcp.ProtocolVersion20251125))
	ctx := testutil.Context(t, wait)
	initialize := func() {
		t.Helper()
		req := mcp.InitializeRequest{}
		req.Params.ProtocolVersion = mcp.ProtocolVersion20251125
		req.Params.ClientInfo = mcp.Implementation{Name: "mcpgo-test", Version: "1"}
		req.Params.Capabilities.Sampling = &mcp.SamplingCapability{}
		if _, err := c.Initialize(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	callText := func(name string) (string, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return "", err
		}
		if res.IsError {
			return "", errors.New("tool error")
		}
		return res.Content[0].(mcp.TextContent).Text, nil
	}
	initialize()
	if got, err := callText("ask"); err != nil || got != "sampled" {
		t.Fatalf("sampling round trip: %q, %v", got, err)
	}
	if got, err := callText("whoami"); err != nil || got != "mcpgo-test@2025-11-25" {
		t.Fatalf("client info on the session: %q, %v", got, err)
	}
	// The server forgets the session.
	old := c.GetSessionId()
	raw := r.client()
	raw.SessionID = old
	if resp, err := raw.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
	if _, err := callText("whoami"); !errors.Is(err, transport.ErrSessionTerminated) {
		t.Fatalf("call on a forgotten session: %v, want ErrSessionTerminated (a 404)", err)
	}
	initialize()
	if c.GetSessionId() == old {
		t.Fatal("re-initializing reused the forgotten session id")
	}
	if got, err := callText("ask"); err != nil || got != "sampled" {
		t.Fatalf("after re-initializing: %q, %v", got, err)
	}
}

// mcpgoClient returns mcp-go's own client, started, on the rig's endpoint
// with its own connections; it is closed when the test ends.
func (r *rig) mcpgoClient(headers map[string]string, opts ...client.ClientOption) *client.Client {
	r.t.Helper()
	tr := &http.Transport{}
	r.t.Cleanup(tr.CloseIdleConnections)
	topts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&http.Client{Transport: tr})}
	if headers != nil {
		topts = append(topts, transport.WithHTTPHeaders(headers))
	}
	httpTransport, err := transport.NewStreamableHTTP(r.ts.URL, topts...)
	if err != nil {
		r.t.Fatal(err)
	}
	c := client.NewClient(httpTransport, opts...)
	if err := c.Start(testutil.Context(r.t, wait)); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}
