package everything

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Names of the tools whose results are plain content.
const (
	ToolSimpleText       = "test_simple_text"
	ToolImageContent     = "test_image_content"
	ToolAudioContent     = "test_audio_content"
	ToolEmbeddedResource = "test_embedded_resource"
	ToolMultipleContent  = "test_multiple_content_types"
	ToolErrorHandling    = "test_error_handling"
	ToolJSONSchema202012 = "json_schema_2020_12_tool"
)

// Texts the content tools return, as the suite's checks describe them.
const (
	SimpleText        = "This is a simple text response for testing."
	EmbeddedText      = "This is an embedded resource content."
	MultipleLeadText  = "Multiple content types test:"
	ErrorHandlingText = "This tool intentionally returns an error for testing"
)

// JSONSchemaDraft202012 is the $schema of json_schema_2020_12_tool's input
// schema.
const JSONSchemaDraft202012 = "https://json-schema.org/draft/2020-12/schema"

// jsonSchema202012Input is json_schema_2020_12_tool's input schema. It is
// served as raw JSON so that the 2020-12 keywords ($schema, $defs, $ref,
// $anchor, additionalProperties, and the allOf/anyOf and if/then/else that
// SEP-2106 adds) reach the client exactly as written.
const jsonSchema202012Input = `{
	"$schema": "` + JSONSchemaDraft202012 + `",
	"type": "object",
	"$defs": {
		"address": {
			"$anchor": "addressDef",
			"type": "object",
			"properties": {
				"street": {"type": "string"},
				"city": {"type": "string"}
			}
		}
	},
	"properties": {
		"name": {"type": "string"},
		"address": {"$ref": "#/$defs/address"},
		"contactMethod": {"type": "string", "enum": ["phone", "email"]},
		"phone": {"type": "string"},
		"email": {"type": "string"}
	},
	"allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
	"if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
	"then": {"required": ["phone"]},
	"else": {"required": ["email"]},
	"additionalProperties": false
}`

// addContentTools registers the tools that answer at once with fixed
// content of each kind MCP defines, an error result, and the JSON Schema
// 2020-12 tool.
func addContentTools(s *server.MCPServer, m media) {
	s.AddTool(newTool(ToolSimpleText, "Returns one text content block."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(SimpleText), nil
		})
	s.AddTool(newTool(ToolImageContent, "Returns one image content block: a 1x1 PNG."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(m.png, pngMIME)}}, nil
		})
	s.AddTool(newTool(ToolAudioContent, "Returns one audio content block: a tiny WAV file."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewAudioContent(m.wav, wavMIME)}}, nil
		})
	s.AddTool(newTool(ToolEmbeddedResource, "Returns one embedded text resource."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{embeddedText("test://embedded-resource", EmbeddedText)}}, nil
		})
	s.AddTool(newTool(ToolMultipleContent, "Returns text, an image and an embedded JSON resource in one result."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent(MultipleLeadText),
				mcp.NewImageContent(m.png, pngMIME),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{
					URI:      "test://mixed-content-resource",
					MIMEType: "application/json",
					Text:     `{"test":"data","value":123}`,
				}),
			}}, nil
		})
	s.AddTool(newTool(ToolErrorHandling, "Always fails: returns a tool error result (isError: true)."),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError(ErrorHandlingText), nil
		})

	schemaTool := mcp.NewToolWithRawSchema(ToolJSONSchema202012,
		"Declares its input with JSON Schema 2020-12 keywords ($schema, $defs, $ref, "+
			"additionalProperties: false) and echoes the arguments it was called with.",
		json.RawMessage(jsonSchema202012Input))
	schemaTool.Annotations = annotations()
	s.AddTool(schemaTool, echoArguments)
}

// embeddedText is an embedded text/plain resource.
func embeddedText(uri, text string) mcp.EmbeddedResource {
	return mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: text})
}

// echoArguments answers with the call's arguments encoded as JSON.
func echoArguments(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("arguments do not encode: %v", err)), nil
	}
	return mcp.NewToolResultText(fmt.Sprintf("%s called with %s", ToolJSONSchema202012, b)), nil
}
