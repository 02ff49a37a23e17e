package streamable_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// A POST refused before its body is read for what its headers say (415 for
// its Content-Type, 406 for its Accept) is answered at once and closes the
// connection: nothing may first wait for a trickling body (up to 256 KiB,
// as slowly as the client cares to send it, with no BodyReadTimeout bound,
// holding the handler and the server's Shutdown); what follows the answer
// is read for bodydrain.Linger at most.
func TestHeaderRefusalDoesNotWaitForTrickle(t *testing.T) {
	r := newRig(t, streamable.Config{BodyReadTimeout: time.Hour})
	host := strings.TrimPrefix(r.ts.URL, "http://")
	for _, tc := range []struct {
		name, headers string
		want          int
	}{
		{"content-type", "Content-Type: text/plain\r\nAccept: application/json, text/event-stream\r\n", http.StatusUnsupportedMediaType},
		{"accept", "Content-Type: application/json\r\nAccept: text/html\r\n", http.StatusNotAcceptable},
		{"origin", "Origin: http://evil.example\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", host)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A body of 1000 bytes of which 10 are sent; the rest never comes.
			fmt.Fprint(conn, "POST / HTTP/1.1\r\nHost: "+host+"\r\n"+tc.headers+"Content-Length: 1000\r\n\r\n{\"jsonrpc\"")
			// Bound of the assertion, not a synchronisation: a refused
			// request is answered at once.
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a POST refused before its body is read while its body trickles: %v", err)
			}
			// Whole, though what follows it is read for a while first.
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || !json.Valid(body) {
				t.Fatalf("the answer's body %q (%v) is not whole", body, err)
			}
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
			t.Logf("status %d, Connection: %q", resp.StatusCode, resp.Header.Get("Connection"))
		})
	}
}

// A POST refused for its headers (406, 415) whose body arrives at once
// gets an error echoing its message's id.
func TestHeaderRefusalEchoesTheRequestID(t *testing.T) {
	r := newRig(t, streamable.Config{})
	for _, tc := range []struct {
		name, contentType, accept string
		want                      int
	}{
		{"content-type", "text/plain", "application/json, text/event-stream", http.StatusUnsupportedMediaType},
		{"accept", "application/json", "text/html", http.StatusNotAcceptable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, r.ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":42,"method":"tools/list"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", tc.contentType)
			req.Header.Set("Accept", tc.accept)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || resp.StatusCode != tc.want || string(m.ID) != "42" {
				t.Fatalf("status %d id %s (%v); want %d echoing id 42", resp.StatusCode, m.ID, err, tc.want)
			}
		})
	}
}
