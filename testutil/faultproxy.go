package testutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// faultDialTimeout bounds the dial of a backend for one connection.
const faultDialTimeout = 5 * time.Second

// CutMode says how a FaultProxy cuts a connection.
type CutMode int

const (
	// CutFIN closes both TCP connections in order, as a peer that
	// closes does: every byte forwarded so far reaches the client, then
	// it reads end of file (a body cut short reads io.ErrUnexpectedEOF in
	// net/http); the backend reads end of file, its writes fail soon
	// after. The proxy then discards what either side still sends until
	// that side closes too.
	CutFIN CutMode = iota
	// CutRST resets both TCP connections (SO_LINGER 0, then close), as a
	// middlebox that drops a connection does: both sides' next reads and
	// writes fail with "connection reset by peer". Bytes the client had
	// received before the reset stay readable. Bytes still in the proxy's
	// send buffer are lost: a cut at a fault point (Arm, ArmConns,
	// RandomCuts) first waits, up to a second, for the client to take
	// them (on Linux), so a client that reads gets exactly the bytes
	// forwarded; Cut and CutAll reset at once.
	CutRST
)

// String names the mode.
func (m CutMode) String() string {
	switch m {
	case CutFIN:
		return "FIN"
	case CutRST:
		return "RST"
	}
	return fmt.Sprintf("CutMode(%d)", int(m))
}

// FaultProxyConfig configures a FaultProxy.
type FaultProxyConfig struct {
	// Backends are the addresses the proxy forwards to, "host:port" or a
	// URL such as httptest.Server.URL ("http://127.0.0.1:8081", only its
	// host is used). Connections go to them in turn, round-robin.
	Backends []string
	// Cut is how every cut is made; CutFIN by default.
	Cut CutMode
	// Random cuts connections at random points; off by default.
	Random RandomCuts
}

// FaultStats counts what a FaultProxy did.
type FaultStats struct {
	Conns      int64 // client connections accepted
	Live       int64 // client connections not yet ended
	DialErrors int64 // connections ended because their backend could not be dialled
	Requests   int64 // HTTP request heads seen, over all connections
	Cuts       int64 // connections cut by a fault (Cut, CutAll, an armed Fault, RandomCuts)
	Stalls     int64 // times a connection was stalled
	Up         int64 // bytes forwarded client to backend
	Down       int64 // bytes forwarded backend to client
}

// ConnInfo describes one connection through a FaultProxy, as a predicate
// of Cut, Stall, Resume or Fault.Match sees it: a snapshot, taken when
// the predicate is called.
type ConnInfo struct {
	ID       int    // accept order, from 0
	Backend  string // the backend's address
	Requests int    // HTTP request heads the client sent on it so far
	// Method, Target and Header are the last request head's (the one
	// being matched, for Fault.Match): e.g. "GET", "/mcp". They are empty
	// before the first head and when the client's bytes are not HTTP/1.x.
	// Header is shared: do not modify it.
	Method string
	Target string
	Header map[string][]string
	Up     int64 // bytes forwarded client to backend so far
	Down   int64 // bytes forwarded backend to client so far (counted as each write to the client begins)
}

// FaultProxy is a TCP proxy for fault tests: it listens on 127.0.0.1 and
// forwards each client connection to a backend, the backends taken in
// turn (so it can stand for a load balancer in front of replicas), and
// cuts or stalls connections on demand: all of them now (CutAll), those a
// predicate on the client's last request head picks (Cut, Stall),
// after a given number of bytes of a matching request's response, even
// in the middle of a server-sent event (Arm), or at random points drawn
// from a seed (FaultProxyConfig.Random). It reads the client's bytes as
// HTTP/1.x to know the requests, but forwards every byte unchanged, so
// keep-alive connections carry many requests. Each connection has two
// goroutines and bounded buffers (32 KiB each way, a request head held
// back until whole up to 64 KiB). It is safe for concurrent use; every
// goroutine it starts ends before Close returns.
type FaultProxy struct {
	cfg      FaultProxyConfig
	backends []string
	ln       net.Listener
	ctx      context.Context // ends with Close; bounds dials
	cancel   context.CancelFunc
	next     atomic.Uint64 // the turn of the next connection; its backend is next % len(backends)
	wg       sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[*faultConn]struct{}
	faults []*armedFault

	accepted, live, dialErrs, requests, cuts, stalls, up, down atomic.Int64
}

