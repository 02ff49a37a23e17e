package bodydrain_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/internal/bodydrain"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests.
const wait = 10 * time.Second

const answer = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"refused"}}` + "\n"

// refusing serves a refusal without reading the body, through wrap's
// writer, then DropUnread; it reports on done when the handler returns.
func refusing(t *testing.T, wrap func(http.ResponseWriter) http.ResponseWriter) (addr string, done <-chan struct{}) {
	t.Helper()
	returned := make(chan struct{}, 8)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { returned <- struct{}{} }()
		w = wrap(w)
		h := w.Header()
		h.Set("Connection", "close")
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(answer)))
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, answer)
		bodydrain.DropUnread(w, r)
	}))
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://"), returned
}

// post sends a POST's headers, extra among them, declaring a body of
// 1,000 bytes of which it sends sent, and returns the connection.
func post(t *testing.T, addr, extra, sent string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(wait)) // the test's bound, not a synchronisation
	if _, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\n%sContent-Length: 1000\r\n\r\n%s", addr, extra, sent); err != nil {
		t.Fatal(err)
	}
	return conn
}

// wholeAnswer reads the answer on conn and requires it whole.
func wholeAnswer(t *testing.T, conn net.Conn) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != answer || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("answer %d %q (%v), want 403 %q whole", resp.StatusCode, body, err, answer)
	}
}

// returns waits for the handler to return while the client sends
// nothing more: a drain without a bound would wait for the client.
func returns(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("%s: the handler did not return while the client sent nothing more", what)
	}
}

// A client that sends a few bytes of its body and then nothing gets the
// answer whole, and holds the handler for Linger at most.
func TestDropUnreadAnswersATricklerWhole(t *testing.T) {
	addr, done := refusing(t, func(w http.ResponseWriter) http.ResponseWriter { return w })
	conn := post(t, addr, "", `{"jsonrpc"`)
	wholeAnswer(t, conn)
	returns(t, done, "a trickling body")
}

// A client that asked to wait for 100-continue, and so sends no body after
// the refusal, holds neither the handler nor the connection.
func TestDropUnreadDoesNotWaitForAnExpectingClient(t *testing.T) {
	addr, done := refusing(t, func(w http.ResponseWriter) http.ResponseWriter { return w })
	conn := post(t, addr, "Expect: 100-continue\r\n", "")
	wholeAnswer(t, conn)
	returns(t, done, "Expect: 100-continue")
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("after the answer: read %d bytes, %v; want the connection closed (EOF)", n, err)
	}
}

// flushOnly passes Flush through but no deadlines, as many middleware
// writers do.
type flushOnly struct{ w http.ResponseWriter }

func (f flushOnly) Header() http.Header         { return f.w.Header() }
func (f flushOnly) Write(b []byte) (int, error) { return f.w.Write(b) }
func (f flushOnly) WriteHeader(code int)        { f.w.WriteHeader(code) }
func (f flushOnly) Flush()                      { f.w.(http.Flusher).Flush() }

// Through a writer whose read deadline cannot be set, DropUnread reads
// nothing: a read it cannot bound would let a trickling client hold the
// handler.
func TestDropUnreadReadsNothingWithoutADeadline(t *testing.T) {
	addr, done := refusing(t, func(w http.ResponseWriter) http.ResponseWriter { return flushOnly{w} })
	_ = post(t, addr, "", `{"jsonrpc"`)
	returns(t, done, "a writer without deadlines")
}
