package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// writeTokens writes a -tokens file and returns its path.
func writeTokens(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tokens.txt")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// challengeParam returns the value of a quoted auth-param of a challenge.
func challengeParam(challenge, name string) string {
	_, after, ok := strings.Cut(challenge, name+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, `"`)
	return v
}

// TestDemoOAuthFlow runs the demo with -tokens and goes through the
// discovery step of the MCP authorization spec with a plain HTTP client: a
// request without a token gets 401 and a challenge, the metadata is read
// from the challenge's URL, a request with the token is served, a bad
// token gets 401 invalid_token, and the health checks need no token.
func TestDemoOAuthFlow(t *testing.T) {
	logs := newLogBuffer(t)
	tokens := writeTokens(t, "# demo tokens\n\ntok-alice alice\n  tok-bob bob   # a trailing comment\n")
	addr, stop := startDemo(t, logs, "-addr", "127.0.0.1:0", "-tokens", tokens, "-auth-server", "https://issuer.example")
	endpoint := "http://" + addr + "/mcp"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	// 1. No token: 401 and a challenge naming the metadata.
	anon := rawClient(t, endpoint)
	resp, err := anon.Call(ctx, "initialize", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	challenge := resp.Header.Get("WWW-Authenticate")
	metadataURL := challengeParam(challenge, "resource_metadata")
	if resp.Status != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer ") || metadataURL == "" ||
		challengeParam(challenge, "error") != "" {
		t.Fatalf("no token: status %d, WWW-Authenticate %q; want 401 with resource_metadata and no error", resp.Status, challenge)
	}
	if want := "http://" + addr + "/.well-known/oauth-protected-resource/mcp"; metadataURL != want {
		t.Fatalf("resource_metadata %q, want %q", metadataURL, want)
	}

	// 2. The metadata, from the challenge's URL, without a token.
	hc := anon.HTTP
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metadataURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	mresp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
		BearerMethods        []string `json:"bearer_methods_supported"`
	}
	if mresp.StatusCode != http.StatusOK || json.Unmarshal(body, &meta) != nil || meta.Resource != endpoint ||
		len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != "https://issuer.example" {
		t.Fatalf("metadata: status %d, body %s; want resource %s and authorization server https://issuer.example", mresp.StatusCode, body, endpoint)
	}
	if status, text := getStatus(ctx, t, hc, "http://"+addr+"/.well-known/oauth-protected-resource"); status != http.StatusOK ||
		!strings.Contains(text, endpoint) {
		t.Fatalf("bare well-known path: status %d, body %s", status, text)
	}

	// 3. With the token: served, and DELETE without it changes nothing.
	alice := rawClient(t, endpoint)
	alice.Header = map[string]string{"Authorization": "Bearer tok-alice"}
	if _, err := alice.Initialize(ctx); err != nil {
		t.Fatalf("initialize with a token: %v", err)
	}
	if got := callOK(ctx, t, alice, "whoami", nil); got != "alice" {
		t.Fatalf("whoami: %q, want alice", got)
	}
	thief := rawClient(t, endpoint)
	thief.SessionID, thief.ProtocolVersion = alice.SessionID, alice.ProtocolVersion
	if resp, err := thief.Delete(ctx); err != nil || resp.Status != http.StatusUnauthorized {
		t.Fatalf("DELETE without a token: %v, status %v; want 401", err, resp)
	}
	callOK(ctx, t, alice, "echo", map[string]any{"text": "still here"})
	bob := rawClient(t, endpoint)
	bob.Header = map[string]string{"Authorization": "Bearer tok-bob"}
	if _, err := bob.Initialize(ctx); err != nil {
		t.Fatalf("the second token (trailing comment): %v", err)
	}
	if got := callOK(ctx, t, bob, "whoami", nil); got != "bob" {
		t.Fatalf("whoami: %q, want bob", got)
	}
	// Alice's session is bound to alice: bob's token on it gets 403, and
	// it serves alice as before.
	bobOnAlice := rawClient(t, endpoint)
	bobOnAlice.Header = map[string]string{"Authorization": "Bearer tok-bob"}
	bobOnAlice.SessionID, bobOnAlice.ProtocolVersion = alice.SessionID, alice.ProtocolVersion
	if resp, err := bobOnAlice.CallTool(ctx, "whoami", nil); err != nil || resp.Status != http.StatusForbidden {
		t.Fatalf("bob's token on alice's session: %v, %+v; want 403", err, resp)
	}
	if resp, err := bobOnAlice.Delete(ctx); err != nil || resp.Status != http.StatusForbidden {
		t.Fatalf("bob's DELETE of alice's session: %v, %+v; want 403", err, resp)
	}
	if got := callOK(ctx, t, alice, "whoami", nil); got != "alice" {
		t.Fatalf("whoami after bob's tries: %q, want alice", got)
	}

	// 4. A bad token: 401 invalid_token.
	bad := rawClient(t, endpoint)
	bad.Header = map[string]string{"Authorization": "Bearer tok-mallory"}
	resp, err = bad.Call(ctx, "initialize", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	challenge = resp.Header.Get("WWW-Authenticate")
	if resp.Status != http.StatusUnauthorized || challengeParam(challenge, "error") != "invalid_token" ||
		challengeParam(challenge, "resource_metadata") != metadataURL {
		t.Fatalf("bad token: status %d, WWW-Authenticate %q; want 401 invalid_token with the metadata", resp.Status, challenge)
	}

	// 5. Health checks need no token.
	if status, _ := getStatus(ctx, t, hc, "http://"+addr+readyPath); status != http.StatusOK {
		t.Fatalf("/readyz without a token: %d", status)
	}
	if !strings.Contains(logs.String(), "auth=bearer") || strings.Contains(logs.String(), "tok-alice") {
		t.Errorf("the startup log should say auth=bearer and never show a token:\n%s", logs)
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// Without -tokens nothing changes: no token needed, no metadata served.
func TestDemoWithoutTokensServesNoMetadata(t *testing.T) {
	addr, stop := startDemo(t, newLogBuffer(t), "-addr", "127.0.0.1:0")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c := rawClient(t, "http://"+addr+"/mcp")
	if _, err := c.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if status, _ := getStatus(ctx, t, c.HTTP, "http://"+addr+"/.well-known/oauth-protected-resource"); status != http.StatusNotFound {
		t.Fatalf("metadata without -tokens: status %d, want 404", status)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// A bad -tokens file, -auth-server or -resource fails startup with an
// error naming the flag and the line, never showing a token.
func TestDemoRefusesBadTokenFiles(t *testing.T) {
	testutil.NoLeaks(t)
	for _, tc := range []struct {
		name, file string
		args       []string
		want       string
	}{
		{"missing file", "", nil, "-tokens"},
		{"empty", "# nothing\n\n", nil, "no tokens"},
		{"one field", "s3cret-only\n", nil, "line 1: want TOKEN IDENTITY"},
		{"three fields", "# c\ns3cret alice bob\n", nil, "line 2: want TOKEN IDENTITY"},
		{"bad token", "s3cret#x alice\n", nil, "line 1: the token is not"},
		{"duplicate", "s3cret alice\ns3cret bob\n", nil, "line 2: the token appears twice"},
		{"long identity", "s3cret " + strings.Repeat("a", maxIdentityBytes+1) + "\n", nil, "longer than 256"},
		{"control character", "s3cret al\x01ice\n", nil, "not printable"},
		{"too large", strings.Repeat("# padding line\n", maxTokensFileBytes/15+1), nil, "larger than"},
		{"bad auth server", "s3cret alice\n", []string{"-auth-server", "auth.example.com"}, "-auth-server"},
		{"bad resource", "s3cret alice\n", []string{"-resource", "/mcp"}, "-resource"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "absent.txt")
			if tc.file != "" {
				path = writeTokens(t, tc.file)
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			ready := false
			args := append([]string{"-addr", "127.0.0.1:0", "-tokens", path}, tc.args...)
			err := run(ctx, args, io.Discard, func(string) { ready = true })
			if err == nil || !strings.Contains(err.Error(), tc.want) || ready {
				t.Fatalf("run = %v (ready %t), want an error saying %q", err, ready, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error shows a token: %v", err)
			}
		})
	}
}
