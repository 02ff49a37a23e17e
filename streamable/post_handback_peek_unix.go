//go:build unix

package streamable

import (
	"errors"
	"net"
	"syscall"
)

// awaitRequest waits until the client sends something on conn, or conn
// ends (its read deadline, its close, the client's): it reports whether
// something came, and returns what was read of it to get there. A
// connection the kernel can be asked about is peeked, nothing read (it
// reaches net/http as it was); another is read from, a byte, which goes
// back to the server in front of the connection (prefixedConn).
func awaitRequest(conn net.Conn) (bool, []byte) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return readFirstByte(conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return readFirstByte(conn)
	}
	var got bool
	err = rc.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK)
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			return false // wait until readable
		}
		got = n > 0 && err == nil
		return true
	})
	return err == nil && got, nil
}
