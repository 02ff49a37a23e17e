package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"
)

// RoundRobinProxy is a reverse proxy that sends each request to the next of
// its backends in turn, with no affinity of any kind: consecutive requests
// of one session, even a GET stream and the POST that follows it, go to
// different backends. It stands for a load balancer in front of several
// replicas. Responses are streamed, each write flushed at once, so SSE
// events pass as they come; headers (Mcp-Session-Id, MCP-Protocol-Version,
// Last-Event-ID, ...) pass both ways, except hop-by-hop ones, as with any
// HTTP proxy. It is safe for concurrent use.
type RoundRobinProxy struct {
	backends  []*url.URL
	next      atomic.Uint64 // the turn of the next request; its backend is next % len(backends)
	proxy     *httputil.ReverseProxy
	transport *http.Transport
	closed    context.Context
	close     context.CancelFunc
}

// NewRoundRobinProxy returns a proxy to backends, base URLs such as
// "http://127.0.0.1:8081": a request for /mcp goes to that URL's path
// followed by /mcp. The first request goes to the first backend. It fails
// if there is no backend or one is not an absolute http or https URL.
func NewRoundRobinProxy(backends ...string) (*RoundRobinProxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("round-robin proxy: no backend")
	}
	p := &RoundRobinProxy{}
	for _, b := range backends {
		u, err := url.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("round-robin proxy: backend %q: %w", b, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("round-robin proxy: backend %q is not an http or https URL with a host", b)
		}
		p.backends = append(p.backends, u)
	}
	p.transport = &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   5 * time.Second,
		ResponseHeaderTimeout: time.Minute, // a POST may answer its headers only when its request runs past a heartbeat
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   64,
		DisableCompression:    true, // pass bodies through as the backend sent them
	}
	p.closed, p.close = context.WithCancel(context.Background())
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(p.pick())
			pr.SetXForwarded()
		},
		Transport:     p.transport,
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			http.Error(w, fmt.Sprintf("round-robin proxy: %s %s: %v", r.Method, r.URL, err), http.StatusBadGateway)
		},
	}
	return p, nil
}

// StartRoundRobinProxy serves a RoundRobinProxy to backends on a loopback
// httptest server and returns its base URL; the test fails if the backends
// are not valid (see NewRoundRobinProxy). When the test ends the proxy is
// closed (cutting streams still open through it) and the server with it.
// To Pin requests, build the proxy with NewRoundRobinProxy and serve it
// with httptest.NewServer.
func StartRoundRobinProxy(t testing.TB, backends ...string) (url string) {
	t.Helper()
	p, err := NewRoundRobinProxy(backends...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Close()
		ts.Close()
		p.Close() // connections the last requests returned to the pool
	})
	return ts.URL
}

// pick returns the backend of the next turn.
func (p *RoundRobinProxy) pick() *url.URL {
	turn := p.next.Add(1) - 1
	return p.backends[turn%uint64(len(p.backends))]
}

// Pin makes the next request go to backend i (counting from 0 in the order
// given to NewRoundRobinProxy); the ones after it go to i+1, i+2, ... in
// turn. "Next" is the first request to pick a backend after Pin returns:
// with requests in flight concurrently, which of them that is depends on
// the scheduler, so pin before sending the request it is for. A later Pin
// replaces an earlier one not yet used. Pin panics if i is out of range.
func (p *RoundRobinProxy) Pin(i int) {
	if i < 0 || i >= len(p.backends) {
		panic(fmt.Sprintf("round-robin proxy: Pin(%d) with %d backends", i, len(p.backends)))
	}
	p.next.Store(uint64(i))
}

// ServeHTTP forwards r to the next backend and streams its answer back.
// The request's context bounds the forwarded request, and so does Close.
// The request's body is forwarded to its end even once the answer has
// begun: net/http's HTTP/1 server would otherwise drain and close it when
// the answer's headers are written, and the transport, failing to read
// the body's end, would close the backend connection under the answer
// (golang/go#40747).
func (p *RoundRobinProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(w).EnableFullDuplex() // HTTP/1 only; HTTP/2 is duplex already
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(p.closed, cancel)
	defer stop()
	p.proxy.ServeHTTP(w, r.WithContext(ctx))
}

// Close ends every request in flight through the proxy, open streams
// included (their clients' bodies end with an error, as when a balancer
// drops a connection), and closes the idle connections to the backends.
// Requests after Close get 502. It is idempotent.
func (p *RoundRobinProxy) Close() {
	p.close()
	p.transport.CloseIdleConnections()
}
