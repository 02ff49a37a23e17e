package everything

import (
	"context"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// Names of the tools that send notifications while they run, and of the
// reconnection tool.
const (
	ToolWithLogging  = "test_tool_with_logging"
	ToolWithProgress = "test_tool_with_progress"
	ToolReconnection = "test_reconnection"
)

// StepDelay is the pause between the notifications of the logging and
// progress tools, so that a client sees them arrive while the call runs.
const StepDelay = 50 * time.Millisecond

// The info-level log messages test_tool_with_logging sends, in this order.
const (
	LogStarted    = "Tool execution started"
	LogProcessing = "Tool processing data"
	LogCompleted  = "Tool execution completed"
)

// ProgressTotal is the total of every progress notification; the progress
// values reported are 0, half of it, and all of it.
const ProgressTotal = 100

func logMessages() []string { return []string{LogStarted, LogProcessing, LogCompleted} }

func progressSteps() []int { return []int{0, ProgressTotal / 2, ProgressTotal} }

// addNotifyingTools registers the tools whose notifications travel on the
// call's own response stream: the context each handler gets carries the
// request's session, so SendNotificationToClient and SendLogMessageToClient
// reach that request's client, not the session's GET stream.
func addNotifyingTools(s *server.MCPServer) {
	s.AddTool(newTool(ToolWithLogging,
		"Sends three info-level log notifications during the call, "+
			fmt.Sprint(StepDelay)+" apart (subject to logging/setLevel), then returns."),
		withLogging(s, ToolWithLogging))
	s.AddTool(newTool(ToolWithProgress,
		"Reports progress 0, 50 and 100 of 100, "+fmt.Sprint(StepDelay)+
			" apart, when the call carries a progress token, then returns."),
		withProgress(s))
	s.AddTool(newTool(ToolReconnection,
		"SEP-1699 SSE polling: ends the call's SSE stream after its priming event "+
			"(streamable.CloseSSEStream), then answers; the client resumes with Last-Event-ID "+
			"and gets the result from the event log."),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if !streamable.CloseSSEStream(ctx) {
				return mcp.NewToolResultText("Reconnection test completed: this response cannot be " +
					"resumed (no event log, or a version before 2025-11-25), so the result " +
					"arrives on the original stream."), nil
			}
			// Answer once the client has had a moment to come back; the
			// answer waits in the event log either way.
			if err := pause(ctx, ReconnectionDelay); err != nil {
				return nil, fmt.Errorf("%s cancelled: %w", ToolReconnection, err)
			}
			return mcp.NewToolResultText("Reconnection test completed: the stream was closed " +
				"mid-call and the result was delivered on the resumed stream."), nil
		})
}

// ReconnectionDelay is how long test_reconnection runs after it closed its
// stream: the answer is sent while its client is away, or resuming.
const ReconnectionDelay = 100 * time.Millisecond

// withLogging returns the handler of the tool name that sends the three log
// messages.
func withLogging(s *server.MCPServer, name string) server.ToolHandlerFunc {
	return func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		msgs := logMessages()
		for i, msg := range msgs {
			if i > 0 {
				if err := pause(ctx, StepDelay); err != nil {
					return nil, fmt.Errorf("%s cancelled before message %d: %w", name, i+1, err)
				}
			}
			// A refused send (the client stopped reading) ends the request on
			// the transport's side; there is nothing more to do here.
			_ = s.SendLogMessageToClient(ctx,
				mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, name, msg))
		}
		return mcp.NewToolResultText(fmt.Sprintf("%s sent %d log messages", name, len(msgs))), nil
	}
}

func withProgress(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var token mcp.ProgressToken
		if req.Params.Meta != nil {
			token = req.Params.Meta.ProgressToken
		}
		for i, p := range progressSteps() {
			if i > 0 {
				if err := pause(ctx, StepDelay); err != nil {
					return nil, fmt.Errorf("%s cancelled at %d of %d: %w", ToolWithProgress, p, ProgressTotal, err)
				}
			}
			if token == nil {
				continue
			}
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token,
				"progress":      p,
				"total":         ProgressTotal,
				"message":       fmt.Sprintf("%d of %d done", p, ProgressTotal),
			})
		}
		if token == nil {
			return mcp.NewToolResultText("done (no progress token, so no progress was reported)"), nil
		}
		return mcp.NewToolResultText(fmt.Sprintf("done, progress reported to token %v", token)), nil
	}
}

// pause waits d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
