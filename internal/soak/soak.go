// Package soak runs lifeline-demo replicas under load and faults and
// counts what clients lost: the engine of cmd/lifeline-soak and of the
// tests that run it briefly.
//
// Run starts a redis-server (unless the store is memory), N replicas of
// the demo sharing it behind a round-robin testutil.FaultProxy (optionally
// cutting connections at seeded random points), and a number of
// testutil.ResumingClient workers, each calling lifeline_progress (its
// notifications on the call's own stream) and lifeline_notify_session (on
// the session's GET stream) in turn, while replicas are killed with
// SIGKILL and restarted, or drained with SIGTERM and restarted, if asked.
// At the end it waits, bounded, for every notification the server said it
// sent, and returns a Summary.
package soak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// Options configures a Run.
type Options struct {
	Clients  int           // concurrent clients (1 when 0)
	Replicas int           // demo replicas (1 when 0)
	Duration time.Duration // how long the load runs (10 s when 0)
	Memory   bool          // the replicas use the in-memory store, not a shared redis-server (only with 1 replica)
	Cuts     bool          // the proxy cuts connections at random points
	Kills    bool          // replicas are killed with SIGKILL and restarted
	Drains   bool          // replicas are drained with SIGTERM and restarted, one by one
	Seed     uint64        // seeds the random cuts
	// CutMeanBytes is the mean of the random cuts' exponential
	// distribution (DefaultCutMeanBytes when 0).
	CutMeanBytes int64
	// KillEvery and DrainEvery space the kills and the drains
	// (DefaultKillEvery, DefaultDrainEvery when 0).
	KillEvery, DrainEvery time.Duration
	// Binary is the lifeline-demo binary; built into Dir when empty.
	Binary string
	// Dir holds the binary, the replicas' logs and redis-server's files; a
	// temporary directory, removed at the end, when empty.
	Dir string
	// Logf, when set, is told about each fault and each client's trouble.
	Logf func(format string, args ...any)
}

// Defaults of Options.
const (
	DefaultCutMeanBytes = 32 << 10
	DefaultKillEvery    = 20 * time.Second
	DefaultDrainEvery   = 30 * time.Second
	// deliveryWait bounds the wait, at the end, for the notifications
	// still on their way.
	deliveryWait = 15 * time.Second
	// restartPause is how long a killed replica stays down.
	restartPause = time.Second
)

// replicaArgs are the flags every replica runs with: a heartbeat short
// enough that a dead replica's streams are free within about 1.5 s (the
// lease lasts three heartbeats), a short drain delay (the proxy does not
// read /readyz) and room for running calls to finish.
var replicaArgs = []string{"-heartbeat", "500ms", "-drain-delay", "300ms", "-shutdown-timeout", "10s"}

// ReplicaArgs returns the flags Run gives every replica, for tests that
// start replicas of their own the same way.
func ReplicaArgs() []string { return append([]string(nil), replicaArgs...) }

