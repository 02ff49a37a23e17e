package streamable_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With replicas on a real redis-server, the caller a session is bound to
// travels in its record: every replica, including those that never saw the
// session, refuses another caller (403) and serves the owner. The record
// holds the identity's digest, not the identity.
func TestClusterCallerBound(t *testing.T) {
	c := newCluster(t, streamable.Config{Identify: identifyByHeader}, redisstore.Options{})
	ctx := testutil.Context(t, wait)
	alice := c.client(0, nil)
	alice.Header = map[string]string{callerHeader: "alice"}
	if _, err := alice.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	rec, err := c.replicas[0].store.Get(ctx, alice.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Caller == "" || rec.Caller == "alice" {
		t.Fatalf("record's Caller = %q, want a digest of the identity", rec.Caller)
	}
	for i := 1; i < 3; i++ {
		mallory := as(c.client(i, alice), "mallory")
		resp, err := mallory.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, "mallory's POST on another replica", resp, "5")
		s, err := mallory.OpenStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		wantForbidden(t, "mallory's GET on another replica", &testutil.Response{Status: s.Status, Body: s.Body}, "null")
		resp, err = as(c.client(i, alice), "").Delete(ctx)
		if err != nil {
			t.Fatal(err)
		}
		wantForbidden(t, "an anonymous DELETE on another replica", resp, "null")
	}
	var refused int64
	for _, r := range c.replicas {
		refused += r.h.Stats().CallerMismatches
	}
	if refused != 6 {
		t.Fatalf("CallerMismatches over the replicas = %d, want 6", refused)
	}
	// The owner is served everywhere: a GET on B, a call on C.
	owner := c.client(1, alice)
	owner.Header = alice.Header
	c.stream(owner)
	owner = c.client(2, alice)
	owner.Header = alice.Header
	if got := toolText(t, owner, toolWhoAmI, nil); got == "" {
		t.Fatal("empty whoami")
	}
	resp, err := owner.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "the owner's DELETE", resp.Status, http.StatusOK, resp.Body)
}
