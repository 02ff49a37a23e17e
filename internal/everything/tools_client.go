package everything

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Names of the tools that send a request to the client and wait for its
// answer.
const (
	ToolSampling                = "test_sampling"
	ToolElicitation             = "test_elicitation"
	ToolElicitationSEP1034      = "test_elicitation_sep1034_defaults"
	ToolElicitationSEP1330Enums = "test_elicitation_sep1330_enums"
)

// SamplingMaxTokens is the maxTokens of test_sampling's request.
const SamplingMaxTokens = 100

// addClientRequestTools registers the tools that ask the client something:
// sampling/createMessage and elicitation/create. The requests travel on the
// call's own response stream and the client POSTs its answer; a client that
// cannot answer (no capability, an error, a lost session) turns into a tool
// error result that says why.
func addClientRequestTools(s *server.MCPServer) {
	s.AddTool(newTool(ToolSampling,
		"Asks the client's LLM to complete the prompt (sampling/createMessage) and returns its answer.",
		mcp.WithString("prompt", mcp.Required(), mcp.Description("the prompt to send to the LLM"))),
		sampling(s))
	s.AddTool(newTool(ToolElicitation,
		"Asks the user, through the client, for a username and an email address (elicitation/create).",
		mcp.WithString("message", mcp.Required(), mcp.Description("the message to show the user"))),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			msg, err := req.RequireString("message")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return elicit(ctx, s, msg, userInfoSchema(), "User response")
		})
	s.AddTool(newTool(ToolElicitationSEP1034,
		"Asks the user for a form whose fields of every primitive type carry default values (SEP-1034)."),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, s, "Please review the form; every field has a default.",
				defaultsSchema(), "Elicitation completed")
		})
	s.AddTool(newTool(ToolElicitationSEP1330Enums,
		"Asks the user for a form with each enum variant: untitled, titled and legacy single-select, "+
			"untitled and titled multi-select (SEP-1330)."),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, s, "Please pick from each of the enum fields.",
				enumsSchema(), "Elicitation completed")
		})
}

func sampling(s *server.MCPServer) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		prompt, err := req.RequireString("prompt")
		if err != nil {
			return mcp.NewToolResultError(err.Error()), nil
		}
		res, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{
			CreateMessageParams: mcp.CreateMessageParams{
				Messages: []mcp.SamplingMessage{{
					Role:    mcp.RoleUser,
					Content: mcp.NewTextContent(prompt),
				}},
				MaxTokens: SamplingMaxTokens,
			},
		})
		if err != nil {
			return mcp.NewToolResultError(fmt.Sprintf("sampling failed: %v", err)), nil
		}
		return mcp.NewToolResultText("LLM response: " + samplingText(res.Content)), nil
	}
}

// samplingText returns the text of a sampling result's content: one block
// or several, of which the text blocks count.
func samplingText(content any) string {
	if tc, ok := mcp.AsTextContent(content); ok {
		return tc.Text
	}
	// An answer decoded from JSON (a multi round-trip inputResponse) holds
	// its content as a map.
	if m, ok := content.(map[string]any); ok && m["type"] == "text" {
		if text, ok := m["text"].(string); ok {
			return text
		}
	}
	var parts []string
	if blocks, ok := content.([]mcp.Content); ok {
		for _, b := range blocks {
			if tc, ok := mcp.AsTextContent(b); ok {
				parts = append(parts, tc.Text)
			}
		}
	}
	if len(parts) == 0 {
		return "(no text in the response)"
	}
	return strings.Join(parts, "\n")
}

// elicit sends a form elicitation with schema and reports the user's action
// and content, prefixed by label.
func elicit(ctx context.Context, s *server.MCPServer, message string, schema map[string]any, label string) (*mcp.CallToolResult, error) {
	res, err := s.RequestElicitation(ctx, mcp.ElicitationRequest{
		Params: mcp.ElicitationParams{
			Mode:            mcp.ElicitationModeForm,
			Message:         message,
			RequestedSchema: schema,
		},
	})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("elicitation failed: %v", err)), nil
	}
	content := res.Content
	if content == nil {
		content = map[string]any{}
	}
	b, err := json.Marshal(content)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("elicitation content does not encode: %v", err)), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, b)), nil
}
