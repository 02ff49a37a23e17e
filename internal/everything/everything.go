// Package everything builds the MCP server that the MCP conformance suite
// (@modelcontextprotocol/conformance, "server" mode) tests against: the
// suite's "everything" contract of tools, resources, prompts and completion,
// with the names, arguments and results its checks expect.
//
// lifeline-demo serves it with -everything, so the suite can be run against
// lifeline's transport:
//
//	go run ./cmd/lifeline-demo -everything -addr 127.0.0.1:18111
//	conformance server --url http://127.0.0.1:18111/mcp
//
// Tools that talk back to the client (logging, progress, sampling,
// elicitation) send on the request's own response stream, through the
// context mcp-go hands the handler. The test_input_required_result_* tools
// and prompt ask the 2026-07-28 way instead (SEP-2322): an input_required
// result, answered by the client's retry; mcp-go turns their questions into
// server-initiated requests for clients of earlier versions. Nothing here
// keeps state between requests except what mcp-go and the transport keep
// per session (the log level, resource subscriptions) and the key, made
// when the server is built, that signs the requestStates clients carry
// between rounds.
package everything

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Name and Version identify the server in its initialize response.
const (
	Name    = "lifeline-everything"
	Version = "0.1.0"
)

// NewServer returns a new MCP server with the whole conformance contract
// registered. Each call returns an independent server.
func NewServer() *server.MCPServer {
	s := server.NewMCPServer(Name, Version,
		server.WithToolCapabilities(true),
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithPromptCompletionProvider(promptCompletions{}),
		server.WithInputSchemaValidation(),
	)
	m := newMedia()
	addContentTools(s, m)
	addNotifyingTools(s)
	addClientRequestTools(s)
	addStatelessTools(s)
	addInputRequiredTools(s)
	addResources(s, m)
	addPrompts(s, m)
	return s
}

// newTool declares a tool of this server with its description and
// annotations.
func newTool(name, description string, opts ...mcp.ToolOption) mcp.Tool {
	opts = append([]mcp.ToolOption{
		mcp.WithDescription(description),
		mcp.WithToolAnnotation(annotations()),
	}, opts...)
	return mcp.NewTool(name, opts...)
}

// annotations describes every tool of this server: none changes anything
// or reaches beyond the server and its client.
func annotations() mcp.ToolAnnotation {
	return mcp.ToolAnnotation{
		ReadOnlyHint:    mcp.ToBoolPtr(true),
		DestructiveHint: mcp.ToBoolPtr(false),
		IdempotentHint:  mcp.ToBoolPtr(false),
		OpenWorldHint:   mcp.ToBoolPtr(false),
	}
}
