package streamable

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzEventID checks the parsing of Last-Event-ID values: an id that
// splits names a stream this transport writes and a non-empty log id, and
// a stream name and log id this transport writes always split back.
func FuzzEventID(f *testing.F) {
	for _, s := range []string{"get/1-0", "get/", "/1", "p0123456789abcdef/1-0", "p0123456789abcdef-MQ/9",
		"p0123456789abcdef-/1", "pXYZ/1", "get/a/b", "get/1\r\n", "", strings.Repeat("p", 300)} {
		f.Add(s, `"req"`, "1-0")
	}
	f.Fuzz(func(t *testing.T, id, requestID, logID string) {
		if stream, lid, ok := splitEventID(id); ok {
			if lid == "" || !validStreamName(stream) || wireEventID(stream, lid) != id {
				t.Fatalf("splitEventID(%q) = %q, %q: not a stream and log id that make it", id, stream, lid)
			}
			if rid := streamRequestID(stream); rid != nil && !json.Valid(rid) {
				t.Fatalf("stream %q carries a request id that is not JSON: %q", stream, rid)
			}
		}
		if validEventID(id) && strings.ContainsAny(id, "\r\n") {
			t.Fatalf("validEventID(%q) with a line break", id)
		}
		raw := json.RawMessage(requestID)
		if !json.Valid(raw) {
			raw = nil
		}
		name := newPostStreamName(raw)
		if !isPostStream(name) {
			t.Fatalf("newPostStreamName(%q) = %q, which isPostStream refuses", requestID, name)
		}
		if len(raw) > 0 && len(raw) <= maxStreamRequestID && string(streamRequestID(name)) != string(raw) {
			t.Fatalf("stream %q carries %q, want %q", name, streamRequestID(name), raw)
		}
		if logID == "" || strings.ContainsAny(logID, "\r\n") {
			return
		}
		if stream, lid, ok := splitEventID(wireEventID(name, logID)); !ok || stream != name || lid != logID {
			t.Fatalf("splitEventID(wireEventID(%q, %q)) = %q, %q, %v", name, logID, stream, lid, ok)
		}
	})
}

// FuzzAccept checks the Accept header parsing against a plain reading of
// RFC 9110: a comma-separated list of media ranges with parameters.
func FuzzAccept(f *testing.F) {
	for _, s := range []string{"application/json, text/event-stream", "*/*", "application/*;q=0.1", "text/html",
		"APPLICATION/JSON", " application/json ; charset=utf-8 ,", "", ",,,", "application/json/x", "*/json"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, accept string) {
		r := &http.Request{Header: http.Header{"Accept": {accept}}}
		for _, mt := range []string{"application/json", "text/event-stream"} {
			want := false
			for part := range strings.SplitSeq(accept, ",") {
				rng, _, _ := strings.Cut(part, ";")
				rng = strings.ToLower(strings.TrimSpace(rng))
				major, _, _ := strings.Cut(mt, "/")
				if rng == mt || rng == "*/*" || rng == major+"/*" {
					want = true
				}
			}
			if got := accepts(r, mt); got != want {
				t.Fatalf("accepts(%q, %s) = %v, want %v", accept, mt, got, want)
			}
		}
		if got, want := acceptsPostAnswers(r), accepts(r, "application/json") && accepts(r, "text/event-stream"); got != want {
			t.Fatalf("acceptsPostAnswers(%q) = %v, want %v", accept, got, want)
		}
	})
}

// FuzzLoopbackHost checks isLoopbackHost's shortcut against its parse: a
// host the shortcut takes for loopback parses as loopback.
func FuzzLoopbackHost(f *testing.F) {
	for _, s := range []string{"127.0.0.1:8080", "localhost:1", "127.0.0.1:", "localhost", "127.0.0.1:80:90",
		"127.0.0.1:8x", "LOCALHOST:80", "[::1]:80", "127.0.0.10:80", "localhost.evil:80", "example.com:80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		if isLocalHostPort(hostport) && !parsesAsLoopback(hostport) {
			t.Fatalf("isLocalHostPort(%q) but it does not parse as loopback", hostport)
		}
	})
}
