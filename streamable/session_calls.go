package streamable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// pingsKeptPerStream is how many of a stream's most recent ping ids are
// remembered for pong matching; older pongs are accepted but ignored.
const pingsKeptPerStream = 4

// callTable issues the ids of server-to-client requests (pings included)
// for one session and routes the client's responses to them. Ids are unique
// within the session.
type callTable struct {
	mu   sync.Mutex
	base int64 // ids issued here are > base (cluster.go: callIDBase)
	last int64
	// pingers are the session's streams with pings outstanding (their
	// pingIDs): at most one, its live GET stream (a stream leaves as it
	// ends, endGet's forgetPings, before the slot frees for the next).
	pingers []*getStream
	waiting map[int64]chan callResult
	failed  error

	// The encoded requests of calls, from their queue to their stream
	// (call_withdraw.go): keyed by their first byte's address.
	out       map[*byte]outbound
	withdrawn int32        // entries of out in the withdrawn state
	tracked   atomic.Int32 // entries of out: writers skip the lock when none
	sendMu    sync.Mutex   // serializes enqueue (and compact) on the session's request queues
}

type callResult struct {
	result json.RawMessage
	err    error
}

func newCallTable(base int64) callTable {
	// The maps are made on first use: most sessions (and every
	// 2026-07-28 request's) never ping or call.
	return callTable{base: base, last: base}
}

// newPing issues a ping id owned by stream g.
func (t *callTable) newPing(g *getStream) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last++
	id := t.last
	if !slices.Contains(t.pingers, g) {
		t.pingers = append(t.pingers, g)
	}
	g.pingIDs[g.pingNext] = id // forgets the stream's oldest ping
	g.pingNext = (g.pingNext + 1) % pingsKeptPerStream
	return id
}

// pingOwner returns the stream that sent the ping id, among each stream's
// last pingsKeptPerStream, or nil. Callers hold t.mu.
func (t *callTable) pingOwner(id int64) *getStream {
	if id < 1 {
		return nil // not an id issued here; 0 marks a free slot
	}
	for _, g := range t.pingers {
		if slices.Contains(g.pingIDs[:], id) {
			return g
		}
	}
	return nil
}

// forgetPings drops every ping id of a stream that has ended.
func (t *callTable) forgetPings(g *getStream) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i := slices.Index(t.pingers, g); i >= 0 {
		t.pingers = slices.Delete(t.pingers, i, i+1)
	}
	g.pingIDs, g.pingNext = [pingsKeptPerStream]int64{}, 0
}

// newCall issues an id for a server-to-client request and the channel its
// response arrives on.
func (t *callTable) newCall() (int64, chan callResult, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failed != nil {
		return 0, nil, t.failed
	}
	t.last++
	ch := make(chan callResult, 1)
	if t.waiting == nil {
		t.waiting = make(map[int64]chan callResult)
	}
	t.waiting[t.last] = ch
	return t.last, ch, nil
}

func (t *callTable) dropCall(id int64) {
	t.mu.Lock()
	delete(t.waiting, id)
	t.mu.Unlock()
}

// failAll fails every pending request with err, and every later one.
func (t *callTable) failAll(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed = err
	for id, ch := range t.waiting {
		ch <- callResult{err: err}
		delete(t.waiting, id)
	}
}

// deliverIssued routes a response to a ping or request that is still
// waiting; unlike deliver it reports false for an id issued here that is
// no longer waited for.
func (t *callTable) deliverIssued(rawID json.RawMessage, result, rpcErr json.RawMessage) bool {
	id, err := strconv.ParseInt(string(rawID), 10, 64)
	if err != nil {
		return false
	}
	t.mu.Lock()
	ping := t.pingOwner(id) != nil
	_, call := t.waiting[id]
	t.mu.Unlock()
	return (ping || call) && t.deliver(rawID, result, rpcErr)
}

// deliver routes a response the client POSTed. It reports false for an id
// this session never issued here (with replicas, another one may have).
func (t *callTable) deliver(rawID json.RawMessage, result, rpcErr json.RawMessage) bool {
	id, err := strconv.ParseInt(string(rawID), 10, 64)
	if err != nil || id < 1 {
		return false
	}
	t.mu.Lock()
	if id > t.last || id <= t.base {
		t.mu.Unlock()
		return false
	}
	g := t.pingOwner(id)
	ch := t.waiting[id]
	delete(t.waiting, id)
	t.mu.Unlock()
	switch {
	case g != nil:
		g.tracker.Pong()
		g.sess.h.met.pong()
	case ch != nil:
		r := callResult{result: result}
		if len(rpcErr) > 0 && string(rpcErr) != "null" {
			r.err = clientError(rpcErr)
		}
		ch <- r
	}
	// Otherwise a late answer to a request that already ended: accepted
	// and ignored.
	return true
}

func clientError(raw json.RawMessage) error {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return fmt.Errorf("client returned an error: %s", raw)
	}
	return fmt.Errorf("client returned error %d: %s", e.Code, e.Message)
}

var errQueueFull = errors.New("lifeline: outbound request queue is full")

// call sends a server-to-client request on queue and waits for the client's
// answer, ctx, or the end of the session. If the call ends without an
// answer, its request is withdrawn if it is still queued, or, if it was
// written, a notifications/cancelled for it goes on notes, the queue of the
// same stream.
// callRoute is the stream a server-to-client request goes out on: its
// request and notification queues, and for a request's own stream the
// channel closed once its writer stopped (nil for the GET stream's).
type callRoute struct {
	requests chan []byte
	notes    chan mcp.JSONRPCNotification
	closed   <-chan struct{}
}

