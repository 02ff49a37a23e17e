package streamable_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestDeleteClosesStreamBeforeAnswering(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	if _, err := s.Next(ctx); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	// Not eventually: when DELETE has answered, the handler has exited.
	if st := r.h.Stats(); st.GetStreams != 0 || st.Sessions != 0 {
		t.Fatalf("after DELETE: %+v, want no stream and no session", st)
	}
	select {
	case <-s.Ended():
	case <-ctx.Done():
		t.Fatal("client stream still open after DELETE")
	}
	post, err := c.CallTool(ctx, "echo", map[string]any{"text": "x"})
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "POST after DELETE", post.Status, post.Body)
	get, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "GET after DELETE", get.Status, get.Body)
	again, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, "DELETE after DELETE", again.Status, again.Body)
}

func TestDeleteUnregistersOnceAndFailsPendingRequests(t *testing.T) {
	var registered, unregistered atomic.Int64
	sampleErr := make(chan error, 1)
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { registered.Add(1) })
		hooks.AddOnUnregisterSession(func(context.Context, server.ClientSession) { unregistered.Add(1) })
		server.WithHooks(hooks)(s)
		s.EnableSampling()
		s.AddTool(mcp.NewTool("ask"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_, err := s.RequestSampling(ctx, mcp.CreateMessageRequest{CreateMessageParams: mcp.CreateMessageParams{
				Messages:  []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("hi")}},
				MaxTokens: 10,
			}})
			sampleErr <- err
			return mcp.NewToolResultText("unreachable"), nil
		})
	})
	c := r.session()
	ctx := testutil.Context(t, wait)
	call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": "ask"}})
	if err != nil {
		t.Fatal(err)
	}
	defer call.Close()
	// The sampling request arrives on the call's own stream.
	req, err := call.NextMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if req.Method != "sampling/createMessage" {
		t.Fatalf("got %+v, want sampling/createMessage", req)
	}
	resp, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	select {
	case err := <-sampleErr:
		if err == nil || !strings.Contains(err.Error(), "DELETE") {
			t.Fatalf("pending sampling request failed with %v, want an error naming DELETE", err)
		}
	default:
		t.Fatal("the pending sampling request had not failed when DELETE answered")
	}
	if registered.Load() != 1 || unregistered.Load() != 1 {
		t.Fatalf("register hooks %d, unregister hooks %d; want 1 and 1", registered.Load(), unregistered.Load())
	}
}

func TestGetDeleteRacesLeaveNothingBehind(t *testing.T) {
	const rounds = 1000
	r := newRig(t, streamable.Config{})
	ctx := testutil.Context(t, 2*wait)
	var streams []*testutil.Stream
	var mu sync.Mutex
	for i := range rounds {
		c := r.session()
		b := testutil.NewBarrier(2)
		var wg sync.WaitGroup
		var getStatus int
		var getErr, delErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			if getErr = b.Wait(ctx); getErr != nil {
				return
			}
			s, err := c.OpenStream(ctx)
			if err != nil {
				getErr = err
				return
			}
			getStatus = s.Status
			mu.Lock()
			streams = append(streams, s)
			mu.Unlock()
		}()
		go func() {
			defer wg.Done()
			if delErr = b.Wait(ctx); delErr != nil {
				return
			}
			resp, err := c.Delete(ctx)
			if err == nil && resp.Status != http.StatusOK {
				err = errors.New("DELETE answered " + http.StatusText(resp.Status))
			}
			delErr = err
		}()
		wg.Wait()
		if getErr != nil || delErr != nil {
			t.Fatalf("round %d: GET %v, DELETE %v", i, getErr, delErr)
		}
		if getStatus != http.StatusOK && getStatus != http.StatusNotFound {
			t.Fatalf("round %d: GET answered %d, want 200 (then closed) or 404", i, getStatus)
		}
	}
	st := r.h.Stats()
	if st.Sessions != 0 || st.GetStreams != 0 {
		t.Fatalf("after %d races: %+v, want zero sessions and zero streams", rounds, st)
	}
	// Every GET that got 200 was closed by its DELETE.
	for i, s := range streams {
		select {
		case <-s.Ended():
		case <-ctx.Done():
			t.Fatalf("stream %d is still open", i)
		}
		s.Close()
	}
}
