package streamable

import (
	"context"
	"errors"
	"sync"
	"testing"
)

// A 2026-07-28 request's session that nothing asked for a context or a
// wait on its end makes neither: its end costs no context, no cancel
// function and no channel. One asked for after the end is ended already,
// with the end's cause.
func TestQuietEphemeralSessionMakesNoContextOrEndedChannel(t *testing.T) {
	_, s := addedEphemeral(t, "modern-", true)
	s.endEphemeral()
	if s.lc.Load() != nil {
		t.Error("the quiet session made a context")
	}
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended != nil {
		t.Error("the quiet session made its ended channel")
	}
	ctx := s.context()
	select {
	case <-ctx.Done():
	default:
		t.Fatal("a context made after the end is not done")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, errRequestDone) {
		t.Errorf("its cause: %v, want %v", cause, errRequestDone)
	}
	select {
	case <-s.endedChan():
	default:
		t.Error("an ended channel made after the end is not closed")
	}
}

// A session's ended channel, made while it is active, closes when the
// session is terminated, and the same channel is returned to every caller.
func TestEndedChanClosesAtTheEnd(t *testing.T) {
	_, s := addedEphemeral(t, "modern-", true)
	ch := s.endedChan()
	if s.endedChan() != ch {
		t.Fatal("endedChan returned two channels")
	}
	select {
	case <-ch:
		t.Fatal("ended is closed while the session is active")
	default:
	}
	s.endEphemeral()
	select {
	case <-ch:
	default:
		t.Fatal("ended is not closed after the end")
	}
}

// A session's context made while the session starts terminating, on
// another goroutine, ends all the same, with the first cause given; a
// later cause changes nothing. Run under -race, each round races the two.
func TestSessionContextMadeWhileEndingEnds(t *testing.T) {
	h := newEphemeralRig(t)
	first, later := errors.New("first cause"), errors.New("later cause")
	for range 500 {
		s := newEphemeralSession(h, "modern-", true)
		var wg sync.WaitGroup
		ctxs := make([]context.Context, 2)
		start := make(chan struct{})
		for i := range ctxs {
			wg.Go(func() {
				<-start
				ctxs[i] = s.context()
			})
		}
		wg.Go(func() {
			<-start
			s.endContext(first)
		})
		close(start)
		wg.Wait()
		s.endContext(later)
		if ctxs[0] != ctxs[1] {
			t.Fatal("two calls made two contexts")
		}
		select {
		case <-ctxs[0].Done():
		default:
			t.Fatal("a context made while the session ended is not done")
		}
		if cause := context.Cause(ctxs[0]); cause != first {
			t.Fatalf("its cause: %v, want %v", cause, first)
		}
		if cause := s.endedWith(); cause != first {
			t.Fatalf("endedWith: %v, want %v", cause, first)
		}
	}
}
