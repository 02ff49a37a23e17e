package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// faultCounts is what chaos did.
type faultCounts struct {
	kills, drains, errs int
}

// chaos kills and drains replicas, as opts asks, one at a time, until
// loadCtx ends: every KillEvery one is killed with SIGKILL and restarted
// restartPause later on its port; every DrainEvery one is drained with
// SIGTERM and restarted once it has exited. Replicas are taken in turn. A
// restart runs under the run's context, not loadCtx, so the load's end
// never leaves a replica half started.
func chaos(loadCtx context.Context, reps *testutil.Replicas, opts Options) faultCounts {
	var fc faultCounts
	logf := func(format string, args ...any) {
		if opts.Logf != nil {
			opts.Logf(format, args...)
		}
	}
	if !opts.Kills && !opts.Drains {
		<-loadCtx.Done()
		return fc
	}
	runCtx := context.WithoutCancel(loadCtx)
	nextKill, nextDrain := time.Now().Add(opts.KillEvery), time.Now().Add(opts.DrainEvery)
	killTurn, drainTurn := 0, 0
	for {
		next, kill := nextDrain, false
		if opts.Kills && (!opts.Drains || nextKill.Before(nextDrain)) {
			next, kill = nextKill, true
		}
		if sleepUntil(loadCtx, next) != nil {
			return fc
		}
		if kill {
			i := killTurn % reps.N()
			killTurn++
			nextKill = time.Now().Add(opts.KillEvery)
			logf("soak: SIGKILL replica %d", i)
			if err := reps.Kill(i); err != nil {
				fc.errs++
				logf("soak: %v", err)
			}
			fc.kills++
			_ = sleepUntil(runCtx, time.Now().Add(restartPause))
			if err := restart(runCtx, reps, i); err != nil {
				fc.errs++
				logf("soak: %v", err)
			}
			continue
		}
		i := drainTurn % reps.N()
		drainTurn++
		nextDrain = time.Now().Add(opts.DrainEvery)
		logf("soak: SIGTERM (drain) replica %d", i)
		if err := reps.Drain(i); err != nil {
			fc.errs++
			logf("soak: %v", err)
		}
		fc.drains++
		if err := restart(runCtx, reps, i); err != nil {
			fc.errs++
			logf("soak: %v", err)
		}
	}
}

// restart starts replica i again, bounded.
func restart(ctx context.Context, reps *testutil.Replicas, i int) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := reps.Restart(ctx, i); err != nil {
		return fmt.Errorf("restart replica %d: %w", i, err)
	}
	return nil
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
