package testutil

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

const (
	// faultBufSize is the buffer of each direction of a connection.
	faultBufSize = 32 << 10
	// faultMaxHead bounds the request head the proxy holds back until it
	// is whole; a longer one is forwarded as it comes, unparsed, and the
	// rest of the connection too.
	faultMaxHead = 64 << 10
	// faultFlushWait bounds how long an RST cut at a fault point waits
	// for the client to take the bytes forwarded before it.
	faultFlushWait = time.Second
)

// errHeadTooLarge stops the parsing of a request head longer than
// faultMaxHead.
var errHeadTooLarge = errors.New("fault proxy: request head too large to parse")

// errEnded is what reading the client returns once the connection has
// been cut or closed.
var errEnded = errors.New("fault proxy: connection ended")

// faultAction is what happens at a fault point.
type faultAction int

const (
	actNone faultAction = iota
	actCut
	actStall
)

// faultConn is one client connection and its backend connection. Two
// goroutines move the bytes: run's own (client to backend, pumpUp) and
// pumpDown (backend to client); run returns when both have ended.
type faultConn struct {
	p           *FaultProxy
	id          int
	client      *net.TCPConn
	backendAddr string
	backend     *net.TCPConn  // set by run before the connection is registered
	dead        chan struct{} // closed when the connection is cut or killed

	mu       sync.Mutex
	ended    bool          // dead is closed
	stalled  bool          // forwarding waits for resumed
	resumed  chan struct{} // closed by resume
	requests int
	method   string
	target   string
	header   map[string][]string
	up, down int64
	lastDown byte // the last byte forwarded to the client

	faultAt    int64 // down offset of the armed fault; -1: none
	faultMid   bool  // at faultAt, scan for a data line
	faultStall bool  // the armed fault stalls rather than cuts
	scanning   bool  // faultAt has passed; scan finds the fault point
	scan       sseScan
	randomAt   int64 // down offset of the random cut; -1: none
}

func newFaultConn(p *FaultProxy, id int, client *net.TCPConn, backend string) *faultConn {
	c := &faultConn{p: p, id: id, client: client, backendAddr: backend,
		dead: make(chan struct{}), faultAt: -1, randomAt: -1}
	if at, ok := p.cfg.Random.At(id); ok {
		c.randomAt = at
	}
	return c
}

// run dials the backend and forwards until both directions have ended.
func (c *faultConn) run() {
	defer c.p.unregister(c)
	ctx, cancel := context.WithTimeout(c.p.ctx, faultDialTimeout)
	var d net.Dialer
	bc, err := d.DialContext(ctx, "tcp", c.backendAddr)
	cancel()
	if err != nil {
		c.p.dialErrs.Add(1)
		c.client.Close()
		return
	}
	c.backend = bc.(*net.TCPConn)
	if !c.p.register(c) {
		c.client.Close()
		c.backend.Close()
		return
	}
	var wg sync.WaitGroup
	wg.Go(c.pumpDown)
	c.pumpUp()
	wg.Wait()
	c.client.Close()
	c.backend.Close()
}

// info snapshots the connection for a predicate.
func (c *faultConn) info() ConnInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ConnInfo{ID: c.id, Backend: c.backendAddr, Requests: c.requests,
		Method: c.method, Target: c.target, Header: c.header, Up: c.up, Down: c.down}
}

// cut ends the connection as the proxy's CutMode says, and reports false
// if it had ended already. For an RST cut at a fault point (exact), it
// first waits, at most faultFlushWait, for the client to acknowledge the
// bytes forwarded, so that a client that reads gets exactly those.
func (c *faultConn) cut(exact bool) bool {
	if !c.end() {
		return false
	}
	c.p.cuts.Add(1)
	if c.p.cfg.Cut == CutRST {
		if exact {
			c.awaitSent()
		}
		_ = c.client.SetLinger(0)
		_ = c.backend.SetLinger(0)
		c.client.Close()
		c.backend.Close()
		return true
	}
	// CutFIN: each side reads end of file after the bytes it was sent;
	// the pumps discard what comes until each side closes (see drain).
	_ = c.client.CloseWrite()
	_ = c.backend.CloseWrite()
	return true
}

// awaitSent waits until the client has acknowledged every byte written
// to it, the connection is closed, or faultFlushWait has passed. There
// is no event to wait on: it polls the send queue.
func (c *faultConn) awaitSent() {
	deadline := time.Now().Add(faultFlushWait)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		n, err := unsent(c.client)
		if err != nil || n == 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-tick.C:
		case <-c.p.ctx.Done():
			return
		}
	}
}

// fail ends the connection after an I/O error, unless it has ended
// already (a cut's own errors).
func (c *faultConn) fail() {
	if c.end() {
		c.client.Close()
		c.backend.Close()
	}
}

// kill closes the connection, whatever state it is in (Close).
func (c *faultConn) kill() {
	c.end()
	c.client.Close()
	c.backend.Close()
}

// end marks the connection ended, and reports whether this call did.
func (c *faultConn) end() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return false
	}
	c.ended = true
	close(c.dead)
	return true
}

func (c *faultConn) isEnded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ended
}

// stall stops forwarding, and reports false if the connection was
// stalled or ended already.
func (c *faultConn) stall() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended || c.stalled {
		return false
	}
	c.stalled = true
	c.resumed = make(chan struct{})
	c.p.stalls.Add(1)
	return true
}

// resume lets a stalled connection forward again, and reports false if it
// was not stalled.
func (c *faultConn) resume() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stalled {
		return false
	}
	c.stalled = false
	close(c.resumed)
	return true
}

// gate waits while the connection is stalled; it reports false once the
// connection has ended.
func (c *faultConn) gate() bool {
	for {
		c.mu.Lock()
		ended, stalled, resumed := c.ended, c.stalled, c.resumed
		c.mu.Unlock()
		if ended {
			return false
		}
		if !stalled {
			return true
		}
		select {
		case <-resumed:
		case <-c.dead:
			return false
		}
	}
}

// drain reads and discards from conn until it fails or ends: after a
// FIN cut, until that side closes too (or Close closes it).
func drain(conn net.Conn, buf []byte) {
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
	}
}
