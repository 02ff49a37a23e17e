package streamable

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// errClosed ends the sessions CloseSessions closes.
var errClosed = errors.New("session closed by the server (CloseSessions)")

// CloseSessions ends every session this handler holds (created or adopted
// here; not 2026-07-28 requests or stateless ones, which are requests
// rather than sessions) as DELETE would, and keeps serving: a new
// initialize creates a session as before. Each session's GET stream is
// closed (a blocked write interrupted), its running requests cancelled and
// answered with an error carrying their ids, its pending server-to-client
// requests failed, its events purged and its record terminated in the
// store, so that every replica sharing the store answers its id with 404;
// it is unregistered from the MCPServer (unregister hooks run with ctx's
// values). With a shared store the record is terminated first, as by
// DELETE: a session whose record the store could not terminate is left
// alone, and its error returned. The wait for the sessions' handlers is
// bounded by ctx and by the cleanup timeout; handlers still writing then
// are interrupted. Sessions created while it runs are not closed.
// It returns the store's errors and ctx's, joined.
func (h *Handler) CloseSessions(ctx context.Context) error {
	var closing []*session
	for _, s := range h.snapshot() {
		if !s.stateless && !s.modern && s.active() {
			closing = append(closing, s)
		}
	}
	var errs []error
	if h.shared {
		closing, errs = h.terminateInStore(ctx, closing)
	}
	// Each session is ended here as closed, by this call or, for one whose
	// end in the store a watch or stream saw first, by that (closingHere);
	// all are waited for, and with replicas each one's events purged.
	var begun []*session
	var exits []<-chan struct{}
	for _, s := range closing {
		s.life.Lock()
		started, ex := s.beginTerminate(errClosed, false)
		s.life.Unlock()
		if started {
			begun = append(begun, s)
			exits = append(exits, ex...)
		} else {
			exits = append(exits, s.endedChan())
		}
	}
	wctx, cancel := context.WithTimeout(ctx, h.cfg.CleanupTimeout)
	for _, ch := range exits {
		select {
		case <-ch:
			continue
		case <-wctx.Done():
		}
		h.log.Error("lifeline: CloseSessions: session handlers did not exit in time; interrupting their writes",
			"timeout", h.cfg.CleanupTimeout, "err", context.Cause(wctx))
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("lifeline: close sessions: handlers still running: %w", ctx.Err()))
		}
		for _, s := range begun {
			s.interruptPosts(errClosed)
		}
		break
	}
	cancel()
	fctx := context.WithoutCancel(ctx)
	for _, s := range begun {
		s.life.Lock()
		s.finishTerminate(fctx, errClosed)
		s.life.Unlock()
	}
	if h.shared && h.cfg.EventLog != nil {
		// Every record this call terminated: a session's local end, by
		// whoever began it, leaves the log to the one that ended the
		// record (session.finishTerminate).
		for _, s := range closing {
			if err := h.cfg.EventLog.PurgeSession(fctx, s.id); err != nil {
				h.log.Warn("lifeline: purge the session's events", "session", logID(s.id), "err", err)
			}
		}
	}
	if len(begun) > 0 {
		h.log.Info("lifeline: sessions closed by CloseSessions", "sessions", len(begun))
	}
	return errors.Join(errs...)
}

// closeConcurrency bounds the store terminations CloseSessions runs at
// once: each can wait out another replica's live-cache window (redisstore,
// up to its LiveCacheWindow), which one after the other would add up over
// thousands of sessions.
const closeConcurrency = 16

// terminateInStore terminates the sessions' records, up to
// closeConcurrency at once on goroutines it joins, and returns those it
// terminated (or found gone) in their order, with the errors of the rest;
// once ctx ends, no more are begun.
func (h *Handler) terminateInStore(ctx context.Context, sessions []*session) ([]*session, []error) {
	results := make([]error, len(sessions))
	slots := make(chan struct{}, closeConcurrency)
	var wg sync.WaitGroup
	for i, s := range sessions {
		if !takeSlot(ctx, slots) {
			for j := i; j < len(sessions); j++ {
				results[j] = errNotBegun
			}
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			// Before the store ends the record: this replica's watch
			// and streams may see the end before this call ends the
			// local copy.
			s.closingHere.Store(true)
			if err := h.cfg.Store.Terminate(ctx, s.id); err != nil && !isGone(err) {
				s.closingHere.Store(false)
				results[i] = fmt.Errorf("lifeline: close session %s: store terminate: %w", logID(s.id), err)
			}
		})
	}
	wg.Wait()
	var done []*session
	var errs []error
	notBegun := false
	for i, err := range results {
		switch {
		case err == nil:
			done = append(done, sessions[i])
		case errors.Is(err, errNotBegun):
			notBegun = true
		default:
			errs = append(errs, err)
		}
	}
	if notBegun {
		errs = append(errs, fmt.Errorf("lifeline: close sessions: %w", ctx.Err()))
	}
	return done, errs
}

// takeSlot takes one of slots, waiting for one to be given back, unless
// ctx ends first (or has ended).
func takeSlot(ctx context.Context, slots chan struct{}) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// errNotBegun marks a session CloseSessions did not get to before its
// context ended.
var errNotBegun = errors.New("not begun")

// endedInStoreCause is the cause with which a session whose end the
// store reported on its bus ends here: errClosed when CloseSessions on
// this replica is ending the record (closingHere), else errEndedElsewhere.
// (A request or the sweeper that finds the record gone asks goneCause,
// which says the same.)
func (s *session) endedInStoreCause() error {
	if s.closingHere.Load() {
		return errClosed
	}
	return errEndedElsewhere
}
