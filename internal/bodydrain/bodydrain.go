// Package bodydrain ends an HTTP answer given without reading the
// request's whole body, on a connection that closes after it, without
// the answer being lost.
//
// Closed with unread bytes in its receive buffer, a TCP connection is
// reset rather than closed; a client still writing its body sees its write
// fail, and Go's HTTP client, among others, then reports that failure and
// drops the answer it had been sent. net/http reads up to 256 KiB of an
// unread body after the handler returns, but only on a connection it
// keeps open, not on one the client asked to close, and not under a
// deadline of its own.
package bodydrain

import (
	"io"
	"net/http"
	"time"
)

// Linger is how long DropUnread reads at most.
const Linger = 500 * time.Millisecond

// MaxBytes is how much of a body DropUnread reads at most: net/http's own
// bound for what it reads of an unread body.
const MaxBytes = 256 << 10

// DropUnread sends what w holds of the answer, then reads and drops what
// the client still sends of r's body, MaxBytes and Linger at most, so that
// a client that sends its body promptly finishes and reads the answer
// before the connection closes, and one that trickles, or does not read
// the answer, holds the handler for Linger at most. A client that asked to wait for 100-continue is not
// read: the answer told it not to send its body.
//
// Call it last, after an answer marked Connection: close.
func DropUnread(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.Header.Get("Expect") != "" {
		return
	}
	rc := http.NewResponseController(w)
	due := time.Now().Add(Linger)
	_ = rc.SetWriteDeadline(due)
	if rc.Flush() != nil {
		return
	}
	_ = rc.SetReadDeadline(due)
	_, _ = io.CopyN(io.Discard, r.Body, MaxBytes)
}
