package testutil

import (
	"bufio"
	"errors"
	"io"
	"net/http"
)

// upReader reads the client for the request parser: while hold is set
// (a request head is being read) it keeps the bytes back in held;
// otherwise it forwards them to the backend as they come.
type upReader struct {
	c    *faultConn
	hold bool
	held []byte
	err  error // the first error reading the client or forwarding
}

func (u *upReader) Read(p []byte) (int, error) {
	if u.err != nil {
		return 0, u.err
	}
	n, err := u.c.client.Read(p)
	if n > 0 {
		if u.hold {
			u.held = append(u.held, p[:n]...)
			if len(u.held) > faultMaxHead && err == nil {
				return n, errHeadTooLarge
			}
		} else if !u.c.forwardUp(p[:n]) {
			u.err = errEnded
			return n, u.err
		}
	}
	if err != nil {
		u.err = err
	}
	return n, err
}

// flush forwards the held bytes.
func (u *upReader) flush() bool {
	ok := u.c.forwardUp(u.held)
	u.held = u.held[:0]
	return ok
}

// pumpUp forwards client to backend, parsing each request head (held back
// until whole, so a fault armed for it takes effect before the backend can
// answer) and skipping over its body. Bytes that are not HTTP/1.x
// requests (a head that does not parse or is longer than faultMaxHead,
// what follows CONNECT or an Upgrade request) end the parsing: the rest
// of the connection is forwarded as it comes.
func (c *faultConn) pumpUp() {
	u := &upReader{c: c}
	br := bufio.NewReaderSize(u, faultBufSize)
	for {
		u.hold = true
		req, err := http.ReadRequest(br)
		if err != nil {
			if u.flush() && u.err == nil {
				// Not HTTP/1.x (or a head too long): forward the
				// rest as it comes, straight from the client.
				u.hold = false
				_, _ = io.Copy(io.Discard, u)
			}
			break
		}
		switch c.requestSeen(req) {
		case actCut:
			c.cut(false)
		case actStall:
			c.stall()
		}
		u.hold = false
		if !u.flush() {
			break
		}
		if req.Method == http.MethodConnect || req.Header.Get("Upgrade") != "" {
			// What follows is another protocol's: forward it as it
			// comes (the bytes read ahead into br are forwarded already).
			_, _ = io.Copy(io.Discard, u)
			break
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			break
		}
	}
	switch {
	case errors.Is(u.err, io.EOF) && !c.isEnded():
		_ = c.backend.CloseWrite() // the client is done sending
		return
	case !c.isEnded():
		c.fail() // the client's connection failed
	}
	drain(c.client, make([]byte, 4<<10))
}

// requestSeen records a request head, and arms the first armed fault
// that matches it; it returns what to do at once, before the head is
// forwarded.
func (c *faultConn) requestSeen(req *http.Request) faultAction {
	c.mu.Lock()
	c.requests++
	c.method, c.target, c.header = req.Method, req.RequestURI, req.Header
	c.mu.Unlock()
	c.p.requests.Add(1)
	f, ok := c.p.faultFor(c.info())
	if !ok {
		return actNone
	}
	return c.arm(f)
}

// arm arms f on the connection, its After counted from the bytes
// forwarded to the client so far, replacing a fault armed before and not
// yet made. It returns what to do at once: f's action if it is due now
// (After 0 and not MidEvent), else actNone.
func (c *faultConn) arm(f Fault) faultAction {
	if f.After == 0 && !f.MidEvent {
		if f.Stall {
			return actStall
		}
		return actCut
	}
	c.mu.Lock()
	c.faultAt, c.faultMid, c.faultStall, c.scanning = c.down+f.After, f.MidEvent, f.Stall, false
	c.mu.Unlock()
	return actNone
}

// forwardUp writes b to the backend, waiting while the connection is
// stalled; it reports false once the connection has ended.
func (c *faultConn) forwardUp(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if !c.gate() {
		return false
	}
	n, err := c.backend.Write(b)
	c.mu.Lock()
	c.up += int64(n)
	c.mu.Unlock()
	c.p.up.Add(int64(n))
	if err != nil {
		c.fail()
		return false
	}
	return true
}

// pumpDown forwards backend to client, making the faults due.
func (c *faultConn) pumpDown() {
	buf := make([]byte, faultBufSize)
	for {
		n, err := c.backend.Read(buf)
		if n > 0 && !c.forwardDown(buf[:n]) {
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) && !c.isEnded() {
				_ = c.client.CloseWrite() // the backend is done sending
				return
			}
			c.fail()
			break
		}
	}
	drain(c.backend, buf)
}

// forwardDown writes data to the client up to each fault point due in
// it, and makes the fault; it reports false once the connection has
// ended.
func (c *faultConn) forwardDown(data []byte) bool {
	for len(data) > 0 {
		if !c.gate() {
			return false
		}
		k, act := c.nextFault(data)
		if k > 0 {
			// Counted before the write: a client that reads these bytes
			// and at once sends its next request on the connection
			// (keep-alive) must find them counted, so that a fault armed
			// by that request (requestSeen) counts After from its own
			// answer's first byte, not from inside the last answer.
			c.mu.Lock()
			c.down += int64(k)
			c.lastDown = data[k-1]
			c.mu.Unlock()
			n, err := c.client.Write(data[:k])
			c.p.down.Add(int64(n))
			if err != nil {
				c.fail()
				return false
			}
		}
		data = data[k:]
		switch act {
		case actCut:
			c.cut(true)
			return false
		case actStall:
			c.stall()
		}
	}
	return true
}

// nextFault returns how many bytes of data, the next to go to the client,
// to write before a fault, and the fault (actNone: write all of data).
func (c *faultConn) nextFault(data []byte) (int, faultAction) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, act := len(data), actNone
	if c.faultAt >= 0 {
		if r := max(c.faultAt-c.down, 0); r <= int64(len(data)) {
			c.faultAt = -1
			if !c.faultMid {
				k, act = int(r), c.armedAction()
			} else {
				prev := byte('\n') // the response's first byte starts a line
				switch {
				case r > 0:
					prev = data[r-1]
				case c.down > 0:
					prev = c.lastDown
				}
				c.scanning = true
				c.scan = sseScan{lineStart: prev == '\n' || prev == '\r'}
				if j, found := c.scan.find(data[r:]); found {
					k, act = int(r)+j, c.armedAction()
					c.scanning = false
				}
			}
		}
	} else if c.scanning {
		if j, found := c.scan.find(data); found {
			k, act = j, c.armedAction()
			c.scanning = false
		}
	}
	if c.randomAt >= 0 {
		if r := c.randomAt - c.down; r <= int64(k) {
			k, act = int(r), actCut
		}
	}
	return k, act
}

// armedAction is what the armed fault does. c.mu is held.
func (c *faultConn) armedAction() faultAction {
	if c.faultStall {
		return actStall
	}
	return actCut
}
