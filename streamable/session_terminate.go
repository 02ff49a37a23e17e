package streamable

import (
	"context"
	"fmt"
	"time"
)

// beginTerminate moves an active session to terminating: no request or
// stream starts any more, pending server-to-client requests fail and the
// GET stream is closed (a blocked write interrupted). Unless graceful, the
// running requests are cancelled too (cancelRunning); Shutdown, graceful,
// lets them run for a while first. It reports whether this call started
// the termination, and returns the channels that close once the session's
// GET handler and POST workers have exited. Callers hold s.life.
func (s *session) beginTerminate(cause error, graceful bool) (started bool, exits []<-chan struct{}) {
	if !s.state.CompareAndSwap(stateActive, stateTerminating) {
		return false, nil
	}
	s.endContext(cause)
	if !s.stateless { // a stateless session's calls fail at once anyway
		s.calls.failAll(fmt.Errorf("lifeline: %w", cause))
	}
	s.mu.Lock()
	g := s.get
	if s.work > 0 {
		s.idle = make(chan struct{})
		exits = append(exits, s.idle)
	}
	if r := s.rep; r != nil {
		if r.pump.done != nil && !(graceful && s.h.drainsToReplicas()) {
			exits = append(exits, r.pump.done) // a drain's pumps end with it (cluster_drain.go)
		}
		if r.watch.done != nil {
			exits = append(exits, r.watch.done)
		}
	}
	s.mu.Unlock()

	if !graceful {
		s.cancelRunning(cause)
	}
	if g != nil {
		g.close(cause)
		exits = append(exits, g.exited())
	}
	return true, exits
}

// cancelRunning cancels every running request of a terminating session with
// cause, and squeezes their response writers to the stall threshold: an
// answer that exists (the tool returned, or returns on cancellation) is
// still written to a client that reads it, with its id, while one that
// stopped reading loses its response within the threshold.
func (s *session) cancelRunning(cause error) {
	s.mu.Lock()
	s.cancelled = true
	var running []*postStream
	for p := s.running; p != nil; p = p.nextWork {
		running = append(running, p)
	}
	posts := s.postsLocked()
	s.mu.Unlock()
	for _, p := range running {
		p.cancel(cause)
	}
	for _, st := range posts {
		st.squeeze(s.h.stallThreshold())
	}
}

// interruptPosts closes the response writers of a terminating session's
// requests, interrupting blocked writes: the termination's wait is over.
func (s *session) interruptPosts(cause error) {
	s.mu.Lock()
	s.interrupted = true
	posts := s.postsLocked()
	s.mu.Unlock()
	for _, st := range posts {
		st.close(cause)
	}
}

func (s *session) postsLocked() []*sseStream {
	posts := make([]*sseStream, 0, len(s.posts))
	for st := range s.posts {
		posts = append(posts, st)
	}
	return posts
}

// finishTerminate unregisters a terminating session everywhere it should
// end: in this process always, and in the store unless the session lives
// on for other replicas (this one is shutting down) or already ended there.
// Callers hold s.life.
func (s *session) finishTerminate(ctx context.Context, cause error) {
	if !s.state.CompareAndSwap(stateTerminating, stateTerminated) {
		return
	}
	defer s.closeEnded()
	if !s.stateless {
		s.h.log.Debug("lifeline: session ended", "session", logID(s.id), "cause", cause.Error())
	}
	s.h.removeSession(s.id)
	if s.opened != 0 {
		opened := s.h.epoch.Add(s.opened)
		if s.h.shared && cause == errShutdown {
			opened = time.Time{} // it lives on, on the other replicas
		}
		s.h.met.sessionEnded(cause, s.ProtocolVersion(), opened)
	}
	s.h.mcp.UnregisterSession(ctx, s.id)
	if s.stateless || cause == errEndedElsewhere || cause == errExpiredInStore || cause == errDeletedInStore || s.livesOn(cause) || cause == errDiscarded {
		return // never stored, already ended there, removed by the caller, or kept for the other replicas
	}
	if log := s.h.cfg.EventLog; log != nil {
		if err := log.PurgeSession(ctx, s.id); err != nil {
			s.h.log.Warn("lifeline: purge the session's events", "session", logID(s.id), "err", err)
		}
	}
	if err := s.h.store.Terminate(ctx, s.id); err != nil && !isGone(err) {
		s.h.log.Warn("lifeline: store terminate failed", "session", logID(s.id), "err", err)
	}
}

// terminate runs the whole termination path (ctx reaches mcp-go's
// unregister hooks) and waits, bounded by the
// cleanup timeout, for the session's handlers to exit. It reports whether
// this call terminated the session; a call that lost the race to another
// termination waits (bounded) for that one to finish. The lifecycle lock is
// held only to change state: once terminating, no GET can start, so the
// wait itself does not need it.
func (s *session) terminate(ctx context.Context, cause error) bool {
	s.life.Lock()
	started, exits := s.beginTerminate(cause, false)
	s.life.Unlock()
	if !started {
		if s.stateless {
			// Its one request is done (this runs as it returns):
			// whoever is terminating it (Shutdown) needs nothing more,
			// and its answer must not wait for them.
			return false
		}
		t := time.NewTimer(s.h.cfg.CleanupTimeout)
		defer t.Stop()
		select {
		case <-s.endedChan():
		case <-t.C:
		}
		return false
	}
	if !s.h.waitExits(s.id, exits) {
		s.interruptPosts(cause)
	}
	s.life.Lock()
	s.finishTerminate(ctx, cause)
	s.life.Unlock()
	return true
}
