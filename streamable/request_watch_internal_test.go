package streamable

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// watchedRequest is a postStream as far as requestWatch uses one: its
// keep-alive runs fired.
func watchedRequest(fired chan<- struct{}) *postStream {
	p := &postStream{}
	p.rs = &p.ownSession
	p.rs.onFirstUse = func() { fired <- struct{}{} }
	return p
}

func (w *requestWatch) listed() (n int, running bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for p := w.head; p != nil; p = p.watch.next {
		n++
	}
	return n, w.running
}

// A request that outlives its keep-alive interval gets its keep-alive
// once, whether the interval ends while the watch lists it (shorter than
// a tick) or after it was handed a timer of its own; and not before the
// interval has passed.
func TestWatchKeepAliveFiresOnceAfterTheInterval(t *testing.T) {
	for _, interval := range []time.Duration{3 * time.Millisecond, 3 * watchTick} {
		w := newRequestWatch(interval)
		fired := make(chan struct{}, 2)
		p := watchedRequest(fired)
		start := time.Now()
		w.add(p, true)
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			t.Fatalf("interval %v: no keep-alive", interval)
		}
		if since := time.Since(start); since < interval {
			t.Fatalf("interval %v: the keep-alive came after %v", interval, since)
		}
		testutil.Eventually(t, 10*time.Second, "the request handed off", func() bool { n, _ := w.listed(); return n == 0 })
		w.remove(p)
		select {
		case <-fired:
			t.Fatalf("interval %v: a second keep-alive", interval)
		default:
		}
		w.close()
	}
}

// A request that answers in its first moments costs no timer, and its
// keep-alive never comes; the watch's goroutine exits once nothing has
// been listed for watchLinger, and the next request starts it again.
func TestWatchGoroutineComesAndGoes(t *testing.T) {
	w := newRequestWatch(time.Hour)
	defer w.close()
	fired := make(chan struct{}, 1)
	p := watchedRequest(fired)
	w.add(p, true)
	if n, running := w.listed(); n != 1 || !running {
		t.Fatalf("listed %d, running %v, want the request listed and the goroutine running", n, running)
	}
	w.remove(p)
	if p.watch.timer != nil {
		t.Fatal("a request that answered at once was given a timer")
	}
	testutil.Eventually(t, 10*time.Second, "the goroutine exits", func() bool { _, running := w.listed(); return !running })
	w.wg.Wait() // it has returned, not only said so
	q := watchedRequest(fired)
	w.add(q, true)
	if _, running := w.listed(); !running {
		t.Fatal("the next request did not start the goroutine again")
	}
	w.remove(q)
}

// Closing the watch hands every listed request a timer of its own, so its
// keep-alive still comes; a request added after the close is handed off
// at once.
func TestWatchCloseHandsOff(t *testing.T) {
	w := newRequestWatch(50 * time.Millisecond)
	fired := make(chan struct{}, 2)
	p := watchedRequest(fired)
	w.add(p, true)
	w.close()
	if n, running := w.listed(); n != 0 || running {
		t.Fatalf("after close: listed %d, running %v", n, running)
	}
	q := watchedRequest(fired)
	w.add(q, true)
	if n, _ := w.listed(); n != 0 || q.watch.timer == nil {
		t.Fatalf("added after close: listed %d, timer %v", n, q.watch.timer)
	}
	for range 2 {
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			t.Fatal("a handed-off keep-alive never came")
		}
	}
	w.remove(p)
	w.remove(q)
}

// A request that is neither owed a keep-alive nor watched for its client
// is not listed, and starts nothing.
func TestWatchListsOnlyWhatItWatches(t *testing.T) {
	w := newRequestWatch(0)
	defer w.close()
	p := watchedRequest(make(chan struct{}, 1))
	w.add(p, true) // keep-alives off
	if n, running := w.listed(); n != 0 || running {
		t.Fatalf("listed %d, running %v, want nothing", n, running)
	}
	w.remove(p)
}

type detachedKey struct{}

// detachedContext keeps r's values and drops its cancellation, which the
// request watch reports instead, unless r's context has a deadline (the
// request's context must report it) or a ContextFunc is set (it may
// derive from its context what must end with the request): then it is
// r's own.
func TestDetachedContextKeepsValuesAndDeadlines(t *testing.T) {
	h := newEphemeralRig(t)
	base, cancel := context.WithCancel(context.WithValue(context.Background(), detachedKey{}, "v"))
	defer cancel()
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(base)
	ctx, detached := h.detachedContext(r)
	if !detached || ctx.Done() != nil || ctx.Value(detachedKey{}) != "v" {
		t.Errorf("without a deadline: detached %v, Done %v, value %v; want true, nil and r's value", detached, ctx.Done(), ctx.Value(detachedKey{}))
	}
	due := time.Now().Add(time.Hour)
	timed, stop := context.WithDeadline(base, due)
	defer stop()
	ctx, detached = h.detachedContext(r.WithContext(timed))
	if dl, ok := ctx.Deadline(); detached || ctx != timed || !ok || !dl.Equal(due) {
		t.Errorf("with a deadline: detached %v, deadline %v %v; want r's own context", detached, dl, ok)
	}
	withFunc := New(server.NewMCPServer("detached", "1"), Config{HeartbeatInterval: Disabled,
		ContextFunc: func(ctx context.Context, _ *http.Request) context.Context { return ctx }})
	defer withFunc.Close()
	if ctx, detached = withFunc.detachedContext(r); detached || ctx != base {
		t.Errorf("with a ContextFunc: detached %v; want r's own context", detached)
	}
}

// A look that finds a request's client gone starts the request's
// clientGone even when it is the look after which the watch's goroutine
// exits (it handed the last listed request off as it found it): the
// request is cancelled, and its clientWatch does not wait forever.
func TestWatchStartsClientGoneAtItsLastLook(t *testing.T) {
	w := newRequestWatch(0)
	defer w.close()
	w.running = true // the test looks itself: add starts no goroutine
	fired := make(chan struct{}, 1)
	p := watchedRequest(fired)
	var cancel context.CancelCauseFunc
	p.ctx, cancel = context.WithCancelCause(context.Background())
	p.cancel = cancel
	client, leave := context.WithCancel(context.Background())
	leave()
	p.watch.client, p.watch.clientOwned = client, true
	w.add(p, false)
	now := time.Now()
	w.mu.Lock()
	p.watch.since = now.Add(-w.tick) // a tick old: handed off at this look
	w.mu.Unlock()
	_, _, exit := w.look(now, watchLinger-w.tick, nil)
	if n, running := w.listed(); !exit || n != 0 || running {
		t.Fatalf("look: exit %v, %d listed, running %v; want the goroutine's last look, nothing listed", exit, n, running)
	}
	w.remove(p)
	waited := make(chan struct{})
	go func() {
		p.clientWatch.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("clientWatch still waits: the gone client's clientGone never ran")
	}
	if cause := context.Cause(p.ctx); !errors.Is(cause, errClientLeft) {
		t.Errorf("the request's context ended with %v, want %v", cause, errClientLeft)
	}
}
