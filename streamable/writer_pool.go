package streamable

import (
	"context"
	"sync"
)

// writerPool runs request writers (postStream.write) on goroutines that
// outlive them: a writer started on a fresh goroutine grows its stack
// through net/http's header writing and the first events, a cost each SSE
// response paid again; a parked one has grown it already. At most
// maxIdleWriters wait for the next writer; past that, a writer's goroutine
// exits with it. Each writer is still joined by its request (writerDone);
// the pool's goroutines are joined by the Handler's Shutdown.
type writerPool struct {
	jobs chan func() // unbuffered: a send goes through only to a parked goroutine
	stop chan struct{}
	done chan struct{} // closed once closed and no goroutine of the pool is left

	mu      sync.Mutex
	closed  bool
	running int // the pool's goroutines, parked or busy
	idle    int // parked
}

// maxIdleWriters bounds the goroutines parked waiting for a writer.
const maxIdleWriters = 128

func newWriterPool() *writerPool {
	return &writerPool{jobs: make(chan func()), stop: make(chan struct{}), done: make(chan struct{})}
}

// run runs f on a parked goroutine, or a new one.
func (wp *writerPool) run(f func()) {
	select {
	case wp.jobs <- f:
		return
	default:
	}
	wp.mu.Lock()
	if wp.closed {
		wp.mu.Unlock()
		go f() // after Shutdown began: its request still joins it
		return
	}
	wp.running++
	wp.mu.Unlock()
	go wp.work(f)
}

// work runs f, then the writers it is handed while it is parked, until the
// pool has enough parked goroutines or closes.
func (wp *writerPool) work(f func()) {
	for {
		f()
		f = nil // what the writer held is not kept while parked
		wp.mu.Lock()
		if wp.closed || wp.idle >= maxIdleWriters {
			wp.exitLocked()
			wp.mu.Unlock()
			return
		}
		wp.idle++
		wp.mu.Unlock()
		select {
		case f = <-wp.jobs:
			wp.mu.Lock()
			wp.idle--
			wp.mu.Unlock()
		case <-wp.stop:
			wp.mu.Lock()
			wp.idle--
			wp.exitLocked()
			wp.mu.Unlock()
			return
		}
	}
}

// exitLocked counts a goroutine of the pool out. Callers hold wp.mu.
func (wp *writerPool) exitLocked() {
	wp.running--
	if wp.closed && wp.running == 0 {
		close(wp.done)
	}
}

// close stops the pool's parked goroutines and waits, until ctx ends, for
// its busy ones to finish their writers and exit.
func (wp *writerPool) close(ctx context.Context) error {
	wp.mu.Lock()
	if !wp.closed {
		wp.closed = true
		close(wp.stop)
		if wp.running == 0 {
			close(wp.done)
		}
	}
	wp.mu.Unlock()
	select {
	case <-wp.done: // first: an ended ctx does not fail a pool that has stopped
		return nil
	default:
	}
	select {
	case <-wp.done:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
