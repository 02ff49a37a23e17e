package streamable_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// A trickled body that declares less than net/http's 256 KB discard limit
// gets its 408 at once: the answer goes out before what is left of the
// body is read (for bodydrain.Linger at most), and the connection closes.
func TestSmallTrickledBodyGets408(t *testing.T) {
	r := newBodyRig(t, streamable.Config{BodyReadTimeout: 200 * time.Millisecond})
	addr := r.ts.Listener.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", addr)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the client alive: one byte every 100ms, as a trickler would.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	done := make(chan string, 1)
	go func() {
		buf := make([]byte, 512)
		_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
		n, err := conn.Read(buf)
		done <- fmt.Sprintf("%q %v", buf[:n], err)
	}()
	got := <-done
	if !strings.Contains(got, "408") {
		t.Fatalf("no 408 within 3 s of a 200 ms BodyReadTimeout for a small trickled body: %s", got)
	}
}
