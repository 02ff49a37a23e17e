package streamable_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A body over MaxBodyBytes is refused on its Content-Length, before it is
// read, and the connection closed. The 413 must reach a client still
// sending that body: a connection closed with the body unread is reset,
// and Go's HTTP client, its write failing first, reports the reset and
// drops the answer it was sent. So too on a request that asks to close
// the connection itself (Connection: close), whose unread body net/http
// does not read after the handler.
func TestRefusedBodyAnswerReachesAClientStillSending(t *testing.T) {
	const limit = 1024
	r := newRig(t, streamable.Config{MaxBodyBytes: limit})
	c := r.session()
	const rounds = 60
	for _, tc := range []struct {
		size    int
		closing bool
	}{{4 << 10, false}, {64 << 10, false}, {200 << 10, false}, {4 << 10, true}, {64 << 10, true}, {200 << 10, true}} {
		name := fmt.Sprintf("%d KiB", tc.size>>10)
		if tc.closing {
			name += ", Connection: close"
		}
		t.Run(name, func(t *testing.T) {
			body := []byte(paddedPing(t, tc.size))
			lost := 0
			var first error
			for range rounds {
				req, err := c.NewRequest(testutil.Context(t, wait), http.MethodPost, body)
				if err != nil {
					t.Fatal(err)
				}
				req.Close = tc.closing
				resp, err := c.Do(req)
				switch {
				case err != nil:
					lost++
					if first == nil {
						first = err
					}
				case resp.Status != http.StatusRequestEntityTooLarge:
					t.Fatalf("status %d (body %q), want 413", resp.Status, resp.Body)
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d 413 answers lost to a client still sending its body; the first: %v", lost, rounds, first)
			}
		})
	}
	wantUntouched(t, r, c, r.h.Stats().Sessions)
}
