package lifelineclient_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	lifelineclient "github.com/lifeline-mcp/lifeline/client"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// rawTransport is an http.RoundTripper that is not net/http's Transport
// (as a tunnel's or an HTTP/3 one is): it writes each request on a
// connection of its own and reads the response. With lose set, the next
// tools/call goes through and is answered, and then fails, as a connection
// reset while the response is read would: the server ran the call.
type rawTransport struct {
	lose atomic.Bool
}

func (rt *rawTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var d net.Dialer
	conn, err := d.DialContext(req.Context(), "tcp", req.URL.Host)
	if err != nil {
		return nil, err
	}
	lose := req.Method == http.MethodPost && peekMethod(req) == "tools/call" && rt.lose.CompareAndSwap(true, false)
	if err := req.Write(conn); err != nil {
		conn.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if lose {
		// The server ran the call and answered; the answer is lost.
		io.Copy(io.Discard, resp.Body)
		conn.Close()
		return nil, errors.New("test: connection reset while the response was read")
	}
	resp.Body = closeBoth{resp.Body, conn}
	return resp, nil
}

// closeBoth is a response body that closes its connection with it.
type closeBoth struct {
	io.ReadCloser
	conn net.Conn
}

func (b closeBoth) Close() error {
	err := b.ReadCloser.Close()
	b.conn.Close()
	return err
}

// A POST that reached the server through a base RoundTripper that gives
// net/http no trace to follow (no httptrace callbacks fire) must not be
// sent again when it fails: only a POST known never to have reached the
// server may be.
func TestPOSTThroughAnUntracedTransportIsNotSentAgain(t *testing.T) {
	l := newLifeline(t, streamable.Config{})
	raw := &rawTransport{}
	c := connect(t, l.ts.URL, lifelineclient.Config{HTTPClient: &http.Client{Transport: raw}}, nil)
	raw.lose.Store(true)
	_, err := c.call(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
	if got := l.cnt.get("tools/call"); got != 1 {
		t.Fatalf("tools/call POSTs: %d, want 1 (it reached the server; sending it again may run it twice); call returned %v", got, err)
	}
	if err == nil {
		t.Fatal("call whose connection failed after it was written succeeded")
	}
}
