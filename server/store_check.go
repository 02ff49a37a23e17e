package server

import (
	"context"
	"sync"
)

// storeCheck runs the readiness check's question to the store at most once
// at a time: probes that arrive while one is being asked wait for its
// answer instead of asking again, so that a burst of probes (many load
// balancers, or anyone who can reach the listener) costs the store one
// call, not one connection each held for the check's whole timeout while
// the store is already in trouble.
type storeCheck struct {
	mu      sync.Mutex
	running *storeCheckRun // the question being asked, or nil
}

// storeCheckRun is one question to the store and, once done is closed,
// its answer.
type storeCheckRun struct {
	done chan struct{}
	err  error
}

// do returns the answer of ask, asked now, or of the question already
// being asked. The question is bounded by storeCheckTimeout, not by the
// ctx of the probe that asks it (which others may be waiting on); each
// probe waits at most until its own ctx ends, and then gets ctx's error.
func (c *storeCheck) do(ctx context.Context, ask func(context.Context) error) error {
	c.mu.Lock()
	run := c.running
	if run == nil {
		run = &storeCheckRun{done: make(chan struct{})}
		c.running = run
		c.mu.Unlock()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeCheckTimeout)
		run.err = ask(actx)
		cancel()
		c.mu.Lock()
		c.running = nil
		c.mu.Unlock()
		close(run.done)
	} else {
		c.mu.Unlock()
	}
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
