package streamable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// callerHeader names the caller in these tests' requests.
const callerHeader = "X-Test-Caller"

// identifyByHeader is a Config.Identify that names the caller by
// callerHeader, and fails for "bad".
func identifyByHeader(r *http.Request) (string, error) {
	id := r.Header.Get(callerHeader)
	if id == "bad" {
		return "", errors.New("bad credentials")
	}
	return id, nil
}

// as returns a client for c's session that says it is caller ("" for none).
func as(c *testutil.Client, caller string) *testutil.Client {
	out := testutil.NewClient(c.URL)
	out.SessionID, out.ProtocolVersion = c.SessionID, c.ProtocolVersion
	if caller != "" {
		out.Header = map[string]string{callerHeader: caller}
	}
	return out
}

// wantForbidden requires a 403 saying the session is another caller's,
// echoing id (nil: null).
func wantForbidden(t *testing.T, what string, resp *testutil.Response, id string) {
	t.Helper()
	wantStatus(t, what, resp.Status, http.StatusForbidden, resp.Body)
	var m testutil.Message
	if err := json.Unmarshal(resp.Body, &m); err != nil || m.Error == nil {
		t.Fatalf("%s: body %q is not a JSON-RPC error", what, resp.Body)
	}
	if !strings.Contains(m.Error.Message, "bound to another caller") {
		t.Fatalf("%s: message %q does not say the session is another caller's", what, m.Error.Message)
	}
	if got := string(m.ID); got != id {
		t.Fatalf("%s: id %s, want %s", what, got, id)
	}
}

// A session is bound to the caller of its initialize: every request on it
// from another caller, or an anonymous one, gets 403 and changes nothing
// (the record's expiry, the queued message and the session itself are as
// they were); the refusals are counted.
func TestCallerBoundSession(t *testing.T) {
	clk := testutil.NewManualClock(time.Unix(1_000_000, 0))
	store := sessionstore.NewMemory(clk.Now)
	r := newRig(t, streamable.Config{Identify: identifyByHeader, Clock: clk, Store: store, IdleTTL: time.Hour})
	alice := r.client()
	alice.Header = map[string]string{callerHeader: "alice"}
	if _, err := alice.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	// A message waits in the session's queue (no stream yet).
	if err := r.mcp.SendNotificationToSpecificClient(alice.SessionID, "notifications/message",
		map[string]any{"level": "info", "data": "kept"}); err != nil {
		t.Fatal(err)
	}
	before, err := store.Get(t.Context(), alice.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	queued := r.h.Stats().QueuedMessages
	clk.Advance(time.Minute) // a touch now would move the expiry

	ctx := testutil.Context(t, wait)
	for _, caller := range []string{"mallory", ""} {
		c := as(alice, caller)
		resp, err := c.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":"req-7","method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, "POST request from "+caller, resp, `"req-7"`)
		resp, err = c.Notify(ctx, "notifications/roots/list_changed", nil)
		if err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, "POST notification from "+caller, resp, "null")
		resp, err = c.Reply(ctx, json.RawMessage(`99`), map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, "POST response from "+caller, resp, "null")
		s, err := c.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		wantForbidden(t, "GET from "+caller, &testutil.Response{Status: s.Status, Body: s.Body}, "null")
		resp, err = c.Delete(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, "DELETE from "+caller, resp, "null")
	}
	if got := r.h.Stats().CallerMismatches; got != 10 {
		t.Fatalf("Stats.CallerMismatches = %d, want 10", got)
	}
	after, err := store.Get(t.Context(), alice.SessionID)
	if err != nil {
		t.Fatalf("the session's record after the refusals: %v", err)
	}
	if !after.ExpiresAt.Equal(before.ExpiresAt) {
		t.Fatalf("a refused request touched the session: expiry %v, was %v", after.ExpiresAt, before.ExpiresAt)
	}
	if got := r.h.Stats().QueuedMessages; got != queued {
		t.Fatalf("queued messages = %d after the refusals, was %d", got, queued)
	}
	// The owner still has its session, and the message queued for it.
	st := r.stream(alice)
	m, err := st.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "notifications/message" })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(m.Params, []byte("kept")) {
		t.Fatalf("queued message = %s", m.Params)
	}
	resp, err := alice.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "owner's tools/list", resp.Status, http.StatusOK, resp.Body)
}

// A response to a request the server did issue (a GET stream's ping) from
// another caller is refused too: the fast path that hands pongs over
// without the store checks the caller.
func TestCallerBoundPong(t *testing.T) {
	r := newRig(t, streamable.Config{Identify: identifyByHeader})
	alice := r.client()
	alice.Header = map[string]string{callerHeader: "alice"}
	if _, err := alice.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	ctx := testutil.Context(t, wait)
	st := r.stream(alice)
	ping, err := st.NextMatching(ctx, func(m testutil.Message) bool { return m.Method == "ping" })
	if err != nil {
		t.Fatal(err)
	}
	resp, err := as(alice, "mallory").Reply(ctx, ping.ID, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	wantForbidden(t, "pong from mallory", resp, "null")
	resp, err = alice.Reply(ctx, ping.ID, map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "owner's pong", resp.Status, http.StatusAccepted, resp.Body)
}

// Identify's error is answered 401 with its text, and creates no session;
// anonymous sessions are open to every caller, as before.
func TestCallerIdentifyErrorAndAnonymous(t *testing.T) {
	r := newRig(t, streamable.Config{Identify: identifyByHeader})
	ctx := testutil.Context(t, wait)
	bad := r.client()
	bad.Header = map[string]string{callerHeader: "bad"}
	resp, err := bad.Call(ctx, "initialize", map[string]any{"protocolVersion": testutil.ProtocolVersion,
		"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "initialize with bad credentials", resp.Status, http.StatusUnauthorized, resp.Body)
	if !bytes.Contains(resp.Body, []byte("bad credentials")) || !bytes.Contains(resp.Body, []byte(`"id":1`)) {
		t.Fatalf("401 body %q does not say why or echo the id", resp.Body)
	}
	if n := r.h.Stats().Sessions; n != 0 {
		t.Fatalf("%d sessions after a refused initialize", n)
	}
	anon := r.session()
	resp, err = as(anon, "bob").Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "bob on an anonymous session", resp.Status, http.StatusOK, resp.Body)
}

// Without Identify, the identity is what a middleware put in the request's
// context with WithCallerIdentity, and a tool reads it there.
func TestCallerIdentityFromContext(t *testing.T) {
	r := newRig(t, streamable.Config{})
	mw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if id := req.Header.Get(callerHeader); id != "" {
			req = req.WithContext(streamable.WithCallerIdentity(req.Context(), id))
		}
		r.h.ServeHTTP(w, req)
	}))
	t.Cleanup(mw.Close)
	ctx := testutil.Context(t, wait)
	alice := testutil.NewClient(mw.URL)
	alice.Header = map[string]string{callerHeader: "alice"}
	if _, err := alice.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := as(alice, "bob").Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantForbidden(t, "bob's tools/list", resp, "1")
	resp, err = alice.Call(ctx, "tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "alice's tools/list", resp.Status, http.StatusOK, resp.Body)
	if got := streamable.CallerIdentity(streamable.WithCallerIdentity(context.Background(), "x")); got != "x" {
		t.Fatalf("CallerIdentity = %q", got)
	}
}
