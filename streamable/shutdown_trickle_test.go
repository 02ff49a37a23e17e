package streamable_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// Once Shutdown has begun, a POST answered 503 before its body is read is
// answered at once: nothing waits for a trickling body first (what follows
// the answer is read for bodydrain.Linger at most, then the connection
// closes).
func TestShutdownRefusedBodyDoesNotWaitForTrickle(t *testing.T) {
	r := newRig(t, streamable.Config{BodyReadTimeout: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A body of 1000 bytes of which 10 are sent; the rest never comes.
	fmt.Fprint(conn, "POST / HTTP/1.1\r\nHost: "+strings.TrimPrefix(r.ts.URL, "http://")+"\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
	// Bound of the assertion, not a synchronisation: a refused request is
	// answered at once.
	_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a POST refused by Shutdown while its body trickles: %v", err)
	}
	resp.Body.Close()
	t.Logf("status %d, Connection: %q", resp.StatusCode, resp.Header.Get("Connection"))
}
