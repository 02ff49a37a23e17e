package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/auth"
	"github.com/lifeline-mcp/lifeline/server"
)

// Bounds of a -tokens file.
const (
	maxTokensFileBytes = 1 << 20
	maxIdentityBytes   = 256
)

// tokenTable is a -tokens file: the SHA-256 of each token, to the identity
// it stands for. Keeping digests, not tokens, makes a lookup's timing
// depend on the digest only.
type tokenTable map[[sha256.Size]byte]string

// loadTokens reads the -tokens file at path.
func loadTokens(path string) (tokenTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-tokens: %w", err)
	}
	defer f.Close()
	t, err := parseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("-tokens %s: %w", path, err)
	}
	return t, nil
}

// parseTokens reads lines of "TOKEN IDENTITY"; blank lines and lines whose
// first non-space character is # are skipped, and so is what follows a #
// that starts a third field. A token is RFC 6750's b64token, an identity
// at most maxIdentityBytes of printable UTF-8 without spaces; each token
// appears once. Errors name the line, never the token.
func parseTokens(r io.Reader) (tokenTable, error) {
	lr := &io.LimitedReader{R: r, N: maxTokensFileBytes + 1}
	sc := bufio.NewScanner(lr)
	t := tokenTable{}
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) > 2 && strings.HasPrefix(fields[2], "#") {
			fields = fields[:2]
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("line %d: want TOKEN IDENTITY, got %d fields", n, len(fields))
		}
		token, identity := fields[0], fields[1]
		if !isToken(token) {
			return nil, fmt.Errorf("line %d: the token is not an RFC 6750 bearer token (letters, digits and -._~+/ then trailing =)", n)
		}
		if err := checkIdentity(identity); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		sum := sha256.Sum256([]byte(token))
		if _, dup := t[sum]; dup {
			return nil, fmt.Errorf("line %d: the token appears twice", n)
		}
		t[sum] = identity
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if lr.N == 0 {
		return nil, fmt.Errorf("the file is larger than %d bytes", maxTokensFileBytes)
	}
	if len(t) == 0 {
		return nil, errors.New("no tokens: every request would be refused")
	}
	return t, nil
}

func isToken(s string) bool {
	body := strings.TrimRight(s, "=")
	if body == "" {
		return false
	}
	for _, c := range body {
		if !(c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("-._~+/", c))) {
			return false
		}
	}
	return true
}

func checkIdentity(id string) error {
	if len(id) > maxIdentityBytes {
		return fmt.Errorf("the identity is longer than %d bytes", maxIdentityBytes)
	}
	if !utf8.ValidString(id) {
		return errors.New("the identity is not UTF-8")
	}
	for _, c := range id {
		if !unicode.IsPrint(c) {
			return fmt.Errorf("the identity %q holds a character that is not printable", id)
		}
	}
	return nil
}

// verify is the demo's auth.TokenVerifier: a token in the table stands for
// its identity, with no scopes and no expiration.
func (t tokenTable) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	id, ok := t[sha256.Sum256([]byte(token))]
	if !ok {
		return nil, fmt.Errorf("not in the -tokens file: %w", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: id}, nil
}

// defaultAuthServer is -auth-server's default: a placeholder issuer that the
// metadata names. The demo issues no tokens itself (they come from the
// -tokens file); point -auth-server at the authorization server that
// issues them.
const defaultAuthServer = "https://auth.example.com"

// checkAbsoluteURL checks that the value of flag is an absolute http or
// https URL.
func checkAbsoluteURL(flag, value string) error {
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %q is not an absolute http(s) URL", flag, value)
	}
	return nil
}

// protect serves resource's protected-resource metadata (RFC 9728, naming
// authServer) on mux, at the path-suffixed well-known path and the bare
// one, and returns endpoint behind the bearer-token check of tokens, whose
// 401s point at that metadata.
func protect(mux *http.ServeMux, endpoint http.Handler, tokens tokenTable, resource, authServer string, logger *slog.Logger) (http.Handler, string) {
	meta := server.NewProtectedResourceMetadataHandler(server.ProtectedResourceMetadataConfig{
		Resource:               resource,
		AuthorizationServers:   []string{authServer},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "lifeline-demo",
	})
	mux.Handle(server.WellKnownProtectedResourcePath, meta)
	if p := server.ProtectedResourceMetadataPath(resource); p != server.WellKnownProtectedResourcePath {
		mux.Handle(p, meta)
	}
	metadataURL := server.ProtectedResourceMetadataURL(resource)
	return auth.RequireBearerToken(tokens.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL:    metadataURL,
		AllowMissingExpiration: true,
		Logger:                 logger,
	})(endpoint), metadataURL
}

// addWhoami adds the whoami tool, which answers with the identity of the
// caller's token, read from its context as any tool can.
func addWhoami(s *mcpserver.MCPServer) {
	s.AddTool(mcp.NewTool("whoami", mcp.WithDescription("the identity of the bearer token this call came with")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(auth.IdentityFromContext(ctx)), nil
		})
}

// callerOf is the caller a request's session is bound to: the identity of
// the bearer token auth.RequireBearerToken verified for it.
func callerOf(r *http.Request) (string, error) { return auth.IdentityFromRequest(r), nil }
