package streamable

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcpState is the per-session state mcp-go keeps on a ClientSession: log
// level, client info, negotiated version, session-scoped tools, resources
// and templates, and resource subscriptions. It is safe for concurrent use.
type mcpState struct {
	mu          sync.RWMutex
	initialized bool
	logLevel    mcp.LoggingLevel
	// clientInfo is made by the first SetClientInfo: mcp-go sets
	// capabilities on every 2026-07-28 request's session, its client's
	// info only when the request's _meta holds it, and the 100 bytes of an
	// mcp.Implementation would not leave a session room to fit in 512
	// (TestSessionFitsASmallObject).
	clientInfo      *mcp.Implementation
	clientCaps      mcp.ClientCapabilities
	protocolVersion string
	tools           map[string]server.ServerTool
	resources       map[string]server.ServerResource
	templates       map[string]server.ServerResourceTemplate
	subscriptions   map[string]struct{}
}

// Initialize implements server.ClientSession.
func (s *mcpState) Initialize() { s.mu.Lock(); s.initialized = true; s.mu.Unlock() }

// Initialized implements server.ClientSession.
func (s *mcpState) Initialized() bool {
	s.mu.RLock()
	ok := s.initialized
	s.mu.RUnlock()
	return ok
}

// SetLogLevel implements server.SessionWithLogging.
func (s *mcpState) SetLogLevel(l mcp.LoggingLevel) { s.mu.Lock(); s.logLevel = l; s.mu.Unlock() }

// GetLogLevel implements server.SessionWithLogging; the default is error,
// as in mcp-go's own transports.
func (s *mcpState) GetLogLevel() mcp.LoggingLevel {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.logLevel == "" {
		return mcp.LoggingLevelError
	}
	return s.logLevel
}

// GetClientInfo implements server.SessionWithClientInfo.
func (s *mcpState) GetClientInfo() mcp.Implementation {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.clientInfo == nil {
		return mcp.Implementation{}
	}
	return *s.clientInfo
}

// SetClientInfo implements server.SessionWithClientInfo.
func (s *mcpState) SetClientInfo(i mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clientInfo == nil {
		s.clientInfo = new(mcp.Implementation)
	}
	*s.clientInfo = i
}

// GetClientCapabilities implements server.SessionWithClientInfo.
func (s *mcpState) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.clientCaps
}

// SetClientCapabilities implements server.SessionWithClientInfo.
func (s *mcpState) SetClientCapabilities(c mcp.ClientCapabilities) {
	s.mu.Lock()
	s.clientCaps = c
	s.mu.Unlock()
}

// ProtocolVersion implements server.SessionWithProtocolVersion.
func (s *mcpState) ProtocolVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.protocolVersion
}

// SetProtocolVersion records the version negotiated by initialize.
func (s *mcpState) SetProtocolVersion(v string) { s.mu.Lock(); s.protocolVersion = v; s.mu.Unlock() }

// GetSessionTools implements server.SessionWithTools.
func (s *mcpState) GetSessionTools() map[string]server.ServerTool {
	s.mu.RLock()
	t := maps.Clone(s.tools)
	s.mu.RUnlock()
	return t
}

// SetSessionTools implements server.SessionWithTools.
func (s *mcpState) SetSessionTools(t map[string]server.ServerTool) {
	s.mu.Lock()
	s.tools = maps.Clone(t)
	s.mu.Unlock()
}

// GetSessionResources implements server.SessionWithResources.
func (s *mcpState) GetSessionResources() map[string]server.ServerResource {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.resources)
}

// SetSessionResources implements server.SessionWithResources.
func (s *mcpState) SetSessionResources(r map[string]server.ServerResource) {
	s.mu.Lock()
	s.resources = maps.Clone(r)
	s.mu.Unlock()
}

// GetSessionResourceTemplates implements server.SessionWithResourceTemplates.
func (s *mcpState) GetSessionResourceTemplates() map[string]server.ServerResourceTemplate {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.templates)
}

// SetSessionResourceTemplates implements server.SessionWithResourceTemplates.
func (s *mcpState) SetSessionResourceTemplates(t map[string]server.ServerResourceTemplate) {
	s.mu.Lock()
	s.templates = maps.Clone(t)
	s.mu.Unlock()
}

// SubscribeToResource implements server.SessionWithResourceSubscriptions.
// mcp-go calls the session's SubscribeToResourceErr instead; a URI beyond
// the bounds it checks is not recorded.
func (s *mcpState) SubscribeToResource(uri string) { _ = s.addSubscription(uri) }

// addSubscription records a subscription within MaxSubscriptionURIBytes
// and MaxSubscriptionsPerSession.
func (s *mcpState) addSubscription(uri string) error {
	if len(uri) > MaxSubscriptionURIBytes {
		return fmt.Errorf("resource URI is %d bytes long; at most %d are accepted", len(uri), MaxSubscriptionURIBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.subscriptions[uri]; ok {
		return nil
	}
	if len(s.subscriptions) >= MaxSubscriptionsPerSession {
		return fmt.Errorf("the session already has %d resource subscriptions, the most allowed; unsubscribe from one first", MaxSubscriptionsPerSession)
	}
	if s.subscriptions == nil {
		s.subscriptions = make(map[string]struct{})
	}
	s.subscriptions[uri] = struct{}{}
	return nil
}

// UnsubscribeFromResource implements server.SessionWithResourceSubscriptions.
func (s *mcpState) UnsubscribeFromResource(uri string) {
	s.mu.Lock()
	delete(s.subscriptions, uri)
	s.mu.Unlock()
}

// SubscribedResources implements server.SessionWithResourceSubscriptions.
func (s *mcpState) SubscribedResources() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.subscriptions))
}

// IsSubscribedToResource implements server.SessionWithResourceSubscriptions.
func (s *mcpState) IsSubscribedToResource(uri string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	_, ok := s.subscriptions[uri]
	return ok
}
