package server

import (
	"context"
	"net/http"
	"slices"

	"github.com/google/uuid"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// The rest of mcp-go's StreamableHTTPServer surface (issue 14): protocol
// versions, per-request session ids, CloseSessions and Handle.

// WithStreamableHTTPProtocolVersions restricts the protocol versions served
// (see streamable.Config.ProtocolVersions), as mcp-go's option of the same
// name does for server/discover and 2026-07-28 requests; lifeline applies
// it to sessions too. Passing none restores the default: every version
// mcp-go implements.
func WithStreamableHTTPProtocolVersions(versions ...string) Option {
	return func(s *Server) {
		if len(versions) == 0 {
			s.cfg.ProtocolVersions = nil
			return
		}
		s.cfg.ProtocolVersions = slices.Clone(versions)
	}
}

// WithSessionIdManagerResolver takes the id of each session from the
// Generate of the manager resolver picks for its initialize request (see
// streamable.Config.NewSessionIDFor). As with WithSessionIdManager,
// lifeline keeps session validity itself, so Validate and Terminate are
// never called, and a nil resolver is ignored (mcp-go: switches to
// stateless); a nil manager from the resolver means the default ids. Of
// this option and WithSessionIdManager, the last given wins, as in mcp-go.
func WithSessionIdManagerResolver(resolver mcpserver.SessionIdManagerResolver) Option {
	return func(s *Server) {
		if resolver == nil {
			return
		}
		s.cfg.NewSessionID = nil
		s.cfg.NewSessionIDFor = func(r *http.Request) string {
			m := resolver.ResolveSessionIdManager(r)
			if m == nil {
				return uuid.NewString() // the default ids: UUIDv4 from crypto/rand
			}
			return m.Generate()
		}
	}
}

// SupportsProtocolVersion reports whether the transport serves protocol
// version v. It implements mcp-go's server.ProtocolVersionSupporter.
func (s *Server) SupportsProtocolVersion(v string) bool { return s.handler.SupportsProtocolVersion(v) }

// CloseSessions ends every session this Server holds, as DELETE does, and
// keeps serving (see streamable.Handler.CloseSessions). Errors are logged.
func (s *Server) CloseSessions(ctx context.Context) { _ = s.handler.CloseSessions(ctx) }

// Handle serves one request given in mcp-go's transport-agnostic form, for
// HTTP frameworks other than net/http (see streamable.Handler.Handle).
func (s *Server) Handle(w mcpserver.HTTPResponseWriter, r *mcpserver.HTTPRequest) {
	s.handler.Handle(w, r)
}

var _ mcpserver.ProtocolVersionSupporter = (*Server)(nil)
