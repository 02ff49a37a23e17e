package auth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// TestReview14VerifiedTokenBindsSessionsByDefault: behind
// RequireBearerToken, as in the package's example (no Config.Identify, no
// WithCallerIdentity), a session belongs to the token's user: another
// user with a valid token of their own who learnt the session id gets 403
// on it, for a call and for a DELETE, and the owner keeps it.
func TestReview14VerifiedTokenBindsSessionsByDefault(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(nil), streamable.Config{})
	alice := client(url, is.issue("alice", time.Hour))
	if _, err := alice.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	bob := client(url, is.issue("bob", time.Hour))
	bob.SessionID, bob.ProtocolVersion = alice.SessionID, alice.ProtocolVersion
	resp, err := bob.CallTool(ctx, "whoami", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusForbidden {
		t.Errorf("bob's call on alice's session: status %d, want 403 (body %s)", resp.Status, resp.Body)
	}
	resp, err = bob.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusForbidden {
		t.Errorf("bob's DELETE of alice's session: status %d, want 403 (body %s)", resp.Status, resp.Body)
	}
	if w := callWhoami(t, ctx, alice); w.Identity != "alice" {
		t.Fatalf("alice's own call after bob's attempts: the tool saw %+v", w)
	}
}
