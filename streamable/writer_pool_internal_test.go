package streamable

import (
	"context"
	"sync"
	"testing"
	"time"
)

// A writer pool keeps at most maxIdleWriters goroutines parked after a
// burst of more writers than that at once, reuses them for later writers,
// and its close stops every one.
func TestWriterPoolParksAtMostItsBound(t *testing.T) {
	wp := newWriterPool()
	const burst = maxIdleWriters + 72
	release := make(chan struct{})
	var started, finished sync.WaitGroup
	started.Add(burst)
	finished.Add(burst)
	for range burst {
		wp.run(func() {
			started.Done()
			<-release
			finished.Done()
		})
	}
	started.Wait() // every writer runs at once: none parked yet
	close(release)
	finished.Wait()
	parked := func() (idle, running int) {
		wp.mu.Lock()
		defer wp.mu.Unlock()
		return wp.idle, wp.running
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		idle, running := parked()
		if idle == running && running <= maxIdleWriters && running > 0 {
			break // every goroutine left has parked, within the bound
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a burst of %d writers: %d parked of %d running; want all parked, at most %d", burst, idle, running, maxIdleWriters)
		}
		time.Sleep(time.Millisecond) // a bounded poll: parking has no event to wait on
	}
	// A later writer runs on a parked goroutine: no new one.
	_, before := parked()
	ran := make(chan struct{})
	wp.run(func() { close(ran) })
	<-ran
	if _, after := parked(); after > before {
		t.Fatalf("a writer after the burst started a goroutine (%d -> %d running)", before, after)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := wp.close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, running := parked(); running != 0 {
		t.Fatalf("%d goroutines left after close", running)
	}
}
