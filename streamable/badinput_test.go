package streamable_test

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// echoCall is a well-formed request that the session would serve: each bad
// case breaks one thing about it (or about its headers).
const echoCall = `{"jsonrpc":"2.0","id":"bad-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"must not run"}}}`

// badCase is one bad request sent with a live session's headers.
type badCase struct {
	name    string
	method  string            // POST when empty
	body    string            // sent as is on POST, and on other methods when not empty
	header  map[string]string // set over the session's headers; "" deletes one
	status  int
	mention string // what the error message must mention
	code    int    // the JSON-RPC error code wanted, when not 0
	check   func(t *testing.T, resp *testutil.Response)
}

// sendBad sends tc with c's session headers and checks its error answer.
func sendBad(t *testing.T, c *testutil.Client, tc badCase) *testutil.Response {
	t.Helper()
	method := tc.method
	if method == "" {
		method = http.MethodPost
	}
	var body []byte
	if method == http.MethodPost || tc.body != "" {
		body = []byte(tc.body)
	}
	req, err := c.NewRequest(testutil.Context(t, wait), method, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range tc.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	what := method + " " + tc.name
	wantRPCError(t, what, resp.Status, tc.status, resp.Body, tc.mention)
	wantErrorBody(t, what, resp, tc.code)
	if tc.check != nil {
		tc.check(t, resp)
	}
	return resp
}

// wantErrorBody checks what wantRPCError leaves out: the error is a JSON-RPC
// 2.0 error served as application/json, with code when code is not 0, and
// the answer names no session.
func wantErrorBody(t *testing.T, what string, resp *testutil.Response, code int) {
	t.Helper()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Fatalf("%s: error body served as %q, want application/json", what, resp.Header.Get("Content-Type"))
	}
	var m testutil.Message
	if err := json.Unmarshal(resp.Body, &m); err != nil || m.Error == nil {
		t.Fatalf("%s: body %q is not a JSON-RPC error", what, resp.Body)
	}
	if m.JSONRPC != "2.0" || len(m.Result) != 0 {
		t.Fatalf("%s: body %q is not a JSON-RPC 2.0 error response", what, resp.Body)
	}
	if code != 0 && m.Error.Code != code {
		t.Fatalf("%s: error code %d, want %d (body %q)", what, m.Error.Code, code, resp.Body)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		t.Fatalf("%s: error answer carries Mcp-Session-Id %q", what, id)
	}
}

// runBad sends each case on c's session, then checks the session survived it.
func runBad(t *testing.T, r *rig, c *testutil.Client, cases []badCase) {
	t.Helper()
	sessions := r.h.Stats().Sessions
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sendBad(t, c, tc)
			wantUntouched(t, r, c, sessions)
		})
	}
}

// wantUntouched checks that the handler still holds sessions sessions and
// that c's session still serves an echo tool call.
func wantUntouched(t *testing.T, r *rig, c *testutil.Client, sessions int) {
	t.Helper()
	if got := r.h.Stats().Sessions; got != sessions {
		t.Fatalf("Sessions = %d after the bad request, want %d", got, sessions)
	}
	text := "still here after " + t.Name()
	resp, err := c.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": text})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "echo on the existing session", resp.Status, http.StatusOK, resp.Body)
	last, err := resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if last.Error != nil || json.Unmarshal(last.Result, &res) != nil || res.IsError ||
		len(res.Content) != 1 || res.Content[0].Text != text {
		t.Fatalf("echo on the existing session: result %s, error %+v; want the text %q", last.Result, last.Error, text)
	}
	if got := r.h.Stats().Sessions; got != sessions {
		t.Fatalf("Sessions = %d after the echo, want %d", got, sessions)
	}
}