func (s *session) call(ctx context.Context, route callRoute, method string, params any) (json.RawMessage, error) {
	if s.modern {
		return nil, errModernCall
	}
	if s.stateless {
		return nil, errStatelessCall
	}
	// With replicas the client may answer on any of them: the answer then
	// comes over the session's bus, which must be listened to before the
	// request goes out.
	var replies <-chan []byte
	if s.h.shared {
		// If the store cannot be listened to, an answer POSTed to this
		// replica still arrives; one POSTed elsewhere cannot.
		if sub, err := s.h.store.Subscribe(ctx, s.id); err == nil {
			defer sub.Close()
			replies = sub.Messages()
		} else if isGone(err) {
			return nil, fmt.Errorf("lifeline: %s: %w", method, errEndedElsewhere)
		}
	}
	id, ch, err := s.calls.newCall()
	if err != nil {
		return nil, err
	}
	defer s.calls.dropCall(id)
	msg, err := json.Marshal(mcp.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(id),
		Request: mcp.Request{Method: method},
		Params:  params,
	})
	if err != nil {
		return nil, fmt.Errorf("lifeline: encode %s request: %w", method, err)
	}
	if !s.calls.enqueue(route.requests, msg, id) {
		s.h.met.refusedMessage()
		return nil, fmt.Errorf("%w (%s)", errQueueFull, method)
	}
	s.h.met.queuedMessage()
	answered := false
	defer func() {
		if s.calls.settle(msg) && !answered {
			s.cancelCall(ctx, route.notes, id, method)
		}
	}()
	if q := s.q.Load(); s.h.shared && q != nil && route.requests == q.requests {
		s.ensurePump(false)
	}
	closed, sessionEnded := route.closed, s.ctx().Done()
	for waiting := true; waiting; {
		select {
		case <-closed:
			closed = nil
			// The stream's writer stopped: a request it never took will
			// never go out (one it wrote may still be answered).
			if s.calls.dropQueued(msg) {
				return nil, fmt.Errorf("lifeline: %s: %w", method, errRequestReturned)
			}
		case r := <-ch:
			answered = true
			return r.result, r.err
		case m, ok := <-replies:
			if !ok {
				replies = nil
				if s.h.endedInStore(s.id) {
					return nil, fmt.Errorf("lifeline: %s: %w", method, errEndedElsewhere)
				}
				continue
			}
			s.h.met.received()
			deliverReply(s, m)
		case <-ctx.Done():
			waiting = false
		case <-sessionEnded:
			waiting = false
		}
	}
	// The session's end cancels its requests too; name the end, not the
	// cancellation it caused.
	if cause := s.endedWith(); cause != nil {
		return nil, fmt.Errorf("lifeline: %s: %w", method, cause)
	}
	return nil, fmt.Errorf("lifeline: %s: %w", method, context.Cause(ctx))
}

// cancelCall tells the client, on notes (the stream its request went out
// on), that the server no longer waits for the answer to request id. A full
// queue refuses it, as any notification; the client's late answer is then
// accepted and ignored.
func (s *session) cancelCall(ctx context.Context, notes chan mcp.JSONRPCNotification, id int64, method string) {
	if !s.active() {
		return // its streams are closing: nothing more goes out
	}
	reason := "the server stopped waiting for the " + method + " answer"
	if cause := context.Cause(ctx); cause != nil {
		reason += ": " + cause.Error()
	}
	select {
	case notes <- cancelledNotification(id, reason):
	default:
		s.h.refused(s.id, "cancellation", cap(notes), false)
		return
	}
	if q := s.q.Load(); s.h.shared && q != nil && notes == q.notifications {
		s.ensurePump(true)
	}
}

func (s *session) requestSampling(ctx context.Context, route callRoute, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	raw, err := s.call(ctx, route, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams)
	if err != nil {
		return nil, err
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("lifeline: decode sampling result: %w", err)
	}
	if res.Content, err = mcp.ParseSamplingContent(res.Content); err != nil {
		return nil, fmt.Errorf("lifeline: decode sampling content: %w", err)
	}
	return &res, nil
}

func (s *session) requestElicitation(ctx context.Context, route callRoute, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, err := s.call(ctx, route, string(mcp.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("lifeline: decode elicitation result: %w", err)
	}
	return &res, nil
}

func (s *session) listRoots(ctx context.Context, route callRoute, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	raw, err := s.call(ctx, route, string(mcp.MethodListRoots), req.Params)
	if err != nil {
		return nil, err
	}
	var res mcp.ListRootsResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("lifeline: decode roots result: %w", err)
	}
	return &res, nil
}

// RequestSampling implements server.SessionWithSampling; outside a request
// the request goes on the GET stream.
func (s *session) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	q := s.queues()
	return s.requestSampling(ctx, callRoute{requests: q.requests, notes: q.notifications}, req)
}

// RequestElicitation implements server.SessionWithElicitation.
func (s *session) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	q := s.queues()
	return s.requestElicitation(ctx, callRoute{requests: q.requests, notes: q.notifications}, req)
}

// ListRoots implements server.SessionWithRoots.
func (s *session) ListRoots(ctx context.Context, req mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	q := s.queues()
	return s.listRoots(ctx, callRoute{requests: q.requests, notes: q.notifications}, req)
}
