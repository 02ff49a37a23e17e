package streamable_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// edgeRequest sends an initialize with the given Host and Origin.
func edgeRequest(t *testing.T, r *rig, host, origin string) *testutil.Response {
	t.Helper()
	c := r.client()
	req, err := c.NewRequest(testutil.Context(t, wait), http.MethodPost, []byte(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestDNSRebindingProtection(t *testing.T) {
	r := newRig(t, streamable.Config{})
	good := r.session()
	for _, host := range []string{"evil.example.com", "evil.example.com:80", "10.1.2.3:8080"} {
		resp := edgeRequest(t, r, host, "")
		wantRPCError(t, "Host "+host, resp.Status, http.StatusForbidden, resp.Body, "DNS rebinding")
	}
	for _, host := range []string{"localhost", "LOCALHOST:1234", "127.0.0.1:9", "[::1]:9"} {
		resp := edgeRequest(t, r, host, "")
		wantStatus(t, "Host "+host, resp.Status, http.StatusOK, resp.Body)
	}
	if resp, err := good.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"}); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("session after refused requests: %v %+v", err, resp)
	}
}

func TestDNSRebindingProtectionCanBeDisabled(t *testing.T) {
	r := newRig(t, streamable.Config{DisableLocalhostProtection: true})
	resp := edgeRequest(t, r, "mcp.example.com", "")
	wantStatus(t, "public Host, protection off", resp.Status, http.StatusOK, resp.Body)
}

func TestOriginValidation(t *testing.T) {
	r := newRig(t, streamable.Config{AllowedOrigins: []string{"https://app.example"}})
	self := "http://" + r.ts.Listener.Addr().String()
	cases := []struct {
		origin string
		want   int
	}{
		{"http://evil.example.com", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"https://app.example.evil", http.StatusForbidden},
		{self, http.StatusOK},
		{"http://localhost:3000", http.StatusOK},
		{"https://app.example", http.StatusOK},
	}
	for _, tc := range cases {
		resp := edgeRequest(t, r, "", tc.origin)
		if tc.want == http.StatusForbidden {
			wantRPCError(t, "Origin "+tc.origin, resp.Status, tc.want, resp.Body, "Origin")
			continue
		}
		wantStatus(t, "Origin "+tc.origin, resp.Status, tc.want, resp.Body)
	}
	star := newRig(t, streamable.Config{AllowedOrigins: []string{"*"}})
	resp := edgeRequest(t, star, "", "http://anything.example")
	wantStatus(t, "Origin with *", resp.Status, http.StatusOK, resp.Body)
}

func TestCORSForAllowedOrigins(t *testing.T) {
	r := newRig(t, streamable.Config{AllowedOrigins: []string{"https://app.example"}, CORSAllowCredentials: true})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodOptions, r.ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent ||
		resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		resp.Header.Get("Access-Control-Allow-Credentials") != "true" ||
		resp.Header.Get("Access-Control-Allow-Methods") == "" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	post := edgeRequest(t, r, "", "https://app.example")
	wantStatus(t, "CORS initialize", post.Status, http.StatusOK, post.Body)
	if post.Header.Get("Access-Control-Allow-Origin") != "https://app.example" ||
		post.Header.Get("Access-Control-Expose-Headers") == "" {
		t.Fatalf("CORS headers missing: %v", post.Header)
	}
	other := edgeRequest(t, r, "", "http://localhost:5173")
	if other.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS headers for an origin not listed")
	}
}

// On a public listener, an Origin naming the request's own Host is no
// proof of anything (a rebinding attacker controls both): only listed
// origins pass. No socket needed: the listener address is what net/http
// puts in the request's context.
func TestOriginMatchingHostIsNotTrustedOnAPublicListener(t *testing.T) {
	r := newRig(t, streamable.Config{AllowedOrigins: []string{"https://app.example"}})
	public := &net.TCPAddr{IP: net.ParseIP("192.0.2.10"), Port: 443}
	serve := func(host, origin string) int {
		req := httptest.NewRequest(http.MethodPost, "https://"+host+"/mcp", strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, net.Addr(public)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", origin)
		rec := httptest.NewRecorder()
		r.h.ServeHTTP(rec, req)
		return rec.Code
	}
	if got := serve("attacker.example", "https://attacker.example"); got != http.StatusForbidden {
		t.Fatalf("same-host Origin on a public listener: %d, want 403", got)
	}
	if got := serve("mcp.example", "http://localhost:3000"); got != http.StatusForbidden {
		t.Fatalf("local Origin on a public listener: %d, want 403", got)
	}
	if got := serve("mcp.example", "https://app.example"); got != http.StatusOK {
		t.Fatalf("listed Origin on a public listener: %d, want 200", got)
	}
}

func TestCORSPreflightAllowsTheHeadersAsked(t *testing.T) {
	r := newRig(t, streamable.Config{AllowedOrigins: []string{"https://app.example"}})
	req, err := http.NewRequestWithContext(context.Background(), http.MethodOptions, r.ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type, mcp-method, mcp-name, x-tenant")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Access-Control-Allow-Headers"); !strings.Contains(got, "mcp-method") || !strings.Contains(got, "x-tenant") {
		t.Fatalf("Access-Control-Allow-Headers %q does not allow what the page asked", got)
	}
}
