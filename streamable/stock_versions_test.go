package streamable_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// initializeAsking sends initialize asking for version and returns the
// answer, the version the server answered with and the session id.
func initializeAsking(t *testing.T, c *testutil.Client, version string) (*testutil.Response, string) {
	t.Helper()
	params := map[string]any{
		"capabilities": map[string]any{},
		"clientInfo":   map[string]any{"name": "versions-test", "version": "1"},
	}
	if version != "" {
		params["protocolVersion"] = version
	}
	resp, err := c.Call(testutil.Context(t, wait), "initialize", params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusOK {
		return resp, ""
	}
	m, err := resp.Last()
	if err != nil || m.Error != nil {
		t.Fatalf("initialize: %v %+v", err, m.Error)
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	c.SessionID = resp.Header.Get("Mcp-Session-Id")
	return resp, res.ProtocolVersion
}

// TestProtocolVersionsRestrictSessions: with Config.ProtocolVersions, an
// initialize asking for a version not served is answered with the newest
// session-era version served, a header naming a version not served gets
// 400 on POST, GET and DELETE, and a 2026-07-28 request (not listed) gets
// -32022. (server/discover is served on 2026-07-28 only.)
func TestProtocolVersionsRestrictSessions(t *testing.T) {
	served := []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20241105}
	r := newRig(t, streamable.Config{ProtocolVersions: served})
	ctx := testutil.Context(t, wait)

	for asked, want := range map[string]string{
		mcp.ProtocolVersion20251125: mcp.ProtocolVersion20250618, // not served: the newest served
		mcp.ProtocolVersion20250326: mcp.ProtocolVersion20250618,
		"":                          mcp.ProtocolVersion20250618, // means 2025-03-26
		"1999-01-01":                mcp.ProtocolVersion20250618, // unknown
		mcp.ProtocolVersion20260728: mcp.ProtocolVersion20250618, // no handshake on it
		mcp.ProtocolVersion20241105: mcp.ProtocolVersion20241105, // served: kept
	} {
		_, got := initializeAsking(t, r.client(), asked)
		if got != want {
			t.Errorf("initialize asking %q: answered %q, want %q", asked, got, want)
		}
	}

	c := r.client()
	_, v := initializeAsking(t, c, mcp.ProtocolVersion20251125)
	c.ProtocolVersion = v
	if resp, err := c.Notify(ctx, "notifications/initialized", nil); err != nil || resp.Status != http.StatusAccepted {
		t.Fatalf("initialized: %v %+v", err, resp)
	}
	if resp, err := c.Call(ctx, "tools/list", nil); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("tools/list on %s: %v %+v", v, err, resp)
	}

	// A header naming a version not served: 400 on every method.
	c.ProtocolVersion = mcp.ProtocolVersion20251125
	resp, err := c.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "POST with a version not served", resp.Status, http.StatusBadRequest, resp.Body)
	if !containsAll(string(resp.Body), `unsupported MCP-Protocol-Version \"2025-11-25\"`, "supported: 2025-06-18, 2024-11-05", `"id":`) {
		t.Errorf("POST 400 body %q", resp.Body)
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, err := c.NewRequest(ctx, method, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, method+" with a version not served", resp.Status, http.StatusBadRequest, resp.Body)
	}
	// The session is untouched.
	c.ProtocolVersion = v
	if resp, err := c.Call(ctx, "tools/list", nil); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("tools/list after the refusals: %v %+v", err, resp)
	}

	// 2026-07-28, not listed: -32022 with the versions served.
	req := r.modernRequest(ctx, t, modernMsg(1, "tools/list", nil, nil), nil)
	resp, err = r.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "2026-07-28 request", resp.Status, http.StatusBadRequest, resp.Body)
	if m, _ := resp.Last(); m.Error == nil || m.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		t.Errorf("2026-07-28 request: %q, want error %d", resp.Body, mcp.UNSUPPORTED_PROTOCOL_VERSION)
	}

	for _, v := range mcp.ValidProtocolVersions {
		if got, want := r.h.SupportsProtocolVersion(v), slices.Contains(served, v); got != want {
			t.Errorf("SupportsProtocolVersion(%s) = %v, want %v", v, got, want)
		}
	}
	if r.h.SupportsProtocolVersion("1999-01-01") {
		t.Error("SupportsProtocolVersion of an unknown version")
	}
}

