package streamable

import "context"

// What a session's end is watched through: its context (ctx), made at once
// for a session-era session and on first use for an ephemeral one, and the
// channel closed once it is terminated (endedChan), made on first use.

// sessionContext is a session's context and the function that ends it,
// made together on first use (session.ctx).
type sessionContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// ctx returns the session's context: it ends when the session starts
// terminating, with the cause endedWith reports (context.Cause), and is
// ended already if made after that. It is made on the first call; every
// call returns the same one. It takes no lock: callers may hold s.mu.
func (s *session) ctx() context.Context {
	if c := s.lc.Load(); c != nil {
		return c.ctx
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if !s.lc.CompareAndSwap(nil, &sessionContext{ctx: ctx, cancel: cancel}) {
		cancel(nil) // another call made it first; this one is never handed out
		return s.lc.Load().ctx
	}
	// endContextWith stores its cause before it looks for a context, and
	// this stored the context before it looks for a cause: one of the two
	// sees the other's, so a context made while the session ends is ended
	// too, by either or both, with the same (first) cause.
	if cause := s.endedBy.Load(); cause != nil {
		cancel(*cause)
	}
	return ctx
}

// endContext ends the session's context with cause, or has it made ended.
// The first cause given stays, as context.Cause keeps the first. cause must
// not be nil. It takes no lock.
func (s *session) endContext(cause error) { s.endContextWith(&cause) }

// endContextWith is endContext given the cause's address. Given a
// package-level error's, it allocates nothing (endEphemeral's, on every
// 2026-07-28 request): the variable is then read whenever the cause is,
// and must never be assigned.
func (s *session) endContextWith(cause *error) {
	s.endedBy.CompareAndSwap(nil, cause)
	if c := s.lc.Load(); c != nil {
		c.cancel(*s.endedBy.Load())
	}
}

// endedWith returns the cause the session started terminating with, nil
// while it is active, without making the context. It is set just before
// the context (if made) is cancelled with the same cause: once the context
// is done, its context.Cause and endedWith agree.
func (s *session) endedWith() error {
	if cause := s.endedBy.Load(); cause != nil {
		return *cause
	}
	return nil
}

// endedChan returns a channel that is closed once the session is
// terminated (at once if it already is).
func (s *session) endedChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended == nil {
		s.ended = make(chan struct{})
		if s.endedClosed {
			close(s.ended)
		}
	}
	return s.ended
}

// closeEnded marks the session terminated for endedChan, closing its
// channel if one was made. It runs once, as the session's state becomes
// terminated.
func (s *session) closeEnded() {
	s.mu.Lock()
	s.endedClosed = true
	if s.ended != nil {
		close(s.ended)
	}
	s.mu.Unlock()
}
