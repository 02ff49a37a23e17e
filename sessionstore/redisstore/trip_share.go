package redisstore

import (
	"context"
	"errors"
	"sync"
	"time"
)

// tripShare lets calls made at once share round trips to Redis: up to
// len(slots) calls go out on their own; while that many are in flight, the
// calls that come meanwhile wait together in a batch (at most maxBatch of
// them) and go out as pipelines once a slot frees (one pipeline, unless
// the sender splits it: eval_shared.go). Under load a call then costs a
// fraction of a round trip's system calls and of the client's per-call
// work; alone, it costs one round trip, as without sharing. Each call is
// sent after it was made, so its answer is as fresh as a call of its own.
// With linger set, no call goes out alone: each batch waits linger from
// its first call for more, then for a slot (for calls whose callers do
// not wait on anyone: StoreStream's).
//
// A call returns within opTimeout, and at once when its context ends while
// it waits for a batch; a batched call whose caller returned is not sent,
// unless its pipeline went out already. A batch runs on a goroutine
// of its own (started when the batch forms, joined by close); once the
// Store is closed, a call that finds no slot free waits for one, bounded
// by its context and opTimeout, and goes out alone.
type tripShare[Q, A any] struct {
	send      tripSend[Q, A]
	opTimeout time.Duration
	slots     chan struct{}
	maxBatch  int
	mu        sync.Mutex
	forming   *tripBatch[Q, A]
	closed    bool
	batches   sync.WaitGroup // Add under mu, before closed
	// linger, when set, sends no call alone: each batch waits this long
	// from its first call before it takes a slot (set before first use).
	linger time.Duration
}

// tripBatch is calls that go out together. answers is written by the
// batch's goroutine before done closes.
type tripBatch[Q, A any] struct {
	calls   []Q
	ctxs    []context.Context // each call's: its caller's, ended at most opTimeout after it joined, and when it returns
	last    time.Time         // when the last call's context ends at the latest
	answers []A
	done    chan struct{}
}

// newTripShare returns a tripShare that sends with send, up to alone calls
// on their own at once and up to maxBatch in one batch, each call bounded
// by opTimeout.
func newTripShare[Q, A any](send tripSend[Q, A], opTimeout time.Duration, alone, maxBatch int) *tripShare[Q, A] {
	return &tripShare[Q, A]{send: send, opTimeout: opTimeout, slots: make(chan struct{}, alone), maxBatch: maxBatch}
}

// tripSend is how a tripShare sends. alone sends one call within ctx (the
// caller's, bounded by opTimeout). pipeline sends a batch's calls within
// ctx (opTimeout from when the batch began to wait for a slot), as one
// pipeline or several, checking waiting(i) (whether calls[i]'s caller
// still waits for its answer) before each pipeline and answering a call
// whose caller left with failed. keep copies what a call refers to that
// its caller may reuse once it returned (a batched call can outlive its
// caller); nil when there is nothing. failed answers a call that was not
// sent, with why.
type tripSend[Q, A any] struct {
	alone    func(ctx context.Context, call Q) A
	pipeline func(ctx context.Context, calls []Q, waiting func(i int) bool) []A
	keep     func(call Q) Q
	failed   func(err error) A
}

// do sends call, on its own when a slot is free, else in the batch
// forming, and returns its answer; err is the context's when ctx ended
// first.
func (t *tripShare[Q, A]) do(ctx context.Context, call Q) (ans A, err error) {
	if t.linger == 0 && t.tryAlone() {
		defer t.doneAlone()
		octx, cancel := context.WithTimeout(ctx, t.opTimeout)
		defer cancel()
		return t.send.alone(octx, call), nil
	}
	// The call's context ends with its caller's, opTimeout from now, and
	// when do returns: a call whose caller left is not sent.
	cctx, cancel := context.WithTimeout(ctx, t.opTimeout)
	defer cancel()
	b, i, ok := t.join(cctx, call)
	if !ok {
		return t.closedDo(ctx, call)
	}
	select {
	case <-b.done:
		return b.answers[i], nil
	case <-cctx.Done():
		if err := context.Cause(ctx); err != nil {
			return ans, err
		}
		return t.send.failed(cctx.Err()), nil
	}
}

// closedDo sends call on its own once a slot frees, within opTimeout: the
// Store is closed, and no batch goroutine starts.
func (t *tripShare[Q, A]) closedDo(ctx context.Context, call Q) (ans A, err error) {
	octx, cancel := context.WithTimeout(ctx, t.opTimeout)
	defer cancel()
	select {
	case t.slots <- struct{}{}:
		defer t.doneAlone()
	case <-octx.Done():
		if err := context.Cause(ctx); err != nil {
			return ans, err
		}
		return t.send.failed(octx.Err()), nil
	}
	return t.send.alone(octx, call), nil
}

