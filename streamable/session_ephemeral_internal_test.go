package streamable

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func newEphemeralRig(t *testing.T) *Handler {
	t.Helper()
	h := New(server.NewMCPServer("ephemeral", "1"), Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), HeartbeatInterval: Disabled,
		CleanupTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// addedEphemeral makes a handler and an ephemeral session added to it.
func addedEphemeral(t *testing.T, prefix string, modern bool) (*Handler, *session) {
	t.Helper()
	h := newEphemeralRig(t)
	s := newEphemeralSession(h, prefix, modern)
	if f := h.addSession(s); f != nil {
		t.Fatal(f)
	}
	return h, s
}

// requireEnded fails t unless s has ended the way terminate ends it: out of the
// handler, its context cancelled with errRequestDone, ended closed and
// its state terminated.
func requireEnded(t *testing.T, h *Handler, s *session) {
	t.Helper()
	h.mu.Lock()
	_, held := h.sessions[s.id]
	h.mu.Unlock()
	if held {
		t.Error("the ended session is still in the handler")
	}
	if st := h.Stats(); st.Sessions != 0 {
		t.Errorf("Stats after the end: %+v, want no sessions", st)
	}
	if cause := context.Cause(s.ctx()); !errors.Is(cause, errRequestDone) {
		t.Errorf("the session's context ended with %v, want %v", cause, errRequestDone)
	}
	select {
	case <-s.endedChan():
	default:
		t.Error("ended is not closed")
	}
	if got := s.state.Load(); got != stateTerminated {
		t.Errorf("state %d, want terminated (%d)", got, stateTerminated)
	}
}

// A 2026-07-28 request's session that nothing holds when its request
// returns ends at once, as terminate ends it; its place among the
// 2026-07-28 requests (MaxSessions) is given back.
func TestEndEphemeralEndsAQuietSession(t *testing.T) {
	h, s := addedEphemeral(t, "modern-", true)
	s.endEphemeral()
	requireEnded(t, h, s)
	s.mu.Lock()
	cancelled := s.cancelled
	s.mu.Unlock()
	if cancelled {
		t.Error("the quiet session went terminate's whole way (cancelRunning ran)")
	}
	h.mu.Lock()
	modern, requests := h.modernSessions, h.modernRequests
	h.mu.Unlock()
	if modern != 0 || requests != 0 {
		t.Errorf("after the end: %d 2026-07-28 sessions, %d requests counted; want 0 and 0", modern, requests)
	}
}

// A session something still holds (here a request still counted as
// running) goes the whole way, terminate's: the running request is
// cancelled and waited for, and the session ends once it is done.
func TestEndEphemeralWaitsForWhatHoldsTheSession(t *testing.T) {
	h, s := addedEphemeral(t, "stateless-", false)
	reqCtx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) }) // a failed test leaves no goroutine behind
	p := &postStream{cancel: cancel}
	if started, _ := s.addWork(p); !started {
		t.Fatal("addWork refused on an active session")
	}
	released := make(chan struct{})
	go func() {
		defer close(released)
		<-reqCtx.Done() // the whole path cancels the running request
		s.endWork(p)
	}()
	s.endEphemeral()
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the running request was never cancelled")
	}
	requireEnded(t, h, s)
}

// A session Shutdown (or any termination) has already begun to end is
// left to it: endEphemeral neither ends it a second time nor waits (for
// CleanupTimeout, 5 s here: the bound below is well short of it).
func TestEndEphemeralLeavesATerminationUnderWay(t *testing.T) {
	_, s := addedEphemeral(t, "modern-", true)
	s.life.Lock()
	started, _ := s.beginTerminate(errShutdown, true)
	s.life.Unlock()
	if !started {
		t.Fatal("beginTerminate did not start on an active session")
	}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		s.endEphemeral()
	}()
	select {
	case <-returned:
	case <-time.After(2 * time.Second):
		t.Fatal("endEphemeral waited on a termination under way")
	}
	select {
	case <-s.endedChan():
		t.Fatal("endEphemeral ended a session another termination owns")
	default:
	}
	s.life.Lock()
	s.finishTerminate(context.Background(), errShutdown)
	s.life.Unlock()
	select {
	case <-s.endedChan():
	default:
		t.Fatal("the termination under way did not end the session")
	}
}

