package streamable

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// Bounds on a session's resource subscriptions (resources/subscribe). A
// subscribe beyond them is answered with an error naming the bound.
const (
	// MaxSubscriptionURIBytes is the longest resource URI a session may
	// subscribe to.
	MaxSubscriptionURIBytes = 4096
	// MaxSubscriptionsPerSession is how many resources one session may be
	// subscribed to at once.
	MaxSubscriptionsPerSession = 1024
)

// SubscribeToResourceErr implements server.SessionWithResourceSubscriptionsErr:
// mcp-go calls it for resources/subscribe and answers its error to the
// client (code RESOURCE_NOT_FOUND). The URI must be within
// MaxSubscriptionURIBytes, the session within MaxSubscriptionsPerSession,
// and the resource must exist: a resource of the MCPServer or of the
// session, or a URI matching one of their resource templates.
func (s *session) SubscribeToResourceErr(uri string) error {
	if len(uri) <= MaxSubscriptionURIBytes && !s.resourceExists(uri) {
		return fmt.Errorf("resource %q not found", uri)
	}
	return s.addSubscription(uri)
}

// resourceExists reports whether uri names a resource this session can
// read.
func (s *session) resourceExists(uri string) bool {
	s.mcpState.mu.RLock()
	_, ok := s.resources[uri]
	s.mcpState.mu.RUnlock()
	if ok {
		return true
	}
	if _, ok := s.h.mcp.ListResources()[uri]; ok {
		return true
	}
	return s.templateMatches(uri)
}

// maxTemplatePages bounds the pages of resources/templates/list that
// templateMatches reads.
const maxTemplatePages = 100

// templateMatches reports whether uri matches a resource template of the
// MCPServer or of the session. mcp-go exports the server's templates only
// through resources/templates/list, so that is what it asks (the
// MCPServer's hooks for that method see it), page by page.
func (s *session) templateMatches(uri string) bool {
	ctx := s.h.mcp.WithContext(context.Background(), s)
	// An id no client uses: mcp-go files each request it runs under its
	// session and id (to cancel it), and a client's request with the same
	// id would lose its place.
	id := mcp.NewRequestId("lifeline-template-check-" + rand.Text())
	cursor := mcp.Cursor("")
	for range maxTemplatePages {
		msg, err := json.Marshal(mcp.JSONRPCRequest{
			JSONRPC: mcp.JSONRPC_VERSION,
			ID:      id,
			Request: mcp.Request{Method: string(mcp.MethodResourcesTemplatesList)},
			Params:  mcp.PaginatedParams{Cursor: cursor},
		})
		if err != nil {
			return false
		}
		resp, ok := s.h.mcp.HandleMessage(ctx, msg).(mcp.JSONRPCResponse)
		if !ok {
			return false
		}
		res, ok := resp.Result.(mcp.ListResourceTemplatesResult)
		if !ok {
			return false
		}
		for _, t := range res.ResourceTemplates {
			if t.URITemplate != nil && t.URITemplate.Regexp().MatchString(uri) {
				return true
			}
		}
		if res.NextCursor == "" {
			return false
		}
		cursor = res.NextCursor
	}
	return false
}