// Run runs the soak described by opts until its Duration has passed and
// the clients have settled, or ctx ends, and returns what happened.
func Run(ctx context.Context, opts Options) (Summary, error) {
	opts = opts.withDefaults()
	sum := Summary{Options: opts}
	if opts.Memory && opts.Replicas > 1 {
		return sum, errors.New("soak: the in-memory store serves one replica; use redis for more")
	}
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "lifeline-soak-")
		if err != nil {
			return sum, fmt.Errorf("soak: %w", err)
		}
		defer os.RemoveAll(d)
		dir = d
	}
	if opts.Binary == "" {
		bin, err := testutil.BuildDemo(ctx, dir)
		if err != nil {
			return sum, fmt.Errorf("soak: %w", err)
		}
		opts.Binary = bin
	}
	ropts := testutil.ReplicaOptions{Binary: opts.Binary, N: opts.Replicas, Dir: dir, Args: ReplicaArgs()}
	if !opts.Memory {
		redis, err := testutil.LaunchRedisServer(dir)
		if err != nil {
			return sum, fmt.Errorf("soak: %w", err)
		}
		defer redis.Stop()
		ropts.RedisAddr = redis.Addr()
	}
	if opts.Cuts {
		ropts.Proxy.Random = testutil.RandomCuts{Seed: opts.Seed, MeanBytes: opts.CutMeanBytes, MinBytes: 256}
	}
	reps, err := testutil.LaunchReplicas(ctx, ropts)
	if err != nil {
		return sum, fmt.Errorf("soak: %w", err)
	}
	defer reps.Close()
	if sum.Start, err = profile(ctx, reps); err != nil {
		return sum, fmt.Errorf("soak: at the start: %w", err)
	}

	clients := make([]*testutil.ResumingClient, opts.Clients)
	for i := range clients {
		clients[i] = testutil.NewResumingClient(testutil.ResumingClientConfig{
			URL: reps.URL(), Name: fmt.Sprintf("c%d", i), Logf: opts.Logf,
		})
		defer clients[i].Close()
		if err := clients[i].Start(ctx); err != nil {
			return sum, fmt.Errorf("soak: client %d: %w", i, err)
		}
	}

	loadCtx, stopLoad := context.WithTimeout(ctx, opts.Duration)
	defer stopLoad()
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work(loadCtx, ctx, c)
		}()
	}
	faults := chaos(loadCtx, reps, opts) // returns when the load stops
	wg.Wait()
	sum.Kills, sum.Drains, sum.FaultErrors = faults.kills, faults.drains, faults.errs
	// Every replica serves again before the clients settle.
	for i := range reps.N() {
		if !reps.Running(i) {
			if err := reps.Restart(ctx, i); err != nil {
				return sum, fmt.Errorf("soak: restart replica %d at the end: %w", i, err)
			}
		}
	}
	settle, cancel := context.WithTimeout(ctx, deliveryWait)
	defer cancel()
	for _, c := range clients {
		_ = c.WaitDelivered(settle)
	}
	for _, c := range clients {
		sum.add(c.Stats())
		if opts.Logf != nil {
			for _, m := range c.Missing(10) {
				opts.Logf("soak: missing %s", m)
			}
		}
		c.Close()
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = c.Delete(dctx)
		dcancel()
	}
	sum.ProxyCuts = reps.Proxy().Stats().Cuts
	if sum.End, err = profile(ctx, reps); err != nil {
		return sum, fmt.Errorf("soak: at the end: %w", err)
	}
	return sum, ctx.Err()
}

func (o Options) withDefaults() Options {
	o.Clients = max(o.Clients, 1)
	o.Replicas = max(o.Replicas, 1)
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.CutMeanBytes <= 0 {
		o.CutMeanBytes = DefaultCutMeanBytes
	}
	if o.KillEvery <= 0 {
		o.KillEvery = DefaultKillEvery
	}
	if o.DrainEvery <= 0 {
		o.DrainEvery = DefaultDrainEvery
	}
	return o
}

// work is one client's load until loadCtx ends: lifeline_progress (5
// steps, 20 ms apart) and lifeline_notify_session (10 notifications of 64
// bytes) in turn. Calls run under ctx (the run's), so the one in flight
// when the load stops finishes.
func work(loadCtx, ctx context.Context, c *testutil.ResumingClient) {
	for i := 0; loadCtx.Err() == nil; i++ {
		if i%2 == 0 {
			_, _ = c.Progress(ctx, 5, 20)
		} else {
			_, _ = c.Notify(ctx, 10, 64)
		}
	}
}

// profile sums the replicas' goroutines and heap.
func profile(ctx context.Context, reps *testutil.Replicas) (Figures, error) {
	var f Figures
	for i := range reps.N() {
		p, err := reps.Profile(ctx, i)
		if err != nil {
			return f, err
		}
		f.Goroutines += p.Goroutines
		f.HeapAlloc += p.HeapAlloc
	}
	return f, nil
}
