package streamable

import (
	"context"
	"fmt"
	"time"
)

// Shutdown stops the transport: new requests get 503 and every session is
// terminated. GET streams close at once (blocked writes interrupted) and
// pending server-to-client requests fail, but requests already running are
// left to finish and their answers are written, whatever their size, while
// ctx leaves time: they are cancelled when what remains of ctx falls to a
// quarter (at most the cleanup timeout), so that they can still answer, with
// their ids, before it ends; when it ends, the writes still blocked are
// interrupted. Shutdown waits for all of it, bounded by ctx, then
// unregisters the sessions and stops the transport's goroutines. It returns
// ctx's error if handlers were still running when ctx ended. With replicas
// and an event log, what the sessions hold for their GET streams is then
// handed on (cluster_drain.go), given up to the cleanup timeout even when
// ctx has ended.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.shutdownOnce.Do(func() { h.shutdownErr = h.shutdown(ctx) })
	return h.shutdownErr
}

// Close is Shutdown bounded by the cleanup timeout.
func (h *Handler) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.CleanupTimeout)
	defer cancel()
	return h.Shutdown(ctx)
}

func (h *Handler) shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.shutting = true
	h.shuttingNow.Store(true)
	h.mu.Unlock()
	h.watch.closeReads()
	close(h.stopSweep)
	// The sweeper stops between sessions; an expiry in progress takes at
	// most the cleanup timeout, and is joined at the end, before the
	// meters stop (deferred first, so run last: a store call the sweeper
	// has in flight is counted).
	defer h.met.stop()
	defer func() { <-h.sweepDone }()

	sessions := h.snapshot()
	var exits []<-chan struct{}
	var begun []*session
	for _, s := range sessions {
		s.life.Lock()
		started, ex := s.beginTerminate(errShutdown, true)
		s.life.Unlock()
		if started {
			exits = append(exits, ex...)
			begun = append(begun, s)
		}
	}
	// With replicas and an event log, requests' responses are let go of at
	// once: their clients resume on another replica, and get the rest from
	// the shared log while the requests finish here.
	if h.shared && h.cfg.EventLog != nil {
		for _, s := range begun {
			s.releaseRunning()
		}
	}
	// Listen streams end at once, with their final result, like GET
	// streams. Running requests (2026-07-28 ones too) get until the grace
	// ends, then are cancelled; what they answer is written until ctx
	// ends, then interrupted.
	for _, s := range begun {
		if s.listen {
			s.cancelRunning(errShutdown)
		}
	}
	if exits = h.awaitGrace(ctx, exits); len(exits) > 0 {
		for _, s := range begun {
			s.cancelRunning(errShutdown)
		}
	}
	err := waitAll(ctx, exits)
	if err != nil {
		for _, s := range begun {
			s.interruptPosts(errShutdown)
		}
	}
	if h.drainsToReplicas() {
		h.endDrain(ctx, begun)
	}
	if h.bcastCancel != nil {
		h.bcastCancel() // cuts a publication or subscription in progress short
	}
	h.stopTap(ctx)
	h.stopBroadcastListener(ctx)
	for _, s := range begun {
		s.life.Lock()
		s.finishTerminate(context.WithoutCancel(ctx), errShutdown)
		s.life.Unlock()
	}
	// Sessions that a DELETE or an expiry was already terminating finish
	// on their own; wait for them too.
	if err == nil {
		ended := make([]<-chan struct{}, len(sessions))
		for i, s := range sessions {
			ended[i] = s.endedChan()
		}
		err = waitAll(ctx, ended)
	}
	h.lingers.Wait() // each ends at once: stopSweep (and drainEnd) is closed
	h.closeWaiting(nil)
	h.handBacks.Wait() // each ends once its connection is closed or its server took it
	if werr := h.writers.close(ctx); werr != nil && err == nil {
		err = fmt.Errorf("lifeline: shutdown: request writers still running: %w", werr)
	}
	h.watch.close() // what it still lists gets timers and callbacks of its own
	if h.sched != nil {
		h.sched.Close()
	}
	return err
}

// awaitGrace waits for the channels to close until Shutdown's grace for
// running requests ends (shutdownGrace), and returns those still open.
func (h *Handler) awaitGrace(ctx context.Context, chans []<-chan struct{}) []<-chan struct{} {
	if len(chans) == 0 {
		return nil
	}
	var stop <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		t := time.NewTimer(shutdownGrace(time.Until(deadline), h.cfg.CleanupTimeout))
		defer t.Stop()
		stop = t.C
	}
	for i, ch := range chans {
		select {
		case <-ch:
		case <-stop:
			return chans[i:]
		case <-ctx.Done():
			return chans[i:]
		}
	}
	return nil
}

// shutdownGrace is how long Shutdown lets running requests run before it
// cancels them, when its context ends in left: all but a quarter of it, and
// at most the cleanup timeout less, which is left for the cancelled requests
// to answer.
func shutdownGrace(left, cleanup time.Duration) time.Duration {
	return left - min(left/4, cleanup)
}

// waitAll waits for every channel to close, or for ctx to end.
func waitAll(ctx context.Context, chans []<-chan struct{}) error {
	for _, ch := range chans {
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("lifeline: shutdown: handlers still running: %w", ctx.Err())
		}
	}
	return nil
}
