package streamable

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// A running request is watched for two things: its heartbeat interval
// passing with nothing sent (the keep-alive that upgrades its response to
// SSE), and, for a request whose context is detached from its client's (a
// resumable one on its handler goroutine, detachedContext's), its client
// leaving (clientGone). A timer and a context callback per request did
// that, and cost a JSON tools/call more than any other guarantee of the
// transport (two allocations, a place in the runtime's timer heap, and the
// request context's children map: about 1.5 µs and 7 allocations of a call
// that answers in microseconds).
//
// requestWatch watches requests in their first moments instead, all of
// them from one goroutine that looks every watchTick: a request that
// answers before that costs a place in a list, taken and given back under
// a mutex. One still running at the look after its first (watched for at
// least a tick), or whose keep-alive is due before the next look, is
// handed off: it gets its own timer, for what is left of its keep-alive
// interval, and its own context callback, as before, and leaves the list.
// So the list holds only requests younger than two ticks, every
// keep-alive is on time to the timer's precision, and a
// client that leaves is noticed at once, except in a request's first two
// ticks, when it is noticed at the next look.
//
// The goroutine is started by the first request that needs it and exits
// once the list has been empty for watchLinger (so an idle transport runs
// none); Shutdown stops it and joins it, handing every request still
// listed off first. A request added after that is handed off at once.
type requestWatch struct {
	keepAlive time.Duration // the heartbeat interval; 0: no keep-alives
	tick      time.Duration

	mu      sync.Mutex
	head    *postStream
	running bool // the goroutine runs (or is about to)
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup // the goroutine

	// The POST bodies being read (body_watch.go).
	reads       map[*http.Request]bodyRead
	timedReads  int       // the reads listed with a due time
	readsDue    time.Time // no timed read is due before this
	readsClosed bool      // Shutdown began: reads are interrupted, new ones refused
}

// watchEntry is a request's place in the watch. Fields are guarded by the
// watch's mu once the request is added.
type watchEntry struct {
	prev, next *postStream
	linked     bool
	since      time.Time
	keepAlive  bool            // owed and not handed off
	client     context.Context // the client's request context, until its leaving is noticed or handed off
	timer      *time.Timer     // the keep-alive, handed off
	stopClient func() bool     // the client's callback, handed off
	// Set by the request's own goroutine, before it is added, never
	// changed: added, it was listed (or handed off); clientOwned, its
	// client is watched here (watchClientInline).
	added, clientOwned bool
}

// watchTick is how often the watch looks at its requests: the longest a
// client that leaves a young request goes unnoticed, and about how young a
// request must answer to cost no timer.
const watchTick = 20 * time.Millisecond

// watchLinger is how long the watch's goroutine waits with no request
// listed before it exits.
const watchLinger = time.Second

func newRequestWatch(keepAlive time.Duration) *requestWatch {
	w := &requestWatch{keepAlive: keepAlive, tick: watchTick, stop: make(chan struct{})}
	if keepAlive > 0 && keepAlive < w.tick {
		w.tick = max(keepAlive, time.Millisecond)
	}
	return w
}

// add watches p: for its keep-alive (keepAlive, when the transport sends
// them), and for its client's leaving if watchClientInline asked for it.
// A request with neither is not listed.
func (w *requestWatch) add(p *postStream, keepAlive bool) {
	e := &p.watch
	e.keepAlive = keepAlive && w.keepAlive > 0
	if !e.keepAlive && e.client == nil {
		return
	}
	e.added, e.since = true, time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		w.handOffLocked(p, 0)
		return
	}
	e.linked, e.prev, e.next = true, nil, w.head
	if w.head != nil {
		w.head.watch.prev = p
	}
	w.head = p
	w.startLocked()
}

// startLocked starts the goroutine unless it runs, or the watch is closed.
// Callers hold w.mu.
func (w *requestWatch) startLocked() {
	if !w.running && !w.closed {
		w.running = true
		w.wg.Add(1)
		go w.run()
	}
}

