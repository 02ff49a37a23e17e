package auth_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/auth"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests.
const wait = 10 * time.Second

var quiet = slog.New(slog.DiscardHandler)

// metadataURL is what the challenges of these tests point at.
const metadataURL = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"

// issuer is a test authorization server: it issues random opaque tokens and
// its verify checks them, against a manual clock.
type issuer struct {
	clock *testutil.ManualClock
	calls atomic.Int64 // verify calls

	mu     sync.Mutex
	tokens map[string]auth.TokenInfo
}

func newIssuer() *issuer {
	return &issuer{clock: testutil.NewManualClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)),
		tokens: map[string]auth.TokenInfo{}}
}

// issue returns a fresh token for user with scopes, expiring after ttl (0:
// no expiration).
func (is *issuer) issue(user string, ttl time.Duration, scopes ...string) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	info := auth.TokenInfo{UserID: user, Scopes: scopes, Extra: map[string]any{"tenant": "t-" + user}}
	if ttl > 0 {
		info.Expiration = is.clock.Now().Add(ttl)
	}
	is.mu.Lock()
	is.tokens[token] = info
	is.mu.Unlock()
	return token
}

func (is *issuer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	is.calls.Add(1)
	is.mu.Lock()
	info, ok := is.tokens[token]
	is.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("unknown token: %w", auth.ErrInvalidToken)
	}
	return &info, nil
}

// options returns middleware options naming metadataURL and the issuer's
// clock, then applies edit.
func (is *issuer) options(edit func(*auth.RequireBearerTokenOptions)) *auth.RequireBearerTokenOptions {
	o := &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL, Now: is.clock.Now, Logger: quiet}
	if edit != nil {
		edit(o)
	}
	return o
}

// whoami is the result of the whoami tool: what the tool's context says.
type whoami struct {
	UserID   string   `json:"user_id"`
	Scopes   []string `json:"scopes"`
	Tenant   any      `json:"tenant"`
	Identity string   `json:"identity"`
	HasToken bool     `json:"has_token"`
}

// newMCPServer returns an MCPServer with the whoami tool, which reports the
// token info in its context.
func newMCPServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("auth-test", "1")
	s.AddTool(mcp.NewTool("whoami"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var w whoami
		if info := auth.TokenInfoFromContext(ctx); info != nil {
			w = whoami{UserID: info.UserID, Scopes: info.Scopes, Tenant: info.Extra["tenant"], HasToken: true}
		}
		w.Identity = auth.IdentityFromContext(ctx)
		b, _ := json.Marshal(w)
		return mcp.NewToolResultText(string(b)), nil
	})
	return s
}

// serve runs a lifeline handler for newMCPServer behind the middleware on
// a loopback listener and returns the endpoint's URL.
func serve(t *testing.T, is *issuer, opts *auth.RequireBearerTokenOptions, cfg streamable.Config) string {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	h := streamable.New(newMCPServer(), cfg)
	ts := httptest.NewServer(auth.RequireBearerToken(is.verify, opts)(h))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	return ts.URL + "/mcp"
}

// client returns a raw MCP client sending token (none when "").
func client(url, token string) *testutil.Client {
	c := testutil.NewClient(url)
	if token != "" {
		c.Header = map[string]string{"Authorization": "Bearer " + token}
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// callWhoami calls the whoami tool and decodes what it saw.
func callWhoami(t *testing.T, ctx context.Context, c *testutil.Client) whoami {
	t.Helper()
	resp, err := c.CallTool(ctx, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	return whoamiOf(t, resp)
}

// whoamiOf decodes the answer to a whoami call.
func whoamiOf(t *testing.T, resp *testutil.Response) whoami {
	t.Helper()
	if resp.Status != http.StatusOK {
		t.Fatalf("whoami: status %d: %s", resp.Status, resp.Body)
	}
	m, err := resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("whoami result %s: %v", m.Result, err)
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("whoami content %T", res.Content[0])
	}
	var w whoami
	if err := json.Unmarshal([]byte(text.Text), &w); err != nil {
		t.Fatalf("whoami text %q: %v", text.Text, err)
	}
	return w
}

// refusal is what a refused request got.
type refusal struct {
	status    int
	challenge string
	body      struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int               `json:"code"`
			Message string            `json:"message"`
			Data    map[string]string `json:"data"`
		} `json:"error"`
	}
	header http.Header
}

// expectRefusal checks that resp is a refusal with status whose body is a
// JSON-RPC error with id null, and returns it.
func expectRefusal(t *testing.T, resp *testutil.Response, status int) refusal {
	t.Helper()
	r := refusal{status: resp.Status, challenge: resp.Header.Get("WWW-Authenticate"), header: resp.Header}
	if resp.Status != status {
		t.Fatalf("status %d, want %d (body %s)", resp.Status, status, resp.Body)
	}
	if err := json.Unmarshal(resp.Body, &r.body); err != nil {
		t.Fatalf("body %q is not JSON: %v", resp.Body, err)
	}
	if r.body.JSONRPC != "2.0" || string(r.body.ID) != "null" || r.body.Error.Message == "" {
		t.Fatalf("body %s: want a JSON-RPC error with id null and a message", resp.Body)
	}
	return r
}

// params parses a Bearer challenge's auth-params (quoted values without
// escapes, as these tests use).
func params(t *testing.T, challenge string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(challenge, "Bearer")
	if !ok {
		t.Fatalf("challenge %q is not Bearer", challenge)
	}
	out := map[string]string{}
	rest = strings.TrimSpace(rest)
	for rest != "" {
		name, after, ok := strings.Cut(rest, `="`)
		if !ok {
			t.Fatalf("challenge %q: bad parameter at %q", challenge, rest)
		}
		value, tail, ok := strings.Cut(after, `"`)
		if !ok {
			t.Fatalf("challenge %q: unterminated value", challenge)
		}
		out[strings.TrimSpace(name)] = value
		rest = strings.TrimPrefix(strings.TrimSpace(tail), ",")
		rest = strings.TrimSpace(rest)
	}
	return out
}

// serveHandler serves h on a loopback listener for the test's duration.
func serveHandler(t *testing.T, h http.Handler) string {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func httpRequest(t *testing.T, ctx context.Context) *http.Request {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1/", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}