// NewFaultProxy starts a FaultProxy listening on a free port of
// 127.0.0.1. It fails if there is no backend or one is not an address.
// Close it when done.
func NewFaultProxy(cfg FaultProxyConfig) (*FaultProxy, error) {
	if len(cfg.Backends) == 0 {
		return nil, errors.New("fault proxy: no backend")
	}
	if cfg.Cut != CutFIN && cfg.Cut != CutRST {
		return nil, fmt.Errorf("fault proxy: unknown cut mode %v", cfg.Cut)
	}
	if cfg.Random.MeanBytes < 0 || cfg.Random.MinBytes < 0 {
		return nil, fmt.Errorf("fault proxy: random cuts: negative MeanBytes %d or MinBytes %d",
			cfg.Random.MeanBytes, cfg.Random.MinBytes)
	}
	p := &FaultProxy{cfg: cfg, conns: make(map[*faultConn]struct{})}
	for _, b := range cfg.Backends {
		addr, err := backendAddr(b)
		if err != nil {
			return nil, fmt.Errorf("fault proxy: %w", err)
		}
		p.backends = append(p.backends, addr)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen: %w", err)
	}
	p.ln = ln
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// StartFaultProxy is NewFaultProxy for a test: the test fails if the
// proxy cannot start, and the proxy is closed when the test ends.
func StartFaultProxy(t testing.TB, cfg FaultProxyConfig) *FaultProxy {
	t.Helper()
	p, err := NewFaultProxy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// backendAddr returns the host:port of b, an address or a URL.
func backendAddr(b string) (string, error) {
	if u, err := url.Parse(b); err == nil && u.Scheme != "" && u.Host != "" {
		b = u.Host
	}
	if _, _, err := net.SplitHostPort(b); err != nil {
		return "", fmt.Errorf("backend %q is neither host:port nor a URL with a host: %w", b, err)
	}
	return b, nil
}

// Addr returns the proxy's address, 127.0.0.1:port.
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// URL returns "http://" followed by Addr: the base URL to send HTTP
// requests to.
func (p *FaultProxy) URL() string { return "http://" + p.Addr() }

// Pin makes the next connection go to backend i (counting from 0 in the
// order of FaultProxyConfig.Backends); the ones after it go to i+1, i+2,
// ... in turn. Pin panics if i is out of range.
func (p *FaultProxy) Pin(i int) {
	if i < 0 || i >= len(p.backends) {
		panic(fmt.Sprintf("fault proxy: Pin(%d) with %d backends", i, len(p.backends)))
	}
	p.next.Store(uint64(i))
}

// Stats returns the proxy's counters.
func (p *FaultProxy) Stats() FaultStats {
	return FaultStats{
		Conns: p.accepted.Load(), Live: p.live.Load(), DialErrors: p.dialErrs.Load(),
		Requests: p.requests.Load(), Cuts: p.cuts.Load(), Stalls: p.stalls.Load(),
		Up: p.up.Load(), Down: p.down.Load(),
	}
}

// accept runs until the listener is closed, starting a goroutine per
// connection.
func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for id := 0; ; id++ {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed (or out of file descriptors: the proxy stops accepting)
		}
		turn := p.next.Add(1) - 1
		c := newFaultConn(p, id, client.(*net.TCPConn), p.backends[turn%uint64(len(p.backends))])
		p.accepted.Add(1)
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			return
		}
		p.live.Add(1)
		p.wg.Add(1)
		p.mu.Unlock()
		go c.run()
	}
}

// register adds c to the live connections, or reports false if the proxy
// is closed.
func (p *FaultProxy) register(c *faultConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// unregister removes an ended connection.
func (p *FaultProxy) unregister(c *faultConn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.live.Add(-1)
	p.wg.Done()
}

// matching returns the live connections match picks (all of them if
// match is nil). match runs without the proxy's lock held.
func (p *FaultProxy) matching(match func(ConnInfo) bool) []*faultConn {
	p.mu.Lock()
	all := make([]*faultConn, 0, len(p.conns))
	for c := range p.conns {
		all = append(all, c)
	}
	p.mu.Unlock()
	if match == nil {
		return all
	}
	picked := all[:0]
	for _, c := range all {
		if match(c.info()) {
			picked = append(picked, c)
		}
	}
	return picked
}

// CutAll cuts every live connection now and returns how many it cut.
func (p *FaultProxy) CutAll() int { return p.Cut(nil) }

// Cut cuts now every live connection match picks (all if match is nil),
// as FaultProxyConfig.Cut says, and returns how many it cut. Bytes a
// connection is forwarding as it is cut may or may not arrive. Use
// Arm for a cut at an exact byte.
func (p *FaultProxy) Cut(match func(ConnInfo) bool) int {
	n := 0
	for _, c := range p.matching(match) {
		if c.cut(false) {
			n++
		}
	}
	return n
}

// Stall stops forwarding, both ways, on every live connection match picks
// (all if match is nil), until Resume; the connections stay open, like
// behind a proxy that hung. It returns how many it stalled (not counting
// those stalled already). A stalled connection can still be cut.
func (p *FaultProxy) Stall(match func(ConnInfo) bool) int {
	n := 0
	for _, c := range p.matching(match) {
		if c.stall() {
			n++
		}
	}
	return n
}

// Resume makes every stalled connection match picks (all if match is
// nil) forward again, from where it stopped, and returns how many it
// resumed.
func (p *FaultProxy) Resume(match func(ConnInfo) bool) int {
	n := 0
	for _, c := range p.matching(match) {
		if c.resume() {
			n++
		}
	}
	return n
}

// Close stops the proxy: it stops listening, closes every connection
// (no faults counted) and returns once every goroutine of the proxy has
// ended. It is idempotent.
func (p *FaultProxy) Close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]*faultConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	p.cancel()
	p.ln.Close()
	for _, c := range conns {
		c.kill()
	}
	p.wg.Wait()
}
