package streamable_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// noHijack is a middleware's ResponseWriter that flushes and passes write
// deadlines on but has no Hijack and does not unwrap: lifeline cannot take
// its connection over.
type noHijack struct{ w http.ResponseWriter }

func (n noHijack) Header() http.Header         { return n.w.Header() }
func (n noHijack) Write(p []byte) (int, error) { return n.w.Write(p) }
func (n noHijack) WriteHeader(status int)      { n.w.WriteHeader(status) }
func (n noHijack) FlushError() error           { return http.NewResponseController(n.w).Flush() }
func (n noHijack) SetWriteDeadline(t time.Time) error {
	return http.NewResponseController(n.w).SetWriteDeadline(t)
}

// A resumable request runs on its handler goroutine behind net/http's
// HTTP/1 server and on a worker goroutine elsewhere (HTTP/2, a writer
// without Hijack). Either way a response let go of while its request
// runs (CloseSSEStream) ends at once and cleanly, the request goes on, its
// client resumes for the answer, and the client's next requests are
// served, on the same connection where it is HTTP/1: on the handler
// goroutine the writer took the connection over (Hijack), ended the
// response and gave the connection back to the server.
func TestLetGoWhileTheRequestRunsOnEveryKindOfResponse(t *testing.T) {
	for _, tc := range []struct {
		name string
		// start serves h and returns its URL and a client for it;
		// connStates is given each connection's changes of state.
		start func(t *testing.T, h http.Handler, connStates func(net.Conn, http.ConnState)) (string, *http.Client)
		// inline: the request ran on its handler goroutine (the let-go
		// took one connection over).
		inline bool
	}{
		{"http1", func(t *testing.T, h http.Handler, cs func(net.Conn, http.ConnState)) (string, *http.Client) {
			ts := httptest.NewUnstartedServer(h)
			ts.Config.ConnState = cs
			ts.Start()
			t.Cleanup(ts.Close)
			return ts.URL, ts.Client()
		}, true},
		{"http1-without-hijack", func(t *testing.T, h http.Handler, cs func(net.Conn, http.ConnState)) (string, *http.Client) {
			ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				h.ServeHTTP(noHijack{w}, r)
			}))
			ts.Config.ConnState = cs
			ts.Start()
			t.Cleanup(ts.Close)
			return ts.URL, ts.Client()
		}, false},
		{"http2", func(t *testing.T, h http.Handler, cs func(net.Conn, http.ConnState)) (string, *http.Client) {
			ts := httptest.NewUnstartedServer(h)
			ts.Config.ConnState = cs
			ts.EnableHTTP2 = true
			ts.StartTLS()
			t.Cleanup(ts.Close)
			return ts.URL, ts.Client()
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			released := make(chan bool, 1)
			finish := make(chan struct{})
			s := demotools.NewServer("lifeline-test", "1")
			s.AddTool(mcp.NewTool("polled"), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				released <- streamable.CloseSSEStream(ctx)
				select {
				case <-finish: // the request runs on after its response ended
				case <-ctx.Done():
					return nil, context.Cause(ctx)
				}
				return mcp.NewToolResultText("answered after the let-go"), nil
			})
			h := streamable.New(s, streamable.Config{HeartbeatInterval: testHeartbeat})
			var mu sync.Mutex
			news, hijacked := 0, 0
			url, hc := tc.start(t, h, func(_ net.Conn, st http.ConnState) {
				mu.Lock()
				defer mu.Unlock()
				switch st {
				case http.StateNew:
					news++
				case http.StateHijacked:
					hijacked++
				}
			})
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				defer cancel()
				if err := h.Shutdown(ctx); err != nil {
					t.Errorf("Shutdown: %v", err)
				}
			})
			c := testutil.NewClient(url)
			c.HTTP = hc
			ctx := testutil.Context(t, wait)
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			call, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
				"params": map[string]any{"name": "polled"}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(call.Close)
			pr := &postReader{t: t, ids: map[string]bool{}}
			var end error
			for {
				ev, err := call.Next(ctx)
				if err != nil {
					end = err
					break
				}
				pr.take(ev)
			}
			if !bbAwait(t, released, wait, "CloseSSEStream returned") {
				t.Fatal("CloseSSEStream reported false")
			}
			if pr.lastID == "" || pr.answer != nil {
				t.Fatalf("the let-go response carried ids %v and answer %+v: want the priming id and no answer", pr.ids, pr.answer)
			}
			if !errors.Is(end, io.EOF) {
				t.Fatalf("the let-go response ended with %v: want its clean end", end)
			}
			// The tool still runs; the client's next requests are served.
			for i := range 3 {
				resp, err := c.Call(ctx, "ping", nil)
				if err != nil || resp.Status != http.StatusOK {
					t.Fatalf("ping %d after the let-go: %+v %v", i, resp, err)
				}
			}
			mu.Lock()
			if want := map[bool]int{true: 1, false: 0}[tc.inline]; hijacked != want || news != 1+want {
				t.Errorf("connections: %d new, %d taken over; want %d taken over and given back, no other", news, hijacked, want)
			}
			mu.Unlock()
			close(finish)
			resumed := openResume(t, c, pr.lastID)
			wantStatus(t, "GET resuming the let-go response", resumed.Status, http.StatusOK, resumed.Body)
			pr.until(ctx, resumed, -1)
			if string(pr.answer.ID) != "5" || !strings.Contains(string(pr.answer.Result), "answered after the let-go") {
				t.Fatalf("answer %+v", pr.answer)
			}
			if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
				t.Fatalf("DELETE: %+v %v", resp, err)
			}
		})
	}
}

// The connections of let-go responses that wait for their client's next
// request are bounded by MaxSessions: past it, one is closed (its client
// reads the response's end, then the close), and those within stay open
// for their clients' next requests. Which one is closed is the one handed
// back last, and a client reads its response's end before its connection
// is handed back, so the test does not assume it is the last opened.
func TestLetGoConnectionsWaitingForTheirClientsAreBounded(t *testing.T) {
	const bound = 2
	r := newReviewRigOn(t, nil, nil, false, streamable.Config{MaxSessions: bound})
	var conns []net.Conn
	var readers []*bufio.Reader
	for range bound + 1 {
		c, br := r.rawLetGo(t)
		conns, readers = append(conns, c), append(readers, br)
	}
	// Every connection is read until one ends; then the others' reads are
	// cut short, and each must have been waiting still.
	type ended struct {
		i   int
		err error
	}
	ends := make(chan ended, len(conns))
	for i := range conns {
		_ = conns[i].SetReadDeadline(time.Now().Add(wait))
		go func() {
			_, err := readers[i].ReadByte()
			ends <- ended{i, err}
		}()
	}
	first := <-ends
	if !errors.Is(first.err, io.EOF) {
		t.Fatalf("no let-go connection past the bound of %d waiting ones was closed: connection %d: %v", bound, first.i, first.err)
	}
	for i := range conns {
		if i != first.i {
			_ = conns[i].SetReadDeadline(time.Now().Add(100 * time.Millisecond)) // a bounded look: it must not end
		}
	}
	for range bound {
		if e := <-ends; !isTimeout(e.err) {
			t.Fatalf("waiting connection %d within the bound ended: %v", e.i, e.err)
		}
	}
}

// isTimeout reports whether err is a read deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
