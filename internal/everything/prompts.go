package everything

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Names of the prompts.
const (
	PromptSimple           = "test_simple_prompt"
	PromptWithArguments    = "test_prompt_with_arguments"
	PromptEmbeddedResource = "test_prompt_with_embedded_resource"
	PromptWithImage        = "test_prompt_with_image"
)

// SimplePromptText is the one message of test_simple_prompt.
const SimplePromptText = "This is a simple prompt for testing."

// addPrompts registers the prompts: one plain, one with arguments
// substituted into its text, one embedding a resource and one carrying an
// image.
func addPrompts(s *server.MCPServer, m media) {
	s.AddPrompt(mcp.NewPrompt(PromptSimple,
		mcp.WithPromptTitle("Simple prompt"),
		mcp.WithPromptDescription("A prompt without arguments: one text message.")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("A simple prompt", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(SimplePromptText)),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt(PromptWithArguments,
		mcp.WithPromptTitle("Prompt with arguments"),
		mcp.WithPromptDescription("A prompt whose text quotes its two arguments (arg1 and arg2 complete)."),
		mcp.WithArgument("arg1", mcp.RequiredArgument(), mcp.ArgumentDescription("first argument")),
		mcp.WithArgument("arg2", mcp.RequiredArgument(), mcp.ArgumentDescription("second argument"))),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := req.Params.Arguments
			return mcp.NewGetPromptResult("A prompt with arguments", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(
					fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt(PromptEmbeddedResource,
		mcp.WithPromptTitle("Prompt with an embedded resource"),
		mcp.WithPromptDescription("A prompt that embeds a text resource under the URI it is given."),
		mcp.WithArgument("resourceUri", mcp.RequiredArgument(), mcp.ArgumentDescription("URI of the embedded resource"))),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			uri := req.Params.Arguments["resourceUri"]
			if uri == "" {
				return nil, fmt.Errorf("%s: the resourceUri argument is required", PromptEmbeddedResource)
			}
			return mcp.NewGetPromptResult("A prompt with an embedded resource", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, embeddedText(uri, "Embedded resource content for testing.")),
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Please process the embedded resource above.")),
			}), nil
		})
	s.AddPrompt(mcp.NewPrompt(PromptWithImage,
		mcp.WithPromptTitle("Prompt with an image"),
		mcp.WithPromptDescription("A prompt carrying an image (a 1x1 PNG) and a text message.")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult("A prompt with an image", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewImageContent(m.png, pngMIME)),
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Please analyze the image above.")),
			}), nil
		})
}
