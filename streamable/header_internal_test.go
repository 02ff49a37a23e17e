package streamable

import (
	"net/textproto"
	"testing"
)

// The keys headerValue is given must be canonical, or it would miss them.
func TestHeaderKeysAreCanonical(t *testing.T) {
	for _, k := range []string{headerSessionID, headerProtocolVersion, "Content-Type", "Origin", "Accept"} {
		if c := textproto.CanonicalMIMEHeaderKey(k); c != k {
			t.Errorf("header key %q is not canonical (%q)", k, c)
		}
	}
}
