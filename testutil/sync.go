package testutil

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Barrier releases a fixed number of parties at once: each calls Wait, and
// all return together when the last arrives. It makes races deterministic:
// the racing operations start as close together as the scheduler allows.
type Barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	release chan struct{}
}

// NewBarrier returns a barrier for n parties.
func NewBarrier(n int) *Barrier { return &Barrier{n: n, release: make(chan struct{})} }

// Wait blocks until all parties have arrived, or ctx ends.
func (b *Barrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		b.mu.Lock()
		arrived := b.arrived
		b.mu.Unlock()
		return fmt.Errorf("barrier: %d of %d arrived: %w", arrived, b.n, ctx.Err())
	}
}

// Eventually polls cond every few milliseconds until it holds, failing the
// test if it does not within timeout. It is the bounded poll for states
// that have no event to wait on.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Context returns a context that ends after d or with the test.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// NoLeaks records the goroutines running now and, when the test ends,
// fails it if any other goroutine is still running (after goleak's bounded
// retries). Call it first in a test, before starting servers.
func NoLeaks(t testing.TB) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		if err := goleak.Find(ignore); err != nil {
			t.Errorf("goroutines left behind: %v", err)
		}
	})
}
