package auth_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// A POST refused for its token before its body is read is answered, and
// the connection closed, without losing the answer to a client still
// sending that body: closed with the body unread, the connection would be
// reset, and Go's HTTP client, its write failing first, drops the 401 it
// was sent (and with it the challenge that starts its OAuth flow). So
// too on a request that asks to close the connection (Connection: close).
func TestRefusalReachesAClientStillSendingItsBody(t *testing.T) {
	ctx := testCtx(t)
	is := newIssuer()
	url := serve(t, is, is.options(nil), streamable.Config{})
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 200<<10) + `"}}`
	const rounds = 60
	lost := 0
	var first error
	for i := range 2 * rounds {
		req, err := client(url, "").NewRequest(ctx, http.MethodPost, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Close = i%2 == 1
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lost++
			if first == nil {
				first = err
			}
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Fatalf("status %d, connection closing %v: want 401 and a closing connection", resp.StatusCode, resp.Close)
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d 401 answers lost to a client still sending its body; the first: %v", lost, 2*rounds, first)
	}
}
