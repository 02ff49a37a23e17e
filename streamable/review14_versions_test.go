package streamable_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// TestReview14InitializeVersionKeysDifferingInCase: an initialize whose
// params name protocolVersion under several spellings differing in case
// (JSON decoding into a struct, as mcp-go's does, takes the last one) must
// not end on a version Config.ProtocolVersions leaves out: the transport
// has to read the version the way mcp-go will, not one picked at random.
func TestReview14InitializeVersionKeysDifferingInCase(t *testing.T) {
	served := []string{mcp.ProtocolVersion20250618}
	r := newRig(t, streamable.Config{ProtocolVersions: served})
	ctx := testutil.Context(t, wait)
	// Served versions under every spelling but the last, which asks for
	// 2025-03-26 (not served, and the one version with batches).
	spellings := []string{"protocolversion", "PROTOCOLVERSION", "ProtocolVersion", "PrOtOcOlVeRsIoN",
		"pROTOCOLvERSION", "protocolVERSION", "PROTOCOLversion", "protocolVersion"}
	var b strings.Builder
	for i, k := range spellings {
		v := mcp.ProtocolVersion20250618
		if i == len(spellings)-1 {
			v = mcp.ProtocolVersion20250326
		}
		fmt.Fprintf(&b, "%q:%q,", k, v)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{` + b.String() +
		`"capabilities":{},"clientInfo":{"name":"dup","version":"1"}}}`
	for i := range 12 {
		resp, err := r.client().PostRaw(ctx, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Status != http.StatusOK {
			continue // refused: no session on an unserved version either
		}
		m, err := resp.Last()
		if err != nil || m.Error != nil {
			continue
		}
		var res struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			t.Fatal(err)
		}
		if res.ProtocolVersion != mcp.ProtocolVersion20250618 {
			t.Fatalf("attempt %d: session negotiated %q; Config.ProtocolVersions serves only %q", i, res.ProtocolVersion, served)
		}
	}
}

// TestReview14RenegotiatedInitializeKeepsItsID: an initialize rewritten to
// ask for a served version is answered with the id the transport read
// from it (the last of keys differing in case, as encoding/json and mcp-go
// read them), as it is when no rewrite is needed: the rewrite must not
// change which of the client's members mcp-go sees.
func TestReview14RenegotiatedInitializeKeepsItsID(t *testing.T) {
	ctx := testutil.Context(t, wait)
	for _, versions := range [][]string{nil, {mcp.ProtocolVersion20250618}} {
		r := newRig(t, streamable.Config{ProtocolVersions: versions})
		body := `{"jsonrpc":"2.0","id":1,"ID":2,"method":"initialize","params":{"protocolVersion":"` +
			mcp.ProtocolVersion20250326 + `","capabilities":{},"clientInfo":{"name":"dup","version":"1"}}}`
		resp, err := r.client().PostRaw(ctx, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		m, err := resp.Last()
		if err != nil {
			t.Fatalf("versions %q: %v (status %d, body %s)", versions, err, resp.Status, resp.Body)
		}
		if string(m.ID) != "2" {
			t.Errorf("versions %q: initialize answered with id %s, want 2 (the last id member, as read without a rewrite)", versions, m.ID)
		}
	}
}
