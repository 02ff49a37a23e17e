package streamable

import (
	"context"
	"time"
)

// watchIdle is how long a session's watch outlives its last request: a
// session serving one request after another keeps one subscription, rather
// than subscribing for each.
const watchIdle = time.Second

// watchRetry is the first wait before a watch subscribes again after the
// store refused; it doubles up to maxPumpBackoff.
const watchRetry = 100 * time.Millisecond

// awaitRetry waits d, or less if the session ends; it reports whether the
// session is still live.
func (s *session) awaitRetry(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx().Done():
		return false
	}
}

// watchState is a session's watch on its bus, with replicas: while the
// session runs requests on this replica (and for watchIdle after), one
// goroutine holds a subscription to the session's bus, so that a
// termination on another replica (DELETE, or expiry seen there), which the
// store broadcasts by closing every subscription, ends the local copy at
// once and cancels its running requests, with errEndedElsewhere as the
// cause. Guarded by session.mu.
type watchState struct {
	done chan struct{} // closed when the running watch has exited; nil when none runs
	work uint64        // requests begun so far: the watch exits once it stops moving
}

// startWatchLocked starts the session's watch unless one runs. It is called
// by beginWork, with s.mu held, for a shared store only.
func (s *session) startWatchLocked() {
	s.rep.watch.work++
	if s.rep.watch.done != nil || s.stateless {
		return
	}
	s.rep.watch.done = make(chan struct{})
	go s.runWatch(s.rep.watch.done)
}

// runWatch subscribes to the session's bus and waits for the subscription
// to close (the session ended in the store, or the store dropped it), for
// the session to end here, or for it to have had no request for watchIdle.
// It marks itself exited only once its subscription is closed, and goes
// on watching if a request began while it was closing. A session the store
// says is gone is terminated here, after the watch has marked itself
// exited (termination waits for a running watch).
func (s *session) runWatch(done chan struct{}) {
	var ended bool
	retry := watchRetry
	for {
		var idle, failed bool
		var seen uint64
		ended, idle, failed, seen = s.watchBus()
		if failed && s.working() && s.awaitRetry(retry) {
			// The store could not be listened to: try again, slower and
			// slower, while the session runs requests.
			retry = min(2*retry, maxPumpBackoff)
			continue
		}
		retry = watchRetry
		s.mu.Lock()
		again := idle && s.endedWith() == nil && (s.work > 0 || s.rep.watch.work != seen)
		if !again && s.rep.watch.done == done {
			s.rep.watch.done = nil
		}
		s.mu.Unlock()
		if !again {
			break
		}
	}
	close(done)
	if ended {
		s.h.log.Debug("lifeline: session ended on another replica; ending its requests here", "session", logID(s.id))
		s.terminate(context.Background(), s.endedInStoreCause())
	}
}

// watchBus is the watch itself; it reports whether the session ended in
// the store, or else whether it stopped for being idle, with the count of
// requests begun that it saw last. Everything published on the bus is for
// others (replies are taken by the requests and streams waiting for them)
// and is dropped. Its subscription is closed when it returns.
func (s *session) watchBus() (ended, idle, failed bool, seen uint64) {
	ctx := s.ctx()
	sub, err := s.h.store.Subscribe(ctx, s.id)
	switch {
	case isGone(err):
		return ctx.Err() == nil, false, false, 0
	case err != nil:
		if ctx.Err() == nil {
			s.h.log.Debug("lifeline: cannot watch the session's bus yet; retrying",
				"session", logID(s.id), "err", err)
		}
		return false, false, ctx.Err() == nil, 0
	}
	defer sub.Close()
	timer := time.NewTimer(watchIdle)
	defer timer.Stop()
	seen = s.watchedWork()
	for {
		select {
		case _, ok := <-sub.Messages():
			if !ok {
				return ctx.Err() == nil && s.h.endedInStore(s.id), false, false, 0
			}
			s.h.met.received()
		case <-ctx.Done():
			return false, false, false, 0
		case <-timer.C:
			if now := s.watchedWork(); now == seen && !s.working() {
				return false, true, false, seen
			}
			seen = s.watchedWork()
			timer.Reset(watchIdle)
		}
	}
}

func (s *session) watchedWork() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rep.watch.work
}

// working reports whether the session runs a request.
func (s *session) working() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.work > 0
}