// tryAlone takes a slot if one is free.
func (t *tripShare[Q, A]) tryAlone() bool {
	select {
	case t.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (t *tripShare[Q, A]) doneAlone() { <-t.slots }

// join adds call to the batch forming (starting one, and its goroutine,
// when none is or the one forming is full) and returns it and call's
// place in it; ok is false, and call is in no batch, once the Store is
// closed.
func (t *tripShare[Q, A]) join(ctx context.Context, call Q) (b *tripBatch[Q, A], i int, ok bool) {
	if t.send.keep != nil {
		call = t.send.keep(call)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, 0, false
	}
	if t.forming == nil || len(t.forming.calls) == t.maxBatch {
		nb := &tripBatch[Q, A]{done: make(chan struct{})}
		t.forming = nb
		t.batches.Go(func() { t.run(nb) })
	}
	b = t.forming
	b.calls = append(b.calls, call)
	b.ctxs = append(b.ctxs, ctx)
	b.last = time.Now().Add(t.opTimeout)
	return b, len(b.calls) - 1, true
}

// run waits for a slot, closes b to new calls and sends them within
// opTimeout from then (whatever any one caller's context: each waits on
// its own), then answers each. It stops waiting for the slot once every
// call's context has ended (each at most opTimeout after its call joined):
// no caller is left to answer. Every path closes b.done.
func (t *tripShare[Q, A]) run(b *tripBatch[Q, A]) {
	defer close(b.done)
	if t.linger > 0 {
		lingering := time.NewTimer(t.linger)
		<-lingering.C // bounded, and short: every caller waits at most opTimeout anyway
	}
	if !t.takeSlotFor(b) {
		b.answers = make([]A, len(b.calls))
		for i := range b.answers {
			b.answers[i] = t.send.failed(context.DeadlineExceeded)
		}
		return
	}
	defer t.doneAlone()
	octx, cancel := context.WithTimeout(context.Background(), t.opTimeout)
	defer cancel()
	waiting := func(i int) bool { return b.ctxs[i].Err() == nil }
	b.answers = t.send.pipeline(octx, b.calls, waiting)
}

// takeSlotFor waits for a slot for b and closes b to new calls; false
// when b's last call's context ended first (b is closed then too).
func (t *tripShare[Q, A]) takeSlotFor(b *tripBatch[Q, A]) bool {
	for {
		t.mu.Lock()
		wait := time.Until(b.last)
		t.mu.Unlock()
		timer := time.NewTimer(wait)
		select {
		case t.slots <- struct{}{}:
			timer.Stop()
			t.closeBatch(b)
			return true
		case <-timer.C:
		}
		t.mu.Lock()
		over := !time.Now().Before(b.last) // no call joined meanwhile
		if over && t.forming == b {
			t.forming = nil
		}
		t.mu.Unlock()
		if over {
			return false
		}
	}
}

// closeBatch ends b's forming: later calls start another.
func (t *tripShare[Q, A]) closeBatch(b *tripBatch[Q, A]) {
	t.mu.Lock()
	if t.forming == b {
		t.forming = nil
	}
	t.mu.Unlock()
}

// close stops new batches from forming (markClosed) and waits for the
// batches running: each ends within opTimeout of its last call's
// joining, or of its taking a slot.
func (t *tripShare[Q, A]) close() {
	t.markClosed()
	t.batches.Wait()
}

// markClosed stops new batches from forming: later calls go out alone.
func (t *tripShare[Q, A]) markClosed() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
}

// errCallerLeft answers a batched call that was not sent because its
// caller had returned (its context ended) before its pipeline went out.
var errCallerLeft = errors.New("redisstore: not sent: the caller left before its pipeline went out")

// stillWaiting returns the indexes of at whose callers still wait
// (waiting), in order, and answers each of the others with
// failed(errCallerLeft).
func stillWaiting[A any](at []int, waiting func(i int) bool, answers []A, failed func(error) A) []int {
	kept := make([]int, 0, len(at))
	for _, i := range at {
		if waiting(i) {
			kept = append(kept, i)
		} else {
			answers[i] = failed(errCallerLeft)
		}
	}
	return kept
}

// upTo returns 0, 1, ..., n-1.
func upTo(n int) []int {
	at := make([]int, n)
	for i := range at {
		at[i] = i
	}
	return at
}
