package interop

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The tools the 2026-07-28 tests call, and what they send.
const (
	// toolProgress sends progressSteps notifications/progress (to the
	// call's progress token) and logLines notifications/message (at info,
	// so only to a caller that declared a log level) before it answers.
	toolProgress  = "interop_progress"
	progressSteps = 3
	logLines      = 2

	// toolAsk answers input_required (SEP-2322), asking the client to
	// elicit askKey, and completes when the retry carries the answer and
	// the state it was given.
	toolAsk   = "interop_ask"
	askKey    = "user_name"
	askState  = "interop-ask-v1"
	askPrompt = "What is your name?"
)

// addModernTools adds the tools of the 2026-07-28 tests to s.
func addModernTools(s *server.MCPServer) {
	s.AddTool(mcp.NewTool(toolProgress,
		mcp.WithDescription("Sends 3 progress notifications (to the call's progress token) and 2 info log messages, each naming tag, then returns tag."),
		mcp.WithString("tag", mcp.Required()),
	), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return progress(ctx, s, req)
	})
	s.AddTool(mcp.NewTool(toolAsk,
		mcp.WithDescription("Asks the client for the user's name (input_required, elicitation) and greets them once the retry answers."),
	), func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return ask(req)
	})
}

// progress is toolProgress. Its notifications are sent right before it
// answers, where a transport that stops forwarding when the answer is
// ready loses them.
func progress(ctx context.Context, s *server.MCPServer, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	tag, err := req.RequireString("tag")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if req.Params.Meta == nil || req.Params.Meta.ProgressToken == nil {
		return mcp.NewToolResultError("no progress token"), nil
	}
	token := req.Params.Meta.ProgressToken
	for i := 1; i <= progressSteps; i++ {
		err := s.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
			"progressToken": token, "progress": i, "total": progressSteps, "message": tag,
		})
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("progress %d: %v", i, err)), nil
		}
	}
	for i := 1; i <= logLines; i++ {
		err := s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "interop",
			map[string]any{"tag": tag, "line": i}))
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("log %d: %v", i, err)), nil
		}
	}
	return mcp.NewToolResultText(tag), nil
}

// ask is toolAsk: the first round answers input_required with one
// elicitation and askState; the retry, carrying the answer and the state,
// completes with "hello NAME" (or "declined").
func ask(req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	answer := server.ElicitationResponse(req.Params.InputResponses, askKey)
	if answer == nil {
		return server.NewInputRequestBuilder(askState).Elicit(askKey, mcp.ElicitationParams{
			Message: askPrompt,
			RequestedSchema: map[string]any{
				"type":       "object",
				"properties": map[string]any{"name": map[string]any{"type": "string"}},
				"required":   []string{"name"},
			},
		}).ToolResult(), nil
	}
	if req.Params.RequestState != askState {
		return mcp.NewToolResultError(fmt.Sprintf("requestState %q, want %q", req.Params.RequestState, askState)), nil
	}
	if answer.Action != mcp.ElicitationResponseActionAccept {
		return mcp.NewToolResultText("declined"), nil
	}
	content, _ := answer.Content.(map[string]any)
	name, _ := content["name"].(string)
	if name == "" {
		return mcp.NewToolResultError(fmt.Sprintf("no name in %v", answer.Content)), nil
	}
	return mcp.NewToolResultText("hello " + name), nil
}

// newAddedTool is a tool the listen tests add at run time, to change the
// tools list.
func newAddedTool(name string) mcp.Tool {
	return mcp.NewTool(name, mcp.WithDescription("Added at run time by a test; answers ok."))
}

// addedHandler answers the tools of newAddedTool.
func addedHandler(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return mcp.NewToolResultText("ok"), nil
}

// newAddedPrompt is a prompt the listen tests add at run time, to change
// the prompts list.
func newAddedPrompt(name string) mcp.Prompt {
	return mcp.NewPrompt(name, mcp.WithPromptDescription("Added at run time by a test."))
}

// addedPromptHandler answers the prompts of newAddedPrompt.
func addedPromptHandler(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return mcp.NewGetPromptResult("added", []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("ok")),
	}), nil
}
