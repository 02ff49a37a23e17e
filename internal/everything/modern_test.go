package everything_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lifeline-mcp/lifeline/internal/everything"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// modernVersion is the protocol version of the stateless requests below.
const modernVersion = "2026-07-28"

// allCaps declares every capability a multi round-trip tool may ask through.
var allCaps = map[string]any{"sampling": map[string]any{}, "elicitation": map[string]any{}, "roots": map[string]any{}}

// modernClient serves a fresh everything server on lifeline's transport over
// real HTTP and returns a client that speaks 2026-07-28 to it: no session,
// the version in a header and in every request's _meta.
func modernClient(t *testing.T) (*testutil.Client, context.Context) {
	t.Helper()
	h := streamable.New(everything.NewServer(), streamable.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = h.Shutdown(ctx)
		ts.Close()
	})
	c := testutil.NewClient(ts.URL)
	c.HTTP = ts.Client()
	c.ProtocolVersion = modernVersion
	return c, testutil.Context(t, wait)
}

// modernRequest builds a 2026-07-28 request of method: params with a _meta
// declaring caps (and logLevel, when not empty), and the Mcp-Method and
// Mcp-Name headers.
func modernRequest(t *testing.T, ctx context.Context, c *testutil.Client, id int, method string,
	params map[string]any, caps map[string]any, logLevel string) *http.Request {
	t.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	meta := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    modernVersion,
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "everything-test", "version": "1"},
	}
	if logLevel != "" {
		meta["io.modelcontextprotocol/logLevel"] = logLevel
	}
	if m, ok := p["_meta"].(map[string]any); ok {
		for k, v := range m {
			meta[k] = v
		}
	}
	p["_meta"] = meta
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	if err != nil {
		t.Fatal(err)
	}
	req, err := c.NewRequest(ctx, http.MethodPost, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Mcp-Method", method)
	if name, ok := p["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	return req
}

// modernCall sends a 2026-07-28 request and returns the whole answer and
// its last message (the response).
func modernCall(t *testing.T, ctx context.Context, c *testutil.Client, method string,
	params map[string]any, caps map[string]any) (*testutil.Response, testutil.Message) {
	t.Helper()
	return modernCallLog(t, ctx, c, method, params, caps, "")
}

func modernCallLog(t *testing.T, ctx context.Context, c *testutil.Client, method string,
	params map[string]any, caps map[string]any, logLevel string) (*testutil.Response, testutil.Message) {
	t.Helper()
	resp, err := c.Do(modernRequest(t, ctx, c, 7, method, params, caps, logLevel))
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	m, err := resp.Last()
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if string(m.ID) != "7" {
		t.Errorf("%s: the answer's id is %s, want 7", method, m.ID)
	}
	return resp, m
}

// inputResult is a tools/call or prompts/get result of either kind:
// input_required or complete.
type inputResult struct {
	ResultType    string `json:"resultType"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string    `json:"requestState"`
	Content      []content `json:"content"`
	IsError      bool      `json:"isError"`
	Messages     []struct {
		Role    string  `json:"role"`
		Content content `json:"content"`
	} `json:"messages"`
}

// text is the text of a complete tool result's one content block.
func (r inputResult) text() string {
	if len(r.Content) != 1 {
		return ""
	}
	return r.Content[0].Text
}

// methods maps each input request's key to its method.
func (r inputResult) methods() map[string]string {
	out := map[string]string{}
	for k, v := range r.InputRequests {
		out[k] = v.Method
	}
	return out
}

// callInput calls a tool the 2026-07-28 way with extra params (inputResponses,
// requestState) and returns its result, failing the test on a JSON-RPC error.
func callInput(t *testing.T, ctx context.Context, c *testutil.Client, tool string, extra map[string]any, caps map[string]any) inputResult {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	for k, v := range extra {
		params[k] = v
	}
	_, m := modernCall(t, ctx, c, "tools/call", params, caps)
	if m.Error != nil {
		t.Fatalf("%s %v: error %d %s", tool, extra, m.Error.Code, m.Error.Message)
	}
	return decode[inputResult](t, m.Result)
}

// callInputError calls a tool the 2026-07-28 way and returns the JSON-RPC
// error it must answer with.
func callInputError(t *testing.T, ctx context.Context, c *testutil.Client, tool string, extra map[string]any, caps map[string]any) *testutil.RPCError {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": map[string]any{}}
	for k, v := range extra {
		params[k] = v
	}
	_, m := modernCall(t, ctx, c, "tools/call", params, caps)
	if m.Error == nil {
		t.Fatalf("%s %v: result %s, want a JSON-RPC error", tool, extra, m.Result)
	}
	return m.Error
}

// accept is an elicitation answer accepting content.
func accept(content map[string]any) map[string]any {
	return map[string]any{"action": "accept", "content": content}
}

// sampled is a sampling answer whose text is text.
func sampled(text string) map[string]any {
	return map[string]any{"role": "assistant", "model": "test-model", "stopReason": "endTurn",
		"content": map[string]any{"type": "text", "text": text}}
}

// roots is a roots/list answer with one root.
func roots(uri string) map[string]any {
	return map[string]any{"roots": []any{map[string]any{"uri": uri, "name": "root"}}}
}

func wantInputRequired(t *testing.T, what string, r inputResult, want map[string]string) {
	t.Helper()
	got := r.methods()
	if r.ResultType != "input_required" || len(got) != len(want) {
		t.Fatalf("%s: resultType %q, input requests %v; want input_required asking %v", what, r.ResultType, got, want)
	}
	for k, m := range want {
		if got[k] != m {
			t.Fatalf("%s: input requests %v, want %v", what, got, want)
		}
	}
}

func wantComplete(t *testing.T, what string, r inputResult) {
	t.Helper()
	if r.ResultType != "complete" || len(r.InputRequests) != 0 || r.IsError {
		t.Fatalf("%s: resultType %q, input requests %v, isError %v; want a complete result", what, r.ResultType, r.methods(), r.IsError)
	}
}
