package streamable

import "fmt"

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
// session, a URI matching one of the session's resource templates, or one
// Config.ResourceExists accepts.
func (s *session) SubscribeToResourceErr(uri string) error {
	if len(uri) <= MaxSubscriptionURIBytes && !s.resourceExists(uri) {
		return fmt.Errorf("resource %q not found", uri)
	}
	return s.addSubscription(uri)
}

// resourceExists reports whether uri names a resource this session can
// read. mcp-go does not expose the MCPServer's resource templates, so a URI
// served by one of those exists only if Config.ResourceExists says so.
func (s *session) resourceExists(uri string) bool {
	s.mcpState.mu.RLock()
	_, ok := s.resources[uri]
	if !ok {
		for _, t := range s.templates {
			if t.Template.URITemplate != nil && t.Template.URITemplate.Regexp().MatchString(uri) {
				ok = true
				break
			}
		}
	}
	s.mcpState.mu.RUnlock()
	if ok {
		return true
	}
	if _, ok := s.h.mcp.ListResources()[uri]; ok {
		return true
	}
	return s.h.cfg.ResourceExists != nil && s.h.cfg.ResourceExists(uri)
}
