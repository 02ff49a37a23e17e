// Package auth is bearer-token authorization for an MCP server, in the
// shape of the MCP Go SDK's auth package: RequireBearerToken is net/http
// middleware that verifies "Authorization: Bearer" through a TokenVerifier
// the application supplies, answers a request without a valid token with
// 401 and a WWW-Authenticate challenge that points at the server's RFC 9728
// protected-resource metadata (served by server.WithProtectedResourceMetadata
// or server.NewProtectedResourceMetadataHandler), and one whose token lacks a
// required scope with 403 insufficient_scope. A request that passes carries
// the verified TokenInfo in its context, where tools, resources, prompts and
// hooks read it with TokenInfoFromContext: lifeline derives the context of
// every message it hands the MCPServer from the HTTP request's.
//
// The package depends on net/http only, so it can guard any handler; mount
// it around the MCP endpoint, never around the metadata, which a client
// must read without a token:
//
//	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
//		ResourceMetadataURL: server.ProtectedResourceMetadataURL(resource),
//	})(srv))
package auth
