package streamable_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A JSON answer goes out whole with a Content-Length, not chunked, at every
// size up to the one above which it is written under a deadline, on both
// sides of net/http's own buffer (2 KiB), where the transport stops leaving
// the length to net/http.
func TestJSONAnswerCarriesItsLength(t *testing.T) {
	// The default heartbeat: with the tests' 5 ms one, an answer slowed by a
	// loaded machine would go out as SSE after a keep-alive.
	r := newRig(t, streamable.Config{HeartbeatInterval: defaultHeartbeat})
	c := r.session()
	for _, n := range []int{10, 1900, 1990, 2000, 2010, 2100, 3900} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			call := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
				"params": map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", n)}}}
			body, _ := json.Marshal(call)
			req, err := c.NewRequest(testutil.Context(t, wait), http.MethodPost, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), got)
			}
			if len(resp.TransferEncoding) != 0 || resp.ContentLength != int64(len(got)) {
				t.Fatalf("a %d-byte answer went out with Transfer-Encoding %v and Content-Length %d",
					len(got), resp.TransferEncoding, resp.ContentLength)
			}
			if !strings.Contains(string(got), strings.Repeat("x", n)) {
				t.Fatalf("the answer lost the text: %.200s", got)
			}
		})
	}
}
