// Package bodydrain ends an HTTP/1.x answer given without reading the
// request's whole body, on a connection that closes after it, without
// the answer being lost.
//
// Closed with unread bytes in its receive buffer, a TCP connection is
// reset rather than closed; a client still writing its body sees its write
// fail, and Go's HTTP client, among others, then reports that failure and
// drops the answer it had been sent. After the handler, net/http reads up
// to 256 KiB of what is left of a body itself, but with no bound in time
// unless the server has a ReadTimeout, and not at all when the request
// asked to close the connection (Connection: close, or HTTP/1.0) or
// declared more than 256 KiB still to come.
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

// DropUnread ends an answer marked Connection: close that w holds whole,
// with a Content-Length: it sends the answer, then reads and drops what
// the client still sends of r's body, MaxBytes and Linger at most. A
// client that sends a body of up to MaxBytes promptly finishes sending it
// and reads the answer before the connection closes; one that trickles,
// or does not read the answer, holds the handler for Linger at most, and
// the connection for Linger at most after it (net/http's own read of the
// rest runs under the same deadline).
//
// It reads nothing when the connection's read deadline cannot be set (a
// writer that does not pass deadlines through), when the client asked to
// wait for 100-continue (the answer told it not to send its body; the
// read deadline is set to now, so that net/http does not wait for it
// either), and on HTTP/2, whose streams end without resetting the
// connection.
func DropUnread(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(w)
	now := time.Now()
	if r.Header.Get("Expect") != "" {
		_ = rc.SetReadDeadline(now)
		return
	}
	due := now.Add(Linger)
	if rc.SetReadDeadline(due) != nil {
		return
	}
	_ = rc.SetWriteDeadline(due)
	if rc.Flush() != nil {
		return
	}
	_, _ = io.CopyN(io.Discard, r.Body, MaxBytes)
}
