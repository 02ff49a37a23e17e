package streamable_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

const watchedURI = "test://watched"

// subscribeRig serves a resource clients may subscribe to.
func subscribeRig(t *testing.T, cfg streamable.Config) *rig {
	return newRig(t, cfg, func(s *server.MCPServer) {
		server.WithResourceCapabilities(true, true)(s)
		s.AddResource(mcp.NewResource(watchedURI, "watched"), func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: watchedURI, Text: "v1"}}, nil
		})
	})
}

// subscribe sends resources/subscribe and returns the JSON-RPC answer,
// which must be a 200 echoing the request's id.
func subscribe(t *testing.T, c *testutil.Client, uri string) testutil.Message {
	t.Helper()
	resp, err := c.Call(testutil.Context(t, wait), "resources/subscribe", map[string]any{"uri": uri})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "resources/subscribe", resp.Status, http.StatusOK, resp.Body)
	m, err := resp.Last()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.ID) == 0 {
		t.Fatalf("answer without the request's id: %s", resp.Body)
	}
	return m
}

func wantSubscribeError(t *testing.T, m testutil.Message, says string) {
	t.Helper()
	if m.Error == nil || m.Error.Code != mcp.RESOURCE_NOT_FOUND || !strings.Contains(m.Error.Message, says) {
		t.Fatalf("got %+v, want error %d saying %q", m, mcp.RESOURCE_NOT_FOUND, says)
	}
}

// A subscription to a resource that does not exist, or by a URI longer
// than MaxSubscriptionURIBytes, is refused and not kept: big URIs do not
// grow the heap.
func TestSubscribeRefusesUnknownAndOverlongURIs(t *testing.T) {
	r := subscribeRig(t, streamable.Config{})
	c := r.session()
	if m := subscribe(t, c, watchedURI); m.Error != nil {
		t.Fatalf("subscribe to an existing resource: %+v", m.Error)
	}
	wantSubscribeError(t, subscribe(t, c, "test://nothing-here"), `resource "test://nothing-here" not found`)
	wantSubscribeError(t, subscribe(t, c, "test://"+strings.Repeat("x", streamable.MaxSubscriptionURIBytes)),
		fmt.Sprint("at most ", streamable.MaxSubscriptionURIBytes))

	huge := "test://" + strings.Repeat("x", bigBytes)
	subscribe(t, c, huge+"warm-up")
	before := heapBytes()
	for i := range bigSessions {
		wantSubscribeError(t, subscribe(t, c, fmt.Sprint(huge, i)), "at most")
	}
	grew := heapGrowth(before)
	t.Logf("heap after %d subscribes to %d KiB URIs: +%d KiB", bigSessions, bigBytes>>10, grew>>10)
	if grew > heapBound() {
		t.Fatalf("heap grew %d KiB for %d refused subscriptions", grew>>10, bigSessions)
	}
}

// A session holds at most MaxSubscriptionsPerSession subscriptions;
// subscribing again to one it has, or after an unsubscribe, still works.
// Resources served through the MCPServer's templates exist, on whichever
// page of resources/templates/list their template is.
func TestSubscriptionsPerSessionAreBounded(t *testing.T) {
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		server.WithResourceCapabilities(true, true)(s)
		server.WithPaginationLimit(1)(s)
		noop := func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil }
		// Listed by name: "a-other" on the first page, "b-item" on the second.
		s.AddResourceTemplate(mcp.NewResourceTemplate("other://{x}", "a-other"), noop)
		s.AddResourceTemplate(mcp.NewResourceTemplate("test://item/{n}", "b-item"), noop)
	})
	c := r.session()
	for i := range streamable.MaxSubscriptionsPerSession {
		if m := subscribe(t, c, fmt.Sprint("test://item/", i)); m.Error != nil {
			t.Fatalf("subscription %d: %+v", i, m.Error)
		}
	}
	wantSubscribeError(t, subscribe(t, c, "test://item/one-more"), "the most allowed")
	if m := subscribe(t, c, "test://item/0"); m.Error != nil {
		t.Fatalf("subscribing again to a subscribed resource: %+v", m.Error)
	}
	resp, err := c.Call(testutil.Context(t, wait), "resources/unsubscribe", map[string]any{"uri": "test://item/0"})
	if err != nil || resp.Status != http.StatusOK {
		t.Fatalf("unsubscribe: %v %+v", err, resp)
	}
	if m := subscribe(t, c, "test://item/one-more"); m.Error != nil {
		t.Fatalf("subscription after an unsubscribe: %+v", m.Error)
	}
}

// The session's own resources and resource templates can be subscribed to.
func TestSubscribeToSessionResources(t *testing.T) {
	r := subscribeRig(t, streamable.Config{})
	c := r.session()
	noop := func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) { return nil, nil }
	if err := r.mcp.AddSessionResource(c.SessionID, mcp.NewResource("test://mine", "mine"), noop); err != nil {
		t.Fatal(err)
	}
	tmpl := mcp.NewResourceTemplate("test://doc/{id}", "doc")
	if err := r.mcp.AddSessionResourceTemplate(c.SessionID, tmpl, func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, uri := range []string{"test://mine", "test://doc/7"} {
		if m := subscribe(t, c, uri); m.Error != nil {
			t.Fatalf("subscribe %s: %+v", uri, m.Error)
		}
	}
	wantSubscribeError(t, subscribe(t, r.session(), "test://mine"), "not found")
}
