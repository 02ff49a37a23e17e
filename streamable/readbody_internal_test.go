package streamable

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/server"
)

// readBody buys no memory on the client's word alone, and holds the limit
// whatever the declared length says.
func TestReadBodyTrustsNoDeclaredLength(t *testing.T) {
	const limit = 1 << 20
	h := New(server.NewMCPServer("t", "1"), Config{MaxBodyBytes: limit})
	defer h.Close()
	post := func(declared int64, body io.Reader) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", body)
		r.ContentLength = declared
		return r
	}

	// A large declared length, little sent: the buffer is the first one.
	got, f := h.readBody(httptest.NewRecorder(), post(limit, strings.NewReader(`{"a":1}`)))
	if f != nil || string(got) != `{"a":1}` {
		t.Fatalf("short body: %q, %+v", got, f)
	}
	if cap(got) > firstBodyBuffer {
		t.Fatalf("a %d-byte body declared as %d bytes took a %d-byte buffer", len(got), limit, cap(got))
	}

	// A body longer than declared (one a middleware replaced) and than the
	// limit: refused, not read whole.
	if _, f := h.readBody(httptest.NewRecorder(), post(10, bytes.NewReader(make([]byte, 4*limit)))); f == nil || f.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit behind a small declared length: %+v, want 413", f)
	}

	// Exactly the limit, declared: read whole, grown as it came.
	body := bytes.Repeat([]byte("x"), limit)
	got, f = h.readBody(httptest.NewRecorder(), post(limit, bytes.NewReader(body)))
	if f != nil || !bytes.Equal(got, body) {
		t.Fatalf("a body of exactly the limit: %d bytes, %+v", len(got), f)
	}
}
