package lifelineclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// roundTripper is the http.RoundTripper mcp-go's transport sends through:
// it makes SSE responses resumable (resumableBody) and sends a POST that
// never reached the server once more.
type roundTripper struct {
	base   http.RoundTripper
	policy ResumePolicy
	logger *slog.Logger
	// gone is told of a session whose GET stream got 404 after it had
	// been open; set before the first request.
	gone func(session string)
	// auth, with mcp-go's OAuth, returns the Authorization header valid
	// now, for a resume: the token a stream opened with may have been
	// refreshed since. Set before the first request.
	auth func(ctx context.Context) (string, error)

	mu     sync.Mutex
	opened string // the last session a GET stream opened on
}

// reinitHeader marks the initialize a Transport sends to replace a lost
// session; the round tripper sends it without it and without a session id.
const reinitHeader = "X-Lifelineclient-Reinitialize"

// RoundTrip sends req; see roundTripper.
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(reinitHeader) != "" {
		req = req.Clone(req.Context())
		req.Header.Del(reinitHeader)
		req.Header.Del(transport.HeaderKeySessionID)
	}
	resp, err := rt.send(req)
	if err != nil {
		return nil, err
	}
	if req.Method == http.MethodGet {
		rt.watch(req, resp.StatusCode)
	}
	if p, ok := req.Context().Value(callProbeKey{}).(*callProbe); ok && req.Method == http.MethodPost && resp.StatusCode != http.StatusNotFound {
		p.took.Store(true)
	}
	if !rt.resumable(req, resp) {
		return resp, nil
	}
	b := &resumableBody{rt: rt, req: req, body: resp.Body, get: req.Method == http.MethodGet}
	b.scan.max = rt.policy.MaxEventBytes
	b.scan.lastID = req.Header.Get("Last-Event-ID")
	b.scan.reset(resp.Body)
	resp.Body = b
	return resp, nil
}

// send is the base RoundTrip, once more for a POST that never reached the
// server: no connection was had for it, or writing it failed (the server
// cannot have had it whole), so sending it again cannot run it twice.
// (net/http itself sends again one that found a kept-alive connection
// closed before anything was written.)
func (rt *roundTripper) send(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.GetBody == nil {
		return rt.base.RoundTrip(req)
	}
	// traced is set once the base transport follows the trace (net/http's
	// does): without it, no GotConn says nothing, and the POST may have
	// reached the server.
	var traced, gotConn, writeFailed atomic.Bool
	trace := &httptrace.ClientTrace{
		GetConn:      func(string) { traced.Store(true) },
		GotConn:      func(httptrace.GotConnInfo) { gotConn.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) { writeFailed.Store(info.Err != nil) },
	}
	first := req.Clone(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := rt.base.RoundTrip(first)
	if err == nil || !traced.Load() || gotConn.Load() && !writeFailed.Load() || req.Context().Err() != nil {
		return resp, err
	}
	body, berr := req.GetBody()
	if berr != nil {
		return nil, err
	}
	rt.logger.Info("lifelineclient: a POST never reached the server; sending it again", "err", err)
	again := req.Clone(req.Context())
	again.Body = body
	resp, err2 := rt.base.RoundTrip(again)
	if err2 != nil {
		return nil, fmt.Errorf("sent again after %v: %w", err, err2)
	}
	return resp, nil
}

// watch notes, from a GET's status, a session its stream opened on, and
// tells gone of one that got 404 after its stream had been open (or on a
// resume). A GET that was never open may get 404 from a server that does
// not offer the stream, which is not a lost session.
func (rt *roundTripper) watch(req *http.Request, status int) {
	id := req.Header.Get(transport.HeaderKeySessionID)
	if id == "" {
		return
	}
	rt.mu.Lock()
	switch status {
	case http.StatusOK:
		rt.opened = id
	case http.StatusNotFound:
		if id != rt.opened && req.Header.Get("Last-Event-ID") == "" {
			id = ""
		}
	default:
		id = ""
	}
	rt.mu.Unlock()
	if status == http.StatusNotFound && id != "" && rt.gone != nil {
		rt.gone(id)
	}
}

// resumable reports whether resp is an SSE stream that can be resumed: a
// GET stream, or a POST's on a session-era protocol version (2026-07-28
// has no resumability).
func (rt *roundTripper) resumable(req *http.Request, resp *http.Response) bool {
	if rt.policy.Attempts < 0 || resp.StatusCode != http.StatusOK {
		return false
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return false
	}
	return req.Method == http.MethodGet ||
		req.Method == http.MethodPost && !mcp.IsModernProtocol(req.Header.Get(transport.HeaderKeyProtocolVersion))
}

// errStreamGone fails a stream whose resumption the server refused.
var errStreamGone = errors.New("the server refused to resume the stream")

// resumeRequest returns the GET that resumes req's stream from lastID: the
// same headers (session, protocol version, authorization, the caller's),
// Accept text/event-stream and Last-Event-ID.
func resumeRequest(req *http.Request, lastID string) *http.Request {
	g := req.Clone(req.Context())
	g.Method = http.MethodGet
	g.Body = nil
	g.GetBody = nil
	g.ContentLength = 0
	g.Header.Del("Content-Type")
	g.Header.Del("Content-Length")
	g.Header.Set("Accept", "text/event-stream")
	g.Header.Set("Last-Event-ID", lastID)
	return g
}