// A broadcast delivered here (deliverHere) skips ephemeral sessions: a
// stateless request's session has no GET stream to carry it, and holding
// it would only make queues (and, with replicas, a pump) for nothing.
func TestBroadcastHereSkipsEphemeralSessions(t *testing.T) {
	h := newEphemeralRig(t)
	s := newEphemeralSession(h, "stateless-", false)
	s.Initialize()
	if f := h.addSession(s); f != nil {
		t.Fatal(f)
	}
	defer s.endEphemeral()
	h.deliverHere(mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION,
		Notification: mcp.Notification{Method: "notifications/tools/list_changed"}})
	s.mu.Lock()
	held := s.queuedInQueues()
	s.mu.Unlock()
	if held != 0 || s.q.Load() != nil {
		t.Errorf("the stateless request's session holds %d broadcast(s) (queues made: %v)", held, s.q.Load() != nil)
	}
}

// No lookup by a client's id finds an ephemeral session: its id is never
// issued, and since it is not a secret either (ephemeralID), a client
// that learns or guesses one still names no session: 404, whether the
// handler looks it up (session, deliverLocal) or would adopt it
// (adoptOnce).
func TestClientIDsNeverNameAnEphemeralSession(t *testing.T) {
	for _, modern := range []bool{true, false} {
		h, s := addedEphemeral(t, "named-", modern)
		if got := h.lookup(s.id); got != nil {
			t.Errorf("modern %v: lookup(%q) found the ephemeral session", modern, s.id)
		}
		r, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set(headerSessionID, s.id)
		if got, f := h.session(r, true); got != nil || f == nil || f.status != http.StatusNotFound {
			t.Errorf("modern %v: session() = %v, %+v; want nil and 404", modern, got, f)
		}
		if got, f, again := h.adoptOnce(r, s.id); got != nil || f == nil || f.status != http.StatusNotFound || again {
			t.Errorf("modern %v: adoptOnce = %v, %+v, %v; want nil, 404, false", modern, got, f, again)
		}
		if !s.active() {
			t.Errorf("modern %v: the ephemeral session was touched", modern)
		}
	}
}

// ephemeralID writes its prefix, its handler's tag and a number, in
// base32: a different id each call, from goroutines calling at once too
// (the race detector watches the count), and none another Handler gives.
func TestEphemeralIDsAreBase32AndDistinct(t *testing.T) {
	const callers, n = 2, 5000
	handlers := [2]*Handler{newEphemeralRig(t), newEphemeralRig(t)}
	if handlers[0].ephemeral.tag == handlers[1].ephemeral.tag {
		t.Fatalf("two handlers drew the same tag %q", handlers[0].ephemeral.tag)
	}
	seen := make(map[string]bool, len(handlers)*callers*n)
	for _, h := range handlers {
		var ids [callers][]string
		var wg sync.WaitGroup
		start := make(chan struct{})
		for c := range callers {
			wg.Go(func() {
				<-start
				for range n {
					ids[c] = append(ids[c], h.ephemeralID("p-"))
				}
			})
		}
		close(start)
		wg.Wait()
		for _, called := range ids {
			for _, id := range called {
				count, ok := strings.CutPrefix(id, "p-"+h.ephemeral.tag)
				if !ok || len(h.ephemeral.tag) != 13 || count == "" || len(count) > 13 || strings.Trim(h.ephemeral.tag+count, base32) != "" {
					t.Fatalf("ephemeralID(\"p-\") = %q: want p-, the tag %q and up to 13 characters of %s", id, h.ephemeral.tag, base32)
				}
				if seen[id] {
					t.Fatalf("ephemeralID repeated %q", id)
				}
				seen[id] = true
			}
		}
	}
}

// A postStream, one for every request, is a small object to the runtime
// (at most 512 bytes): a larger one with pointers is allocated on a path of
// its own, code a request would run for it alone.
func TestPostStreamFitsASmallObject(t *testing.T) {
	if size := unsafe.Sizeof(postStream{}); size > 512 {
		t.Errorf("a postStream takes %d bytes, over 512", size)
	}
}

// A session, one for every 2026-07-28 request, is a small object to the
// runtime too (TestPostStreamFitsASmallObject).
func TestSessionFitsASmallObject(t *testing.T) {
	if size := unsafe.Sizeof(session{}); size > 512 {
		t.Errorf("a session takes %d bytes, over 512", size)
	}
}
