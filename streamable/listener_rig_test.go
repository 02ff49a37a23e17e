package streamable_test

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/streamable"
)

// newRigOn is newRig served on a listener that wrap wraps, to shape the
// server's side of its connections.
func newRigOn(t *testing.T, cfg streamable.Config, wrap func(net.Listener) net.Listener, setup ...func(*server.MCPServer)) *rig {
	t.Helper()
	r := newRig(t, cfg, setup...)
	ts := httptest.NewUnstartedServer(r.h)
	ts.Listener = wrap(ts.Listener)
	ts.Start()
	// Before newRig's cleanup, which closes only its own server: the
	// handler first (Shutdown is idempotent), then this server, which
	// waits for its handlers.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := r.h.Shutdown(ctx); err != nil && !r.shutdownFailed {
			t.Errorf("Shutdown: %v", err)
		}
		ts.Close()
	})
	r.ts = ts
	return r
}

// smallSendBuffer gives the server's connections a fixed kernel send
// buffer of size bytes, so how much a client that reads slowly or not at
// all leaves queued in the kernel does not depend on the host's TCP
// autotuning.
func smallSendBuffer(size int) func(net.Listener) net.Listener {
	return func(l net.Listener) net.Listener { return sendBufListener{l, size} }
}

type sendBufListener struct {
	net.Listener
	size int
}

func (l sendBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(l.size)
	}
	return c, err
}

// gate is a listener whose next accepted connection, once armed, takes no
// writes, like a network that stopped draining: its writes block until the
// write deadline passes (os.ErrDeadlineExceeded) or the gate is released.
// The deadline is watched while blocked, so one set in the past interrupts
// at once, as on a real connection.
type gate struct {
	net.Listener
	mu      sync.Mutex
	armed   bool
	once    sync.Once
	blocked chan struct{} // closed when the gated connection's first write blocks
	release chan struct{} // closed by open
	opened  sync.Once
}

func newGate(l net.Listener) *gate {
	return &gate{Listener: l, blocked: make(chan struct{}), release: make(chan struct{})}
}

// arm gates the next connection accepted.
func (g *gate) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

// open lets the gated connection's writes through. Idempotent.
func (g *gate) open() { g.opened.Do(func() { close(g.release) }) }

func (g *gate) Accept() (net.Conn, error) {
	c, err := g.Listener.Accept()
	if err != nil {
		return c, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.armed {
		return c, nil
	}
	g.armed = false
	return &gatedConn{Conn: c, g: g, changed: make(chan struct{}, 1)}, nil
}

type gatedConn struct {
	net.Conn
	g        *gate
	mu       sync.Mutex
	deadline time.Time
	changed  chan struct{} // a 1-slot signal: the write deadline changed
}

func (c *gatedConn) SetDeadline(t time.Time) error {
	c.setWrite(t)
	return c.Conn.SetDeadline(t)
}

func (c *gatedConn) SetWriteDeadline(t time.Time) error {
	c.setWrite(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *gatedConn) setWrite(t time.Time) {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *gatedConn) Write(p []byte) (int, error) {
	c.g.once.Do(func() { close(c.g.blocked) })
	for {
		c.mu.Lock()
		dl := c.deadline
		c.mu.Unlock()
		var expired <-chan time.Time
		var t *time.Timer
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			t = time.NewTimer(d)
			expired = t.C
		}
		select {
		case <-c.g.release:
			return c.Conn.Write(p)
		case <-c.changed:
		case <-expired:
		}
		if t != nil {
			t.Stop()
		}
	}
}
