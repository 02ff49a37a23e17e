package lifelineclient_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A call the server took (its POST was answered 200 and the stream primed
// with an event id) and whose stream then cannot be resumed because the
// resuming GET gets 404 must not be sent again on a new session: the
// server may have run it. mcp-go resumes a stream the server ended itself
// (SEP-1699) and reports that GET's 404 as ErrSessionTerminated.
func TestCallTheServerTookIsNotSentAgainAfterA404OnItsResume(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	var took atomic.Bool
	front := count(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if peekMethod(r) == "tools/call" && took.CompareAndSwap(false, true) {
			// The server takes the call, primes the stream and ends it:
			// the client is to poll with Last-Event-ID.
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: took-1\nretry: 1\ndata:\n\n")
			return
		}
		if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "took-1" {
			http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"test: session not found"}}`, http.StatusNotFound)
			return
		}
		l.ts.Config.Handler.ServeHTTP(w, r)
	}))
	ts := newFront(t, front)
	c := connect(t, ts.URL, lifelineclient.Config{}, nil)
	_, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if got := front.get("tools/call"); got != 1 {
		t.Fatalf("tools/call POSTs: %d, want 1 (the server took the call; sending it again may run it twice); call returned %v", got, err)
	}
	if err == nil {
		t.Fatal("call whose stream could not be resumed succeeded")
	}
}
