package streamable

import (
	"context"
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

// templateMatches reports whether uri matches a resource template of the
// MCPServer or of the session. mcp-go exports the server's templates only
// through resources/templates/list, so that is what it asks (listPages).
func (s *session) templateMatches(uri string) bool {
	ctx := s.h.mcp.WithContext(context.Background(), s)
	return s.h.listPages(ctx, mcp.MethodResourcesTemplatesList, func(result any) (bool, mcp.Cursor) {
		res, ok := result.(mcp.ListResourceTemplatesResult)
		if !ok {
			return false, ""
		}
		for _, t := range res.ResourceTemplates {
			if t.URITemplate != nil && t.URITemplate.Regexp().MatchString(uri) {
				return true, ""
			}
		}
		return false, res.NextCursor
	})
}
