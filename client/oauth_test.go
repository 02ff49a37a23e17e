package lifelineclient_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// With mcp-go's OAuth, each request carries the token valid when it is
// sent. A GET stream cut after its token was replaced (refreshed; the old
// one expired) is resumed with the token valid now, not the one it opened
// with, and loses nothing.
func TestResumeCarriesTheCurrentOAuthToken(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	var valid atomic.Value
	valid.Store("Bearer t1")
	var refused atomic.Int64
	front := newFront(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != valid.Load().(string) {
			refused.Add(1)
			http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"test: expired token"}}`, http.StatusUnauthorized)
			return
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	store := transport.NewMemoryTokenStore()
	ctx := testutil.Context(t, wait)
	if err := store.SaveToken(ctx, &transport.Token{AccessToken: "t1", TokenType: "Bearer"}); err != nil {
		t.Fatal(err)
	}
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{front.URL}})
	c := connect(t, p.URL(), lifelineclient.Config{Resume: fastResume}, []transport.StreamableHTTPCOption{
		transport.WithContinuousListening(),
		transport.WithHTTPOAuth(transport.OAuthConfig{ClientID: "test", TokenStore: store}),
	})
	notifyAndWait(t, c, "warmup", 1)
	// The token is refreshed: from now on only t2 is valid.
	if err := store.SaveToken(context.Background(), &transport.Token{AccessToken: "t2", TokenType: "Bearer"}); err != nil {
		t.Fatal(err)
	}
	valid.Store("Bearer t2")
	p.ArmConns(func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet },
		testutil.Fault{After: 800, MidEvent: true})
	notifyAndWait(t, c, "cut", 60)
	if p.Stats().Cuts != 1 || refused.Load() != 0 {
		t.Fatalf("cuts %d, requests refused for their token %d: want 1 and 0", p.Stats().Cuts, refused.Load())
	}
}
