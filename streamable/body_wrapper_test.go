package streamable_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// valueWriter is a middleware's ResponseWriter wrapper passed by value; its
// func field makes it an unhashable map key.
type valueWriter struct {
	http.ResponseWriter
	onWrite func()
}

func (w valueWriter) Write(p []byte) (int, error) { w.onWrite(); return w.ResponseWriter.Write(p) }

// A middleware's ResponseWriter wrapper passed by value, not comparable,
// is served like any other: body reads are not keyed by the writer.
func TestBodyReadThroughAValueWriterWrapper(t *testing.T) {
	r := newRig(t, streamable.Config{})
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("POST through a value-type ResponseWriter wrapper panicked: %v", v)
			}
		}()
		r.h.ServeHTTP(valueWriter{ResponseWriter: rec, onWrite: func() {}}, req)
	}()
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}