// remove ends p's watch: it leaves the list, or its handed-off timer and
// callback are stopped. A clientGone already started still runs: the
// request waits for it on clientWatch.
func (w *requestWatch) remove(p *postStream) {
	e := &p.watch
	if !e.added {
		return
	}
	w.mu.Lock()
	if e.linked {
		w.unlinkLocked(p)
	}
	e.keepAlive, e.client = false, nil
	t, stop := e.timer, e.stopClient
	e.timer, e.stopClient = nil, nil
	w.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	if stop != nil && stop() {
		p.clientWatch.Done()
	}
}

func (w *requestWatch) unlinkLocked(p *postStream) {
	e := &p.watch
	if e.prev != nil {
		e.prev.watch.next = e.next
	} else {
		w.head = e.next
	}
	if e.next != nil {
		e.next.watch.prev = e.prev
	}
	e.prev, e.next, e.linked = nil, nil, false
}

// handOffLocked gives p, watched for age, its own timer for the rest of
// its keep-alive interval and its own callback for its client's leaving.
// Callers hold w.mu and unlink p.
func (w *requestWatch) handOffLocked(p *postStream, age time.Duration) {
	e := &p.watch
	if e.client != nil {
		p.clientWatch.Add(1) // before remove's Wait: under w.mu, while listed
		e.stopClient = context.AfterFunc(e.client, p.clientLeft)
		e.client = nil
	}
	if e.keepAlive {
		e.keepAlive = false
		e.timer = time.AfterFunc(max(w.keepAlive-age, 0), p.rs.onFirstUse)
	}
}

// run is the watch's goroutine: it looks every tick until the list has
// been empty for watchLinger, or the watch is closed.
func (w *requestWatch) run() {
	defer w.wg.Done()
	t := time.NewTimer(w.tick)
	defer t.Stop()
	var gone []*postStream
	idle := time.Duration(0)
	for {
		select {
		case <-w.stop:
			w.mu.Lock()
			for p := w.head; p != nil; p = w.head {
				w.handOffLocked(p, time.Since(p.watch.since))
				w.unlinkLocked(p)
			}
			w.running = false
			w.mu.Unlock()
			return
		case <-t.C:
		}
		var exit bool
		if gone, idle, exit = w.look(time.Now(), idle, gone[:0]); exit {
			return
		}
		t.Reset(w.tick)
	}
}

// look is one of run's looks, at now: the listed requests are looked at
// and the body reads expired, under w.mu; then each request whose client
// left gets clientGone, on a goroutine of its own that its clientWatch
// counts, before look returns, whether or not the goroutine exits after it
// (a look can hand off the last listed request as it finds its client
// gone). idle is how long the watch has been empty before the look, and
// look returns it after; exit, with running cleared, once that reaches
// watchLinger. gone is scratch space, returned for the next look.
func (w *requestWatch) look(now time.Time, idle time.Duration, gone []*postStream) ([]*postStream, time.Duration, bool) {
	w.mu.Lock()
	gone = w.lookLocked(now, gone)
	w.expireReadsLocked(now)
	exit := false
	if w.head != nil || w.timedReads > 0 {
		idle = 0
	} else if idle += w.tick; idle >= watchLinger {
		w.running, exit = false, true
	}
	w.mu.Unlock()
	for i, p := range gone {
		gone[i] = nil
		go func() {
			defer p.clientWatch.Done()
			p.clientGone()
		}()
	}
	return gone, idle, exit
}

// lookLocked appends to gone the listed requests whose client has left,
// counting each in its clientWatch, and hands off those watched for a tick
// already. Callers hold w.mu.
func (w *requestWatch) lookLocked(now time.Time, gone []*postStream) []*postStream {
	for p := w.head; p != nil; {
		next := p.watch.next
		e := &p.watch
		if e.client != nil && e.client.Err() != nil {
			e.client = nil
			p.clientWatch.Add(1)
			gone = append(gone, p)
		}
		// Handed off at the look after its first, or at this one when
		// its keep-alive is due before the next.
		if age := now.Sub(e.since); age >= w.tick || (e.keepAlive && age+w.tick > w.keepAlive) {
			w.handOffLocked(p, age)
			w.unlinkLocked(p)
		}
		p = next
	}
	return gone
}

// close stops the watch's goroutine and waits for it; the requests it
// listed are handed off, and any added later is handed off at once.
func (w *requestWatch) close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
}
