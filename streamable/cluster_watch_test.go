package streamable_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// DELETE on one replica cancels the session's requests running on another
// that holds neither its GET stream nor a pending call (so nothing else
// there listens to the session's bus), as soon as the store broadcasts the
// termination, with the termination as the cause; the request is never
// answered with a result.
func TestClusterDeleteCancelsRequestsOnOtherReplicas(t *testing.T) {
	type cancelled struct {
		cause error
		at    time.Time
	}
	started := make(chan struct{}, 1)
	causes := make(chan cancelled, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c := newClusterTB(t, streamable.Config{}, redisstore.Options{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("wait_for_cancel"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				causes <- cancelled{context.Cause(ctx), time.Now()}
				return nil, context.Cause(ctx)
			case <-release:
				return mcp.NewToolResultText("released"), nil
			}
		})
	})
	a := c.session(0)
	ctx := testutil.Context(t, 3*wait)
	answer := make(chan *testutil.Response, 1)
	go func() {
		resp, err := c.client(1, a).CallTool(ctx, "wait_for_cancel", nil)
		if err != nil {
			t.Error(err)
		}
		answer <- resp
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the tool call on B did not start")
	}

	del, err := c.client(0, a).Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	wantStatus(t, "DELETE on A", del.Status, http.StatusOK, del.Body)
	select {
	case got := <-causes:
		d := max(got.at.Sub(deleted), 0)
		t.Logf("B's request cancelled %v after DELETE on A answered: %v", d.Round(time.Microsecond), got.cause)
		if got.cause == nil || !strings.Contains(got.cause.Error(), "ended on another replica") {
			t.Errorf("B's request was cancelled with %v, want the session's end elsewhere as the cause", got.cause)
		}
		if d > time.Second {
			t.Errorf("B's request was cancelled %v after DELETE on A, want at once (well under 1 s)", d)
		}
	case <-time.After(wait):
		t.Fatalf("B's request is still running %v after DELETE on A answered 200", wait)
	}
	var resp *testutil.Response
	select {
	case resp = <-answer:
	case <-ctx.Done():
		t.Fatal("no answer for B's request")
	}
	if resp == nil {
		return // the call failed (reported above)
	}
	if resp.Status == http.StatusOK {
		last, err := resp.Last()
		switch {
		case err != nil:
			t.Logf("B's request: its stream was cut (%v)", err)
		case last.Error == nil:
			t.Fatalf("B's request was answered with a result after DELETE on A: %s", last.Result)
		default:
			t.Logf("B's request answered %d: error %d %q (id %s)", resp.Status, last.Error.Code, last.Error.Message, last.ID)
		}
	} else {
		t.Logf("B's request answered %d: %s", resp.Status, resp.Body)
	}
}

// A replica watches a session's bus only while it runs the session's
// requests, and for about a second after: one subscription per session
// with work, none for a session it merely served once.
func TestClusterWatchEndsWithTheWork(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	raw := redis.NewClient(&redis.Options{Addr: c.redis.Addr()})
	defer raw.Close()
	ctx := testutil.Context(t, wait)
	subscribed := func() int {
		chans, err := raw.PubSubChannels(ctx, "*bus:"+a.SessionID).Result()
		if err != nil {
			t.Fatal(err)
		}
		return len(chans)
	}
	for range 3 {
		toolText(t, c.client(1, a), "echo", map[string]any{"text": "on B"})
	}
	testutil.Eventually(t, wait, "B to stop watching the session's bus once its requests are done", func() bool {
		n := subscribed()
		if n != 0 {
			time.Sleep(50 * time.Millisecond) // spacing the samples of a bounded poll
		}
		return n == 0
	})
}
