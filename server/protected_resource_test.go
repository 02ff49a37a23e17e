package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/testutil"
)

var metadata = server.ProtectedResourceMetadataConfig{
	Resource:               "https://mcp.example.com/mcp",
	AuthorizationServers:   []string{"https://auth.example.com"},
	ScopesSupported:        []string{"mcp:tools"},
	BearerMethodsSupported: []string{"header"},
	ResourceName:           "lifeline test",
}

// get sends method to url and returns the status, headers and body.
func get(t *testing.T, ctx context.Context, hc *http.Client, method, url string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// stockBody is what mcp-go's own handler serves for cfg.
func stockBody(t *testing.T, cfg server.ProtectedResourceMetadataConfig) []byte {
	rec := httptest.NewRecorder()
	mcpserver.NewProtectedResourceMetadataHandler(cfg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return bytes.TrimSpace(rec.Body.Bytes())
}

// expectMetadata checks that GET url serves cfg as stock does, HEAD the
// same headers without a body, OPTIONS 204 and POST 405.
func expectMetadata(t *testing.T, ctx context.Context, hc *http.Client, url string, cfg server.ProtectedResourceMetadataConfig) {
	t.Helper()
	status, h, body := get(t, ctx, hc, http.MethodGet, url)
	if status != http.StatusOK || h.Get("Content-Type") != "application/json" || h.Get("Cache-Control") != "no-store" ||
		h.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("GET %s: status %d, headers %v", url, status, h)
	}
	if want := stockBody(t, cfg); !bytes.Equal(bytes.TrimSpace(body), want) {
		t.Fatalf("GET %s: body %s, want mcp-go's %s", url, body, want)
	}
	var got server.ProtectedResourceMetadataConfig
	if err := json.Unmarshal(body, &got); err != nil || got.Resource != cfg.Resource ||
		!slices.Equal(got.AuthorizationServers, cfg.AuthorizationServers) {
		t.Fatalf("GET %s: decoded %+v (%v)", url, got, err)
	}
	if status, h, body := get(t, ctx, hc, http.MethodHead, url); status != http.StatusOK || len(body) != 0 ||
		h.Get("Content-Type") != "application/json" {
		t.Fatalf("HEAD %s: status %d, %d bytes", url, status, len(body))
	}
	if status, _, _ := get(t, ctx, hc, http.MethodOptions, url); status != http.StatusNoContent {
		t.Fatalf("OPTIONS %s: status %d, want 204", url, status)
	}
	status, h, body = get(t, ctx, hc, http.MethodPost, url)
	if status != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD, OPTIONS" || !json.Valid(body) ||
		!strings.Contains(string(body), "POST not allowed") {
		t.Fatalf("POST %s: status %d, Allow %q, body %s", url, status, h.Get("Allow"), body)
	}
}

// WithProtectedResourceMetadata serves the metadata on Start's mux at
// the path-suffixed well-known path and at the bare one, as mcp-go's
// handler serves it, beside a working endpoint.
func TestWithProtectedResourceMetadataOnStartsMux(t *testing.T) {
	srv := newServer(t, server.WithProtectedResourceMetadata(metadata))
	base, _ := serve(t, srv)
	ctx := testutil.Context(t, wait)
	hc := httpClient(t)
	for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		expectMetadata(t, ctx, hc, base+p, metadata)
	}
	if status, _, _ := get(t, ctx, hc, http.MethodGet, base+"/.well-known/oauth-protected-resource/other"); status != http.StatusNotFound {
		t.Fatalf("another resource's metadata path: status %d, want 404", status)
	}
	if _, err := rawClient(t, base+server.DefaultEndpointPath).Initialize(ctx); err != nil {
		t.Fatalf("the endpoint beside the metadata: %v", err)
	}
}

// Used as an http.Handler, the Server serves the metadata at its paths
// too (mcp-go's ServeHTTP does), and everything else as the endpoint.
func TestWithProtectedResourceMetadataOnServeHTTP(t *testing.T) {
	srv := newServer(t, server.WithProtectedResourceMetadata(metadata))
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ctx := testutil.Context(t, wait)
	hc := httpClient(t)
	expectMetadata(t, ctx, hc, ts.URL+"/.well-known/oauth-protected-resource/mcp", metadata)
	expectMetadata(t, ctx, hc, ts.URL+"/.well-known/oauth-protected-resource", metadata)
	if _, err := rawClient(t, ts.URL+"/anything").Initialize(ctx); err != nil {
		t.Fatalf("the endpoint: %v", err)
	}
}

// A resource without a path has its metadata at the bare path only;
// without the option nothing is served there.
func TestProtectedResourceMetadataPaths(t *testing.T) {
	ctx := testutil.Context(t, wait)
	hc := httpClient(t)
	root := server.ProtectedResourceMetadataConfig{Resource: "https://mcp.example.com/"}
	base, _ := serve(t, newServer(t, server.WithProtectedResourceMetadata(root)))
	expectMetadata(t, ctx, hc, base+"/.well-known/oauth-protected-resource", root)
	if status, _, _ := get(t, ctx, hc, http.MethodGet, base+"/.well-known/oauth-protected-resource/mcp"); status != http.StatusNotFound {
		t.Fatalf("path-suffixed path of a resource without a path: status %d, want 404", status)
	}
	base, _ = serve(t, newServer(t))
	if status, _, _ := get(t, ctx, hc, http.MethodGet, base+"/.well-known/oauth-protected-resource"); status != http.StatusNotFound {
		t.Fatalf("without the option: status %d, want 404", status)
	}

	for _, tc := range []struct{ resource, path, url string }{
		{"https://mcp.example.com/mcp", "/.well-known/oauth-protected-resource/mcp", "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"},
		{"https://mcp.example.com:8443/a/b/", "/.well-known/oauth-protected-resource/a/b", "https://mcp.example.com:8443/.well-known/oauth-protected-resource/a/b"},
		{"http://127.0.0.1:8080", "/.well-known/oauth-protected-resource", "http://127.0.0.1:8080/.well-known/oauth-protected-resource"},
		{"/mcp", "/.well-known/oauth-protected-resource", ""},
		{"", "/.well-known/oauth-protected-resource", ""},
		{"mcp.example.com", "/.well-known/oauth-protected-resource", ""},
	} {
		if got := server.ProtectedResourceMetadataPath(tc.resource); got != tc.path {
			t.Errorf("ProtectedResourceMetadataPath(%q) = %q, want %q", tc.resource, got, tc.path)
		}
		if got := server.ProtectedResourceMetadataURL(tc.resource); got != tc.url {
			t.Errorf("ProtectedResourceMetadataURL(%q) = %q, want %q", tc.resource, got, tc.url)
		}
	}
}

// A health path on a metadata path is refused with a clear error instead
// of a ServeMux panic.
func TestWithProtectedResourceMetadataRefusesAHealthPathClash(t *testing.T) {
	srv := newServer(t, server.WithProtectedResourceMetadata(metadata),
		server.WithHealthPaths("/.well-known/oauth-protected-resource", "/livez"))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		if err == nil || !strings.Contains(err.Error(), "protected-resource metadata") {
			t.Fatalf("Serve = %v, want an error naming the metadata", err)
		}
	case <-time.After(wait):
		l.Close()
		<-served
		t.Fatalf("Serve was still serving after %v, want it to refuse the clash at once", wait)
	}
}
