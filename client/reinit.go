package lifelineclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// reinitTimeout bounds one re-initialize (initialize, then
// notifications/initialized). It runs apart from the call that started
// it, so that that call's caller leaving does not fail the others, and
// ends with Close.
const reinitTimeout = 30 * time.Second

// listChanged are the notifications delivered after a new session.
var listChanged = []string{
	mcp.MethodNotificationToolsListChanged,
	mcp.MethodNotificationResourcesListChanged,
	mcp.MethodNotificationPromptsListChanged,
}

// SendRequest implements transport.Interface. A request that fails because
// the server no longer knows the session (404) is retried once on a new
// session, as the package documentation says.
func (t *Transport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodInitialize) {
		return t.sendInitialize(ctx, req)
	}
	t.mu.Lock()
	gen, held := t.gen, t.session
	t.mu.Unlock()
	probe := new(callProbe)
	resp, err := t.inner.SendRequest(context.WithValue(ctx, callProbeKey{}, probe), req)
	// A call whose POST the server took (answered other than 404) may be
	// running there: a 404 that follows, on the GET resuming its stream,
	// fails it rather than sending it again.
	if err == nil || !errors.Is(err, transport.ErrSessionTerminated) || held == "" || probe.took.Load() || !t.replaceable(req) {
		return resp, err
	}
	if rerr := t.replace(ctx, gen); rerr != nil {
		return nil, fmt.Errorf("lifelineclient: %s: the session was lost, and starting a new one failed: %w", req.Method, rerr)
	}
	resp, err = t.inner.SendRequest(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("lifelineclient: %s: sent again on a new session: %w", req.Method, err)
	}
	return resp, nil
}

// callProbe rides in the context of a request SendRequest sends: the
// round tripper records in took that a POST of it was answered with a
// status other than 404, so the server has it.
type callProbe struct{ took atomic.Bool }

// callProbeKey is the context key of a *callProbe.
type callProbeKey struct{}

// replaceable reports whether a 404 for req may start a new session: the
// first initialize is known and the protocol version has sessions.
func (t *Transport) replaceable(req transport.JSONRPCRequest) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.init != nil && !mcp.IsModernProtocol(t.version) && req.Method != string(mcp.MethodServerDiscover)
}

// sendInitialize sends an initialize of the caller's, keeping the first
// one's params and header for later sessions, and starts a generation.
func (t *Transport) sendInitialize(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	t.mu.Lock()
	first := t.init == nil
	t.mu.Unlock()
	var kept *transport.JSONRPCRequest
	if first {
		params, err := json.Marshal(req.Params)
		if err != nil {
			return nil, fmt.Errorf("lifelineclient: encode initialize params: %w", err)
		}
		kept = &transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, Method: req.Method, Params: json.RawMessage(params), Header: req.Header.Clone()}
	}
	resp, err := t.inner.SendRequest(ctx, req)
	if err != nil || resp.Error != nil {
		return resp, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.init == nil {
		t.init = kept
	}
	t.gen++
	t.session = t.inner.GetSessionId()
	return resp, nil
}

// replace starts a new session in place of generation gen's, or waits for
// the one being started: the calls that lost one session share one
// initialize. It returns nil at once if gen was replaced already.
func (t *Transport) replace(ctx context.Context, gen uint64) error {
	t.mu.Lock()
	if t.gen != gen {
		t.mu.Unlock()
		return nil
	}
	f := t.flight
	if f == nil {
		if err := t.life.Err(); err != nil {
			t.mu.Unlock()
			return fmt.Errorf("lifelineclient: the transport is closed: %w", err)
		}
		f = &flight{done: make(chan struct{})}
		t.flight = f
		t.reinits++
		init, old, n := *t.init, t.session, t.reinits
		fctx, cancel := context.WithTimeout(t.life, reinitTimeout)
		t.bg.Add(1)
		go func() {
			defer t.bg.Done()
			defer cancel()
			t.fly(fctx, f, init, old, n)
		}()
	}
	t.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fly runs flight f: initialize with the first one's params, then
// notifications/initialized; on success the new generation begins, the
// application is told (OnSessionReplaced, then the list_changed
// notifications), and only then are the waiting calls let go.
func (t *Transport) fly(ctx context.Context, f *flight, init transport.JSONRPCRequest, old string, n uint64) {
	newID, version, err := t.reinitialize(ctx, init, n)
	t.mu.Lock()
	t.flight = nil
	if err == nil {
		t.gen++
		t.session = newID
		if version != "" {
			t.version = version
		}
	}
	t.mu.Unlock()
	if err != nil {
		t.logger.Warn("lifelineclient: the session was lost; starting a new one failed", "err", err)
	} else {
		t.logger.Info("lifelineclient: the session was lost; a new one started")
		if cb := t.cfg.OnSessionReplaced; cb != nil {
			cb(old, newID)
		}
		t.notifyMu.RLock()
		h := t.notify
		t.notifyMu.RUnlock()
		if h != nil {
			for _, m := range listChanged {
				h(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: m}})
			}
		}
	}
	f.err = err
	close(f.done)
}

// reinitialize sends initialize (request id "lifeline-reinit-n") and
// notifications/initialized, returning the new session id and the version
// the server chose.
func (t *Transport) reinitialize(ctx context.Context, init transport.JSONRPCRequest, n uint64) (session, version string, err error) {
	req := init
	req.ID = mcp.NewRequestId("lifeline-reinit-" + strconv.FormatUint(n, 10))
	req.Header = init.Header.Clone()
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	// The dead session's id may still be mcp-go's: the round tripper
	// takes it off this initialize (and this header with it).
	req.Header.Set(reinitHeader, "1")
	resp, err := t.inner.SendRequest(ctx, req)
	if err != nil {
		return "", "", fmt.Errorf("initialize: %w", err)
	}
	if resp.Error != nil {
		return "", "", fmt.Errorf("initialize: %w", resp.Error.AsError())
	}
	var result struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(resp.Result, &result); err == nil && mcp.IsValidProtocolVersion(result.ProtocolVersion) {
		version = result.ProtocolVersion
		t.inner.SetProtocolVersion(version)
	}
	note := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: string(mcp.MethodNotificationInitialized)}}
	if err := t.inner.SendNotification(ctx, note); err != nil {
		return "", "", fmt.Errorf("notifications/initialized: %w", err)
	}
	return t.inner.GetSessionId(), version, nil
}

// sessionGone is told by the round tripper that the server answered 404 to
// a GET stream on session id that had been open (or was being resumed):
// the server forgot the session, and a client that only listens would
// never learn it from a request. If id is the current session, a new one
// is started as for a request's 404.
func (t *Transport) sessionGone(id string) {
	t.mu.Lock()
	ok := id != "" && id == t.session && t.init != nil && !mcp.IsModernProtocol(t.version) && t.life.Err() == nil
	gen := t.gen
	if ok {
		t.bg.Add(1) // under mu while life lasts: Close waits for it
	}
	t.mu.Unlock()
	if !ok {
		return
	}
	t.logger.Info("lifelineclient: the GET stream found the session gone; starting a new one")
	go func() {
		defer t.bg.Done()
		_ = t.replace(t.life, gen)
	}()
}
