// Package demotools builds the MCP server that lifeline-demo serves and the
// transport's tests run against: a few tools that exercise each way a
// message can travel (a plain response, notifications to the session's GET
// stream, progress and log notifications on the request's own stream).
package demotools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Limits on tool arguments, so a demo call cannot exhaust the server.
const (
	MaxNotifyCount = 100000
	MaxNotifyBytes = 1 << 20
	MaxSteps       = 10000
	MaxStepDelayMS = 10000
	MaxTagBytes    = 256
)

// NewServer returns an MCP server with the demo tools registered.
func NewServer(name, version string) *server.MCPServer {
	s := server.NewMCPServer(name, version,
		server.WithToolCapabilities(true),
		server.WithLogging(),
	)
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Returns the text it is given."),
		mcp.WithString("text", mcp.Required(), mcp.Description("text to return")),
	), echo)
	s.AddTool(mcp.NewTool("lifeline_notify_session",
		mcp.WithDescription("Sends count notifications/message notifications to the caller's session; "+
			"they travel on its GET stream. Returns at once."),
		mcp.WithNumber("count", mcp.Description("how many notifications (default 1)")),
		mcp.WithNumber("bytes", mcp.Description("about how many bytes of payload each carries (default 0)")),
		mcp.WithString("tag", mcp.Description(fmt.Sprintf(
			"at most %d bytes, copied into each notification's data beside its seq (0..count-1), "+
				"so a client can tell the notifications of each call apart and count duplicates", MaxTagBytes))),
	), notifySession(s))
	s.AddTool(mcp.NewTool("lifeline_progress",
		mcp.WithDescription("Sends steps progress notifications (when the call has a progress token) "+
			"and steps log notifications during the call, on the call's own response stream, then returns."),
		mcp.WithNumber("steps", mcp.Description("how many steps (default 3)")),
		mcp.WithNumber("delay_ms", mcp.Description(fmt.Sprintf(
			"milliseconds to wait before each step, 0..%d (default 0), so the call stays running a while", MaxStepDelayMS))),
	), progress(s))
	return s
}

func echo(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	return mcp.NewToolResultText(text), nil
}

func notifySession(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		count := req.GetInt("count", 1)
		size := req.GetInt("bytes", 0)
		tag := req.GetString("tag", "")
		if count < 0 || count > MaxNotifyCount || size < 0 || size > MaxNotifyBytes || len(tag) > MaxTagBytes {
			return mcp.NewToolResultError(fmt.Sprintf(
				"count must be 0..%d, bytes 0..%d and tag at most %d bytes", MaxNotifyCount, MaxNotifyBytes, MaxTagBytes)), nil
		}
		session := server.ClientSessionFromContext(ctx)
		if session == nil {
			return mcp.NewToolResultError("no session"), nil
		}
		payload := strings.Repeat("x", size)
		sent, refused := 0, 0
		for i := range count {
			data := map[string]any{"seq": i, "payload": payload}
			if tag != "" {
				data["tag"] = tag
			}
			err := s.SendNotificationToSpecificClient(session.SessionID(), "notifications/message", map[string]any{
				"level":  "info",
				"logger": "lifeline_notify_session",
				"data":   data,
			})
			if err != nil {
				refused++
				continue
			}
			sent++
		}
		if refused > 0 {
			return mcp.NewToolResultText(fmt.Sprintf("sent %d notifications, %d refused (queue full)", sent, refused)), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("sent %d notifications", sent)), nil
	}
}

func progress(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		steps := req.GetInt("steps", 3)
		if steps < 0 || steps > MaxSteps {
			return mcp.NewToolResultError(fmt.Sprintf("steps must be 0..%d", MaxSteps)), nil
		}
		delayMS := req.GetInt("delay_ms", 0)
		if delayMS < 0 || delayMS > MaxStepDelayMS {
			return mcp.NewToolResultError(fmt.Sprintf("delay_ms must be 0..%d", MaxStepDelayMS)), nil
		}
		delay := time.Duration(delayMS) * time.Millisecond
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i := 1; i <= steps; i++ {
			if err := pause(ctx, delay); err != nil {
				return nil, fmt.Errorf("lifeline_progress cancelled at step %d: %w", i, err)
			}
			if token != nil {
				_ = s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token,
					"progress":      i,
					"total":         steps,
					"message":       fmt.Sprintf("step %d of %d", i, steps),
				})
			}
			// Sent whatever logging/setLevel says, so the demo always shows them.
			_ = s.SendNotificationToClient(ctx, "notifications/message", map[string]any{
				"level":  "info",
				"logger": "lifeline_progress",
				"data":   fmt.Sprintf("step %d of %d", i, steps),
			})
		}
		return mcp.NewToolResultText(fmt.Sprintf("done %d steps", steps)), nil
	}
}

// pause waits d, or until ctx ends, when it returns ctx's error.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
