package streamable

import "context"

// sessionContext is a session's context and the function that ends it,
// made together on first use (session.context).
type sessionContext struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// context returns the session's context: it ends, with the cause the
// session started terminating with (context.Cause), when the session starts
// terminating, and at once if it already has. It is made on the first call;
// every call returns the same one. It takes no lock: callers may hold s.mu.
func (s *session) context() context.Context {
	if c := s.lc.Load(); c != nil {
		return c.ctx
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	if !s.lc.CompareAndSwap(nil, &sessionContext{ctx: ctx, cancel: cancel}) {
		cancel(nil) // another call made it first
		return s.lc.Load().ctx
	}
	// endContext stores its cause before it looks for a context, and this
	// stored the context before it looks for a cause: one of the two sees
	// the other's, so a context made while the session ends is ended too,
	// by either or both, with the same (first) cause.
	if cause := s.endCause.Load(); cause != nil {
		cancel(*cause)
	}
	return ctx
}

// endContext ends the session's context with cause (the first cause given
// stays, as context.Cause keeps the first), or has it made ended. It takes
// no lock.
func (s *session) endContext(cause error) { s.endContextWith(&cause) }

// endContextWith is endContext with the cause's address: given a
// package-level error's, it allocates nothing (endEphemeral's, on every
// 2026-07-28 request).
func (s *session) endContextWith(cause *error) {
	s.endCause.CompareAndSwap(nil, cause)
	if c := s.lc.Load(); c != nil {
		c.cancel(*s.endCause.Load())
	}
}

// endedWith returns the cause the session started terminating with, nil
// while it is active: what context.Cause of its context returns, without
// making the context.
func (s *session) endedWith() error {
	if cause := s.endCause.Load(); cause != nil {
		return *cause
	}
	return nil
}
