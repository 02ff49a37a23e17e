package streamable_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// gatedSchema blocks its own encoding: it signals entered, then waits for
// gate. The request session encodes a server request after ended() let the
// call through and before the request is queued.
type gatedSchema struct {
	once    *sync.Once
	entered chan struct{}
	gate    chan struct{}
}

func (g gatedSchema) MarshalJSON() ([]byte, error) {
	g.once.Do(func() { close(g.entered) })
	<-g.gate
	return []byte(`{"type":"object"}`), nil
}

// A call through a POST's session that passed the ended() check just before
// the request returned, and is queued just after its writer stopped (and
// requestSession.close drained the queue), fails at once: it sees the
// stream's end and withdraws its request, rather than waiting out its
// caller's deadline.
func TestCallRacingWriterStopIsRefused(t *testing.T) {
	entered, gate := make(chan struct{}), make(chan struct{})
	type outcome struct {
		err  error
		took time.Duration
	}
	res := make(chan outcome, 1)
	r := newRig(t, streamable.Config{HeartbeatInterval: time.Hour}, func(s *server.MCPServer) {
		s.AddTool(mcp.NewTool("late"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sess := server.ClientSessionFromContext(ctx).(server.SessionWithElicitation)
			go func() {
				cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				start := time.Now()
				_, err := sess.RequestElicitation(cctx, mcp.ElicitationRequest{Params: mcp.ElicitationParams{
					Message:         "late",
					RequestedSchema: gatedSchema{once: new(sync.Once), entered: entered, gate: gate},
				}})
				res <- outcome{err, time.Since(start)}
			}()
			<-entered // the call is past ended(), not yet queued
			return mcp.NewToolResultText("ok"), nil
		})
	})
	c := testutil.NewClient(r.ts.URL)
	if _, err := c.Initialize(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallTool(testutil.Context(t, wait), "late", nil); err != nil {
		t.Fatal(err)
	}
	// The answer arrived: the request's writer has stopped and close() ran.
	close(gate)
	o := <-res
	if errors.Is(o.err, context.DeadlineExceeded) {
		t.Fatalf("a call that raced the writer's stop was queued where nothing reads it and waited out its deadline (%v, %v); want it refused at once", o.err, o.took)
	}
	t.Logf("racing call: %v after %v", o.err, o.took)
}
