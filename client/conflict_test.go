package lifelineclient_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// lifeline answers a GET 409 while the stream it replaces still looks live
// to it (a cut it has not noticed yet): "try again", not "never". A cut
// GET stream whose first resume gets 409 is resumed on the next attempt,
// with Last-Event-ID, and loses nothing.
func TestGETResumeAnswered409IsRetried(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	var conflicts atomic.Int64
	front := newFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" && conflicts.CompareAndSwap(0, 1) {
			http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Conflict: test: the old stream looks live"}}`, http.StatusConflict)
			return
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{front.URL}})
	c := connect(t, p.URL(), lifelineclient.Config{Resume: fastResume},
		[]transport.StreamableHTTPCOption{transport.WithContinuousListening()})
	notifyAndWait(t, c, "warmup", 1)
	p.ArmConns(func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet },
		testutil.Fault{After: 800, MidEvent: true})
	notifyAndWait(t, c, "cut", 60)
	if p.Stats().Cuts != 1 || conflicts.Load() != 1 {
		t.Fatalf("cuts %d, 409s %d: want 1 each", p.Stats().Cuts, conflicts.Load())
	}
}
