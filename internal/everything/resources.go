package everything

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// URIs of the resources, and the resource template.
const (
	ResourceStaticText   = "test://static-text"
	ResourceStaticBinary = "test://static-binary"
	ResourceWatched      = "test://watched-resource"
	ResourceTemplate     = "test://template/{id}/data"
)

// StaticText is the text of test://static-text.
const StaticText = "This is the content of the static text resource."

// addResources registers the static resources, the template and the
// watched resource.
//
// Subscriptions need no code here: with the subscribe capability on, mcp-go
// answers resources/subscribe and resources/unsubscribe itself and records
// them on the session (lifeline's sessions implement
// server.SessionWithResourceSubscriptions). Nothing in this server changes
// test://watched-resource, so no notifications/resources/updated is sent.
func addResources(s *server.MCPServer, m media) {
	s.AddResource(mcp.NewResource(ResourceStaticText, "Static text",
		mcp.WithResourceDescription("A text resource that never changes."),
		mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI: ResourceStaticText, MIMEType: "text/plain", Text: StaticText,
			}}, nil
		})
	s.AddResource(mcp.NewResource(ResourceStaticBinary, "Static binary",
		mcp.WithResourceDescription("A binary resource that never changes: a 1x1 PNG."),
		mcp.WithMIMEType(pngMIME)),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{
				URI: ResourceStaticBinary, MIMEType: pngMIME, Blob: m.png,
			}}, nil
		})
	s.AddResource(mcp.NewResource(ResourceWatched, "Watched",
		mcp.WithResourceDescription("A text resource clients may subscribe to."),
		mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI: ResourceWatched, MIMEType: "text/plain", Text: "The watched resource, unchanged since the server started.",
			}}, nil
		})
	s.AddResourceTemplate(mcp.NewResourceTemplate(ResourceTemplate, "Data by id",
		mcp.WithTemplateDescription("A JSON document for any id, naming the id it was read with."),
		mcp.WithTemplateMIMEType("application/json")),
		readTemplate)
}

// readTemplate answers a read of test://template/{id}/data with a JSON
// document that carries the id.
func readTemplate(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	id, ok := templateArg(req.Params.Arguments["id"])
	if !ok {
		return nil, fmt.Errorf("%s: no id in %q", ResourceTemplate, req.Params.URI)
	}
	b, err := json.Marshal(map[string]any{
		"id":           id,
		"templateTest": true,
		"data":         "Data for ID: " + id,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", ResourceTemplate, err)
	}
	return []mcp.ResourceContents{mcp.TextResourceContents{
		URI: req.Params.URI, MIMEType: "application/json", Text: string(b),
	}}, nil
}

// templateArg returns a template variable's value: mcp-go hands over the
// values the URI template matched, a []string for each variable.
func templateArg(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, v != ""
	case []string:
		if len(v) == 1 && v[0] != "" {
			return v[0], true
		}
	}
	return "", false
}
