package streamable_test

import (
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// TestReview14ForeignCallerDoesNotAdopt: a caller the session is not bound
// to, whose request lands on a replica that has no copy of the session,
// gets 403 and changes nothing there either: no copy is made (none is
// registered with that replica's MCPServer, whose hooks would run with the
// stranger's context, and none takes one of its MaxSessions places). The
// owner's request on that replica then adopts it and is served.
func TestReview14ForeignCallerDoesNotAdopt(t *testing.T) {
	c := newCluster(t, streamable.Config{Identify: identifyByHeader}, redisstore.Options{})
	ctx := testutil.Context(t, wait)
	alice := c.client(0, nil)
	alice.Header = map[string]string{callerHeader: "alice"}
	if _, err := alice.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	b := c.replicas[1]
	mallory := as(c.client(1, alice), "mallory")
	resp, err := mallory.PostRaw(ctx, []byte(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	wantForbidden(t, "mallory's POST on a replica without a copy", resp, "5")
	if n := b.h.Stats().Sessions; n != 0 {
		t.Errorf("replica %s holds %d sessions after a stranger's refused request; want 0 (no copy made for a stranger)", b.name, n)
	}
	if n := b.h.Stats().CallerMismatches; n != 1 {
		t.Errorf("replica %s CallerMismatches = %d, want 1", b.name, n)
	}
	owner := c.client(1, alice)
	owner.Header = alice.Header
	if got := toolText(t, owner, toolWhoAmI, nil); got == "" {
		t.Fatal("the owner's call on the replica: empty whoami")
	}
	if n := b.h.Stats().Sessions; n != 1 {
		t.Fatalf("replica %s holds %d sessions after the owner's call, want 1", b.name, n)
	}
}
