package streamable_test

import (
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// A method MCP does not use gets 405 with an Allow header listing the
// methods this configuration serves, not those it also refuses.
func TestMethodNotAllowedListsWhatIsServed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   streamable.Config
		allow string
	}{
		{"sessions", streamable.Config{}, "GET, POST, DELETE"},
		{"stateless", streamable.Config{Stateless: true}, "POST"},
		{"no streaming", streamable.Config{DisableStreaming: true}, "POST, DELETE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.cfg)
			req, err := http.NewRequestWithContext(testutil.Context(t, wait), http.MethodPut, r.ts.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != tc.allow {
				t.Fatalf("PUT: %d Allow %q, want 405 Allow %q", resp.StatusCode, resp.Header.Get("Allow"), tc.allow)
			}
		})
	}
}
