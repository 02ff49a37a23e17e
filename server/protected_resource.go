package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"

	mcpserver "github.com/mark3labs/mcp-go/server"
)

// ProtectedResourceMetadataConfig is OAuth 2.0 protected-resource metadata
// (RFC 9728): mcp-go's type itself, so a stock configuration carries over
// unchanged. Resource, the resource's identifier (the endpoint's absolute
// URL, e.g. "https://mcp.example.com/mcp"), is required;
// AuthorizationServers is recommended; empty fields are left out.
type ProtectedResourceMetadataConfig = mcpserver.ProtectedResourceMetadataConfig

// WellKnownProtectedResourcePath is RFC 9728's well-known path,
// "/.well-known/oauth-protected-resource".
const WellKnownProtectedResourcePath = mcpserver.WellKnownProtectedResourcePath

// ProtectedResourceMetadataPath returns where RFC 9728 section 3.1 puts the
// metadata of resource: the well-known path, followed by resource's path
// when it has one ("https://h/mcp" gives
// "/.well-known/oauth-protected-resource/mcp"). A resource that is empty or
// not an absolute URL gives the bare well-known path. It is mcp-go's
// function.
func ProtectedResourceMetadataPath(resource string) string {
	return mcpserver.ProtectedResourceMetadataPath(resource)
}

// ProtectedResourceMetadataURL returns the absolute URL of resource's
// metadata, for the resource_metadata parameter of a 401's challenge
// (auth.RequireBearerTokenOptions.ResourceMetadataURL): resource's scheme
// and host with ProtectedResourceMetadataPath(resource). It returns "" when
// resource is not an absolute URL.
func ProtectedResourceMetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: ProtectedResourceMetadataPath(resource)}).String()
}

// protectedResourceMetadataPaths returns the paths the metadata of
// resource is served on: ProtectedResourceMetadataPath(resource) and, when
// that is path-suffixed, the bare well-known path too, which clients that
// predate path-suffixed discovery (and the MCP authorization spec's
// fallback) fetch.
func protectedResourceMetadataPaths(resource string) []string {
	p := ProtectedResourceMetadataPath(resource)
	if p == WellKnownProtectedResourcePath {
		return []string{p}
	}
	return []string{p, WellKnownProtectedResourcePath}
}

// WithProtectedResourceMetadata serves cfg as RFC 9728 metadata, as
// mcp-go's option of the same name does: on ServeHTTP, for a request to
// ProtectedResourceMetadataPath(cfg.Resource), and on the mux Start and
// Serve build, beside the endpoint. Unlike mcp-go, when that path is
// path-suffixed the bare well-known path serves the metadata too. The
// metadata is public: keep bearer-token middleware (package auth) off
// these paths. With WithStreamableHTTPServer's server carrying a Handler
// of its own, mount NewProtectedResourceMetadataHandler(cfg) on it
// instead.
func WithProtectedResourceMetadata(cfg ProtectedResourceMetadataConfig) Option {
	return func(s *Server) {
		s.metadata = NewProtectedResourceMetadataHandler(cfg)
		s.metadataPaths = protectedResourceMetadataPaths(cfg.Resource)
	}
}

// isMetadataPath reports whether p is a path the metadata is served on.
func (s *Server) isMetadataPath(p string) bool {
	return s.metadata != nil && slices.Contains(s.metadataPaths, p)
}

// checkMetadataPaths reports a health path that is one of the paths
// WithProtectedResourceMetadata serves the metadata on.
func checkMetadataPaths(metadata []string, ready, live string) error {
	for _, p := range []string{ready, live} {
		if p != "" && slices.Contains(metadata, p) {
			return fmt.Errorf("lifeline: WithHealthPaths: %q is where the protected-resource metadata is served", p)
		}
	}
	return nil
}

// NewProtectedResourceMetadataHandler returns a handler serving cfg as
// JSON, as mcp-go's function of the same name does: GET and HEAD get 200
// with Content-Type application/json and Cache-Control no-store, OPTIONS
// (a CORS preflight) 204, and every answer carries
// Access-Control-Allow-Origin "*", since the metadata is public and a
// browser client on another origin must read it. Other methods get 405
// with Allow and a JSON body saying so (mcp-go: a text body).
func NewProtectedResourceMetadataHandler(cfg ProtectedResourceMetadataConfig) http.Handler {
	body, err := json.Marshal(cfg)
	if err != nil {
		// The type holds strings, slices of strings and *bool only.
		panic("lifeline: protected-resource metadata does not encode: " + err.Error())
	}
	return metadataHandler(append(body, '\n'))
}

type metadataHandler []byte

func (body metadataHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, MCP-Protocol-Version")
	switch r.Method {
	case http.MethodOptions:
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodGet, http.MethodHead:
	default:
		h.Set("Allow", "GET, HEAD, OPTIONS")
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusMethodNotAllowed)
		msg, _ := json.Marshal(map[string]string{"error": "method " + r.Method + " not allowed: the protected-resource metadata is read with GET"})
		_, _ = w.Write(append(msg, '\n'))
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}