// paddedPing is a ping request exactly n bytes long.
func paddedPing(t *testing.T, n int) string {
	t.Helper()
	const head, tail = `{"jsonrpc":"2.0","id":"padded","method":"ping","params":{"pad":"`, `"}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("a ping cannot be as short as %d bytes", n)
	}
	return head + strings.Repeat("x", pad) + tail
}

// wantServed POSTs body on c's session and requires a 200 with a result.
func wantServed(t *testing.T, what string, c *testutil.Client, body string) {
	t.Helper()
	resp, err := c.PostRaw(testutil.Context(t, wait), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, what, resp.Status, http.StatusOK, resp.Body)
	if last, err := resp.Last(); err != nil || last.Error != nil || len(last.Result) == 0 {
		t.Fatalf("%s: answer %+v (err %v), want a result", what, last, err)
	}
}

func TestNotAcceptableGets406(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	r.session()
	accept := func(v string) map[string]string { return map[string]string{"Accept": v} }
	runBad(t, r, c, []badCase{
		{name: "POST json only", body: echoCall, header: accept("application/json"), status: 406, mention: "Accept"},
		{name: "POST event-stream only", body: echoCall, header: accept("text/event-stream"), status: 406, mention: "Accept"},
		{name: "POST json and plain", body: echoCall, header: accept("application/json, text/plain"), status: 406, mention: "Accept"},
		{name: "POST html", body: echoCall, header: accept("text/html"), status: 406, mention: "Accept"},
		{name: "POST no Accept", body: echoCall, header: accept(""), status: 406, mention: "Accept"},
		{name: "GET json", method: http.MethodGet, header: accept("application/json"), status: 406, mention: "Accept"},
		{name: "GET html", method: http.MethodGet, header: accept("text/html"), status: 406, mention: "Accept"},
		{name: "GET no Accept", method: http.MethodGet, header: accept(""), status: 406, mention: "Accept"},
	})
}

func TestUnsupportedContentTypeGets415(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	ct := func(v string) map[string]string { return map[string]string{"Content-Type": v} }
	runBad(t, r, c, []badCase{
		{name: "text plain", body: echoCall, header: ct("text/plain"), status: 415, mention: "Content-Type"},
		{name: "form", body: echoCall, header: ct("application/x-www-form-urlencoded"), status: 415, mention: "Content-Type"},
		{name: "json-seq", body: echoCall, header: ct("application/json-seq"), status: 415, mention: "Content-Type"},
		{name: "missing", body: echoCall, header: ct(""), status: 415, mention: "Content-Type"},
	})
	// A charset parameter is still application/json.
	req, err := c.NewRequest(testutil.Context(t, wait), http.MethodPost, []byte(echoCall))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "POST application/json; charset=utf-8", resp.Status, http.StatusOK, resp.Body)
}

func TestBodyOverConfiguredLimitGets413(t *testing.T) {
	const limit = 1024
	r := newRig(t, streamable.Config{MaxBodyBytes: limit})
	c := r.session()
	mentionsLimit := func(t *testing.T, resp *testutil.Response) {
		if !strings.Contains(string(resp.Body), strconv.Itoa(limit)) {
			t.Fatalf("413 body %q does not name the limit %d", resp.Body, limit)
		}
	}
	runBad(t, r, c, []badCase{
		{name: "one byte over", body: paddedPing(t, limit+1), status: 413, mention: "limit", check: mentionsLimit},
		{name: "64 KiB", body: paddedPing(t, 64<<10), status: 413, mention: "limit", check: mentionsLimit},
		{name: "garbage over", body: strings.Repeat("{", 4*limit), status: 413, mention: "limit", check: mentionsLimit},
	})
	wantServed(t, "a body of exactly the limit", c, paddedPing(t, limit))
}

func TestBodyOverDefaultLimitGets413(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	const limit = 4 << 20
	if streamable.DefaultMaxBodyBytes != limit {
		t.Fatalf("DefaultMaxBodyBytes = %d, want 4 MiB", streamable.DefaultMaxBodyBytes)
	}
	runBad(t, r, c, []badCase{{
		name: "4 MiB plus one", body: paddedPing(t, limit+1), status: 413, mention: "limit",
		check: func(t *testing.T, resp *testutil.Response) {
			if !strings.Contains(string(resp.Body), strconv.Itoa(limit)) {
				t.Fatalf("413 body %q does not name the default limit %d", resp.Body, limit)
			}
		},
	}})
	wantServed(t, "a body of exactly 4 MiB", c, paddedPing(t, limit))
}

func TestBadJSONGets400ParseError(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	const parse = -32700
	runBad(t, r, c, []badCase{
		{name: "truncated", body: echoCall[:len(echoCall)-7], status: 400, mention: "Parse error", code: parse},
		{name: "not JSON", body: "hello, server", status: 400, mention: "Parse error", code: parse},
		{name: "empty", body: "", status: 400, mention: "Parse error", code: parse},
		{name: "trailing garbage", body: echoCall + " }", status: 400, mention: "Parse error", code: parse},
		{name: "two messages", body: echoCall + echoCall, status: 400, mention: "Parse error", code: parse},
	})
}

func TestBatchGets400(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	runBad(t, r, c, []badCase{
		{name: "one request", body: "[" + echoCall + "]", status: 400, mention: "batch", code: -32600},
		{name: "two requests", body: "[" + echoCall + "," + echoCall + "]", status: 400, mention: "batch", code: -32600},
		{name: "empty", body: "[]", status: 400, mention: "batch", code: -32600},
		{name: "leading space", body: " \n\t[" + echoCall + "]", status: 400, mention: "batch", code: -32600},
	})
}

func TestBadJSONRPCVersionGets400(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	runBad(t, r, c, []badCase{
		{name: "1.0", body: strings.Replace(echoCall, `"2.0"`, `"1.0"`, 1), status: 400, mention: "jsonrpc", code: -32600},
		{name: "missing", body: strings.Replace(echoCall, `"jsonrpc":"2.0",`, "", 1), status: 400, mention: "jsonrpc", code: -32600},
	})
}

func TestBadResponseIDGets400JSONRPCError(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	r.stream(c) // the session has a GET stream, so it could have sent requests
	echoesID := func(id string) func(*testing.T, *testutil.Response) {
		return func(t *testing.T, resp *testutil.Response) {
			var m testutil.Message
			if err := json.Unmarshal(resp.Body, &m); err != nil || string(m.ID) != id {
				t.Fatalf("error body %q: id %s, want %s", resp.Body, m.ID, id)
			}
		}
	}
	runBad(t, r, c, []badCase{
		{name: "result", body: `{"jsonrpc":"2.0","id":424242,"result":{}}`,
			status: 400, mention: "424242", check: echoesID("424242")},
		{name: "error", body: `{"jsonrpc":"2.0","id":"never-sent","error":{"code":-1,"message":"no"}}`,
			status: 400, mention: "never-sent", check: echoesID(`"never-sent"`)},
	})
	if got := r.h.Stats().GetStreams; got != 1 {
		t.Fatalf("GetStreams = %d, want the session's stream still open", got)
	}
}

func TestUnsupportedProtocolVersionGets400(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	version := func(v string) map[string]string { return map[string]string{"MCP-Protocol-Version": v} }
	const mention = "MCP-Protocol-Version"
	runBad(t, r, c, []badCase{
		{name: "POST request", body: echoCall, header: version("1999-01-01"), status: 400, mention: mention},
		// A version from 2026-07-28 on is of the sessionless era (as mcp-go
		// decides it), whose requests must carry it in _meta too.
		{name: "POST notification", body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`,
			header: version("2099-12-31"), status: 400, mention: mention},
		{name: "POST garbage", body: echoCall, header: version("latest"), status: 400, mention: mention},
		{name: "GET", method: http.MethodGet, header: version("1999-01-01"), status: 400, mention: mention},
		{name: "DELETE", method: http.MethodDelete, header: version("1999-01-01"), status: 400, mention: mention},
	})
}

