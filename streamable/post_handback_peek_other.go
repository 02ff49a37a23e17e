//go:build !unix

package streamable

import "net"

// awaitRequest waits until the client sends something on conn, or conn
// ends: it reports whether something came, and returns the byte read to
// get there, which goes back to the server in front of the connection
// (prefixedConn).
func awaitRequest(conn net.Conn) (bool, []byte) {
	return readFirstByte(conn)
}
