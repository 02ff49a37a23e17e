package everything

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// Names of the diagnostic tools the 2026-07-28 (stateless) checks call, and
// of the tool whose parameter travels in an HTTP header.
const (
	ToolMissingCapability   = "test_missing_capability"
	ToolStreamingElicit     = "test_streaming_elicitation"
	ToolLoggingTool         = "test_logging_tool"
	ToolTriggerToolChange   = "test_trigger_tool_change"
	ToolTriggerPromptChange = "test_trigger_prompt_change"
	ToolHeaderParam         = "test_header_param"
)

// HeaderParamName is test_header_param's string parameter, and
// HeaderParamHeader the x-mcp-header annotation that puts its value in the
// Mcp-Param-Greeting header of a 2026-07-28 request (SEP-2243).
const (
	HeaderParamName   = "greeting"
	HeaderParamHeader = "Greeting"
)

// addStatelessTools registers the tools the 2026-07-28 checks use to probe
// the transport: a tool that needs the sampling capability, one that asks
// for input while it streams, one that logs, two that change the tool and
// prompt lists (so listen streams get list_changed notifications), and one
// with a header-mirrored parameter.
func addStatelessTools(s *server.MCPServer) {
	s.AddTool(newTool(ToolMissingCapability,
		"Needs the client's sampling capability: a client that did not declare it gets "+
			"MissingRequiredClientCapabilityError (-32021) naming sampling."),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := streamable.RequireClientCapabilities(ctx, needSampling()); err != nil {
				return nil, err
			}
			return mcp.NewToolResultText("The client declared sampling."), nil
		})
	s.AddTool(newTool(ToolStreamingElicit,
		"Reports progress when asked to, then asks the user's name (elicitation, key user_name) "+
			"with an input_required result: no request travels on the response stream."),
		streamingElicitation(s))
	s.AddTool(newTool(ToolLoggingTool,
		"Sends three info-level log notifications, which a 2026-07-28 client gets only when its "+
			"request's _meta names a log level, then returns."),
		withLogging(s, ToolLoggingTool))
	s.AddTool(newTool(ToolTriggerToolChange,
		"Registers itself again, so every client listening for tool list changes is told "+
			"(notifications/tools/list_changed); the list stays the same."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			self := s.GetTool(ToolTriggerToolChange)
			if self == nil {
				return nil, fmt.Errorf("%s is not registered", ToolTriggerToolChange)
			}
			s.AddTool(self.Tool, self.Handler)
			return mcp.NewToolResultText("The tool list changed (it was re-registered)."), nil
		})
	s.AddTool(newTool(ToolTriggerPromptChange,
		"Registers "+PromptSimple+" again, so every client listening for prompt list changes is "+
			"told (notifications/prompts/list_changed); the list stays the same."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p, ok := s.ListPrompts()[PromptSimple]
			if !ok || p == nil {
				return nil, fmt.Errorf("%s is not registered", PromptSimple)
			}
			s.AddPrompt(p.Prompt, p.Handler)
			return mcp.NewToolResultText("The prompt list changed (" + PromptSimple + " was re-registered)."), nil
		})
	s.AddTool(newTool(ToolHeaderParam,
		"Echoes its greeting, which a 2026-07-28 client also sends in the Mcp-Param-"+HeaderParamHeader+" header.",
		mcp.WithString(HeaderParamName, mcp.Required(),
			mcp.Description("the greeting to echo"),
			func(schema map[string]any) { schema["x-mcp-header"] = HeaderParamHeader })),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			g, err := req.RequireString(HeaderParamName)
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText("Greeting: " + g), nil
		})
}

// streamingElicitation reports progress (when the call carries a progress
// token) on the response stream, then asks for the user's name the
// 2026-07-28 way, and greets them once the retry carries the answer.
func streamingElicitation(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if err := streamable.RequireClientCapabilities(ctx, needElicitation()); err != nil {
			return nil, err
		}
		if name, ok := acceptedString(req.Params.InputResponses, InputUserName, "name"); ok {
			return mcp.NewToolResultText("Hello, " + name + "!"), nil
		}
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			_ = s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": req.Params.Meta.ProgressToken,
				"progress":      1,
				"total":         2,
				"message":       "asking for the user's name",
			})
		}
		return server.NewInputRequestBuilder("").
			Elicit(InputUserName, askString("What is your name?", "name")).
			ToolResult(), nil
	}
}