func TestMethodNotAllowedGets405WithAllow(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	allow := func(t *testing.T, resp *testutil.Response) {
		got := map[string]bool{}
		for part := range strings.SplitSeq(resp.Header.Get("Allow"), ",") {
			got[strings.TrimSpace(part)] = true
		}
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			if !got[m] {
				t.Fatalf("Allow %q does not list %s", resp.Header.Get("Allow"), m)
			}
		}
	}
	runBad(t, r, c, []badCase{
		{name: "PUT", method: http.MethodPut, body: echoCall, status: 405, mention: "Method Not Allowed", check: allow},
		{name: "PATCH", method: http.MethodPatch, body: echoCall, status: 405, mention: "Method Not Allowed", check: allow},
		{name: "PUT without body", method: http.MethodPut, status: 405, mention: "Method Not Allowed", check: allow},
	})
}

// rawInitialize sends a raw initialize on c and returns the answer.
func rawInitialize(t *testing.T, c *testutil.Client) *testutil.Response {
	t.Helper()
	resp, err := c.Call(testutil.Context(t, wait), "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "badinput", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestTooManySessionsGets503WithRetryAfter(t *testing.T) {
	r := newRig(t, streamable.Config{MaxSessions: 3})
	existing := r.session()
	second := r.session()
	r.session()
	full := func(what string) {
		t.Helper()
		resp := rawInitialize(t, r.client())
		wantRPCError(t, what, resp.Status, http.StatusServiceUnavailable, resp.Body, "maximum")
		wantErrorBody(t, what, resp, 0)
		ra := resp.Header.Get("Retry-After")
		if n, err := strconv.Atoi(ra); err != nil || n <= 0 {
			t.Fatalf("%s: Retry-After %q, want a positive number of seconds", what, ra)
		}
		wantUntouched(t, r, existing, 3)
	}
	full("initialize beyond the maximum")
	full("initialize beyond the maximum, again")

	del, err := second.Delete(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", del.Status, http.StatusOK, del.Body)
	if got := r.h.Stats().Sessions; got != 2 {
		t.Fatalf("Sessions = %d after DELETE, want 2", got)
	}
	again := r.client()
	if _, err := again.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatalf("initialize after a DELETE freed a slot: %v", err)
	}
	wantUntouched(t, r, again, 3)
	full("initialize when full once more")
}

func TestBadGetLeavesLiveStreamAlone(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	runBad(t, r, c, []badCase{
		{name: "GET json", method: http.MethodGet, header: map[string]string{"Accept": "application/json"},
			status: 406, mention: "Accept"},
		{name: "GET old version", method: http.MethodGet, header: map[string]string{"MCP-Protocol-Version": "1999-01-01"},
			status: 400, mention: "MCP-Protocol-Version"},
	})
	if got := r.h.Stats().GetStreams; got != 1 {
		t.Fatalf("GetStreams = %d after the bad GETs, want 1", got)
	}
	// The stream still carries the session's notifications.
	ctx := testutil.Context(t, wait)
	resp, err := c.CallTool(ctx, "lifeline_notify_session", map[string]any{"count": 1})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "lifeline_notify_session", resp.Status, http.StatusOK, resp.Body)
	m, err := s.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
	if err != nil {
		t.Fatalf("the live stream after the bad GETs: %v", err)
	}
	if !strings.Contains(string(m.Params), "lifeline_notify_session") {
		t.Fatalf("notification %s is not the tool's", m.Params)
	}
}
