package streamable_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// DELETE cancels every request still running in the session, with the
// termination as the cause, and answers once they have returned; a request
// of another session runs on.
func TestDeleteCancelsRunningRequests(t *testing.T) {
	const running = 3
	started := make(chan string, running+1)
	causes := make(chan error, running+1)
	release := make(chan struct{})
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("wait_for_cancel"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			started <- server.ClientSessionFromContext(ctx).SessionID()
			select {
			case <-ctx.Done():
				causes <- context.Cause(ctx)
				return nil, context.Cause(ctx)
			case <-release:
				return mcp.NewToolResultText("released"), nil
			}
		})
	})
	c, other := r.session(), r.session()
	ctx := testutil.Context(t, wait)
	answers := make(chan *testutil.Response, running+1)
	call := func(c *testutil.Client) {
		resp, err := c.CallTool(ctx, "wait_for_cancel", nil)
		if err != nil {
			t.Error(err)
		}
		answers <- resp
	}
	for range running {
		go call(c)
	}
	go call(other)
	for range running + 1 {
		select {
		case <-started:
		case <-ctx.Done():
			t.Fatal("the tool calls did not all start")
		}
	}

	del, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", del.Status, http.StatusOK, del.Body)
	// Not eventually: DELETE answers once the session's requests returned.
	for i := range running {
		select {
		case cause := <-causes:
			if cause == nil || cause == context.Canceled {
				t.Fatalf("request %d was cancelled with %v, want the termination as the cause", i, cause)
			}
		default:
			t.Fatalf("DELETE answered with request %d still running", i)
		}
	}
	for range running {
		<-answers
	}
	// The other session's request is still running; it finishes normally.
	select {
	case cause := <-causes:
		t.Fatalf("the other session's request was cancelled too: %v", cause)
	default:
	}
	close(release)
	resp := <-answers
	if resp == nil {
		t.Fatal("no answer for the other session's call")
	}
	wantStatus(t, "other session's tools/call", resp.Status, http.StatusOK, resp.Body)
	last, err := resp.Last()
	if err != nil || last.Error != nil {
		t.Fatalf("the other session's call: %+v, %v", last, err)
	}
}
