package auth_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/auth"
	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/server"
)

// A hosted server: the MCP endpoint behind a bearer token, the metadata
// served without one. Tools read auth.TokenInfoFromContext(ctx).
func ExampleRequireBearerToken() {
	const resource = "https://mcp.example.com/mcp"
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "s3cret" { // a real verifier checks a JWT or asks the authorization server
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "alice", Expiration: time.Now().Add(time.Hour)}, nil
	}
	srv := server.New(demotools.NewServer("example", "1"),
		server.WithProtectedResourceMetadata(server.ProtectedResourceMetadataConfig{
			Resource:             resource,
			AuthorizationServers: []string{"https://auth.example.com"},
		}))
	defer srv.Shutdown(context.Background())

	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: server.ProtectedResourceMetadataURL(resource),
	})(srv))
	mux.Handle(server.ProtectedResourceMetadataPath(resource), srv) // srv serves its metadata paths

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{}`)))
	fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"))
	rec = httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/.well-known/oauth-protected-resource/mcp", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// 401 Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
	// 200 {"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"]}
}
