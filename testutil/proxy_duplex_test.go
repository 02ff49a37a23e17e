package testutil_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// A backend may begin its answer before the proxy has forwarded all of the
// request's body (an SSE response opens as soon as the request is read;
// the proxy's own last read of the body, for its end, can come after
// that). The proxy must go on forwarding the body and then the answer:
// net/http's HTTP/1 server otherwise drains and closes a request body once
// its handler writes the response's headers, the proxy's forwarding read
// of it fails ("invalid Read on closed Body"), and the transport closes
// the backend connection, cutting an answer already under way (seen as a
// TypeScript client's SSE stream "terminated" about once in 500 calls).
//
// Made deterministic here: the backend flushes its headers before reading
// the body, and the client sends the body's second half only once those
// headers reached it through the proxy.
func TestRoundRobinProxyForwardsABodyAfterTheAnswerBegan(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("backend: %v", err)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		body, err := io.ReadAll(r.Body)
		if err != nil {
			fmt.Fprintf(w, "data: read error %v\n\n", err)
			return
		}
		fmt.Fprintf(w, "data: got %s\n\n", body)
	}))
	t.Cleanup(backend.Close)
	proxyURL := testutil.StartRoundRobinProxy(t, backend.URL)

	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, proxyWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(proxyWait)); err != nil {
		t.Fatal(err)
	}
	first, second := "first-half;", "second-half"
	if _, err := fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, len(first)+len(second), first); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the answer's headers: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if _, err := io.WriteString(conn, second); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if want := "data: got " + first + second + "\n\n"; err != nil || string(got) != want {
		t.Fatalf("answer %q, %v; want %q, whole", got, err, want)
	}
}
