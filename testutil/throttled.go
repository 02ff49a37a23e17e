package testutil

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"
)

// throttledRecvBuf is the receive buffer of a throttled connection, small
// so that the kernel does not read far ahead of the throttled reader.
const throttledRecvBuf = 16 << 10

// throttledRead is the most one read of a throttled connection takes.
const throttledRead = 4 << 10

// Throttle makes HTTP connections that read at a steady, limited rate, like
// a client on a slow link that keeps reading: each read takes at most
// throttledRead bytes and waits until the bytes read so far are due at the
// rate. Writes are not throttled.
type Throttle struct {
	rate int64 // bytes per second
	read atomic.Int64
}

// NewThrottle returns a throttle reading bytesPerSecond on each of its
// connections.
func NewThrottle(bytesPerSecond int) *Throttle {
	return &Throttle{rate: int64(bytesPerSecond)}
}

// BytesRead reports how many bytes its connections have read so far.
func (t *Throttle) BytesRead() int64 { return t.read.Load() }

// Client returns an HTTP client whose connections are throttled. Each
// client has its own connection pool.
func (t *Throttle) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: t.dial}}
}

func (t *Throttle) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, throttledRecvBuf)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return &throttledConn{Conn: conn, t: t}, nil
}

type throttledConn struct {
	net.Conn
	t    *Throttle
	next time.Time // when the next read may start
}

// Read paces the connection: a read of n bytes lets the next one start
// n/rate later (time spent idle earns no credit), so the reader never runs
// ahead of the rate. (A closed connection still fails the read that
// follows the wait.)
func (c *throttledConn) Read(p []byte) (int, error) {
	if len(p) > throttledRead {
		p = p[:throttledRead]
	}
	now := time.Now()
	if d := c.next.Sub(now); d > 0 {
		time.Sleep(d) // the pacing itself, not a synchronisation
		now = c.next
	}
	n, err := c.Conn.Read(p)
	c.next = now.Add(time.Duration(int64(n) * int64(time.Second) / c.t.rate))
	c.t.read.Add(int64(n))
	return n, err
}