// TestProtocolVersionsModernOnly: serving 2026-07-28 alone, initialize
// gets 400 naming what is served, and 2026-07-28 requests are served, with
// server/discover advertising only that version.
func TestProtocolVersionsModernOnly(t *testing.T) {
	r := newRig(t, streamable.Config{ProtocolVersions: []string{mcp.ProtocolVersion20260728}})
	ctx := testutil.Context(t, wait)
	resp, _ := initializeAsking(t, r.client(), mcp.ProtocolVersion20251125)
	wantStatus(t, "initialize", resp.Status, http.StatusBadRequest, resp.Body)
	if !containsAll(string(resp.Body), "serves no protocol version with sessions", `"supported":["2026-07-28"]`, `"id":`) {
		t.Errorf("initialize 400 body %q", resp.Body)
	}
	if st := r.h.Stats(); st.Sessions != 0 {
		t.Errorf("a refused initialize left %d sessions", st.Sessions)
	}

	req := r.modernRequest(ctx, t, modernMsg(1, "server/discover", nil, nil), nil)
	resp, err := r.client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "server/discover", resp.Status, http.StatusOK, resp.Body)
	m, err := resp.Last()
	if err != nil || m.Error != nil {
		t.Fatalf("server/discover: %v %+v", err, m.Error)
	}
	var disc struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if err := json.Unmarshal(m.Result, &disc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(disc.SupportedVersions, []string{mcp.ProtocolVersion20260728}) {
		t.Errorf("server/discover advertises %v", disc.SupportedVersions)
	}
}

// TestProtocolVersionsDefault: no list serves every version mcp-go
// implements.
func TestProtocolVersionsDefault(t *testing.T) {
	r := newRig(t, streamable.Config{})
	for _, v := range mcp.ValidProtocolVersions {
		if !r.h.SupportsProtocolVersion(v) {
			t.Errorf("SupportsProtocolVersion(%s) = false by default", v)
		}
	}
	_, got := initializeAsking(t, r.client(), mcp.ProtocolVersion20250326)
	if got != mcp.ProtocolVersion20250326 {
		t.Errorf("initialize asking 2025-03-26 answered %q", got)
	}
}

// TestProtocolVersionsUnknown: a version mcp-go does not implement is
// ignored and logged; a list of nothing else panics in New.
func TestProtocolVersionsUnknown(t *testing.T) {
	var logs bytes.Buffer
	h := streamable.New(demotools.NewServer("t", "1"), streamable.Config{
		ProtocolVersions: []string{"1999-01-01", mcp.ProtocolVersion20250618},
		Logger:           slog.New(slog.NewTextHandler(&logs, nil)),
	})
	defer h.Close()
	if !h.SupportsProtocolVersion(mcp.ProtocolVersion20250618) || h.SupportsProtocolVersion("1999-01-01") ||
		h.SupportsProtocolVersion(mcp.ProtocolVersion20251125) {
		t.Error("SupportsProtocolVersion does not follow the list")
	}
	if !strings.Contains(logs.String(), "1999-01-01") {
		t.Errorf("the unknown version was not logged: %q", logs.String())
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "names no protocol version") {
			t.Errorf("New with only unknown versions: recovered %v, want a panic", p)
		}
	}()
	h2 := streamable.New(demotools.NewServer("t", "1"), streamable.Config{ProtocolVersions: []string{"1999-01-01"},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	h2.Close()
}
