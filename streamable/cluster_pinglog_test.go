package streamable_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// pingLog records when each ping request arrived on a stream; a goroutine
// reads the stream for it from watchPings until the test ends.
type pingLog struct {
	mu      sync.Mutex
	times   []time.Time
	endedAt time.Time             // when the stream ended
	endErr  error                 // how
	added   chan struct{}         // signalled (cap 1) on each ping
	others  chan testutil.Message // every message that is not a ping, in order
	done    chan struct{}         // closed when the watching goroutine has returned
}

func watchPings(t *testing.T, st *testutil.Stream) *pingLog {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &pingLog{added: make(chan struct{}, 1), others: make(chan testutil.Message, 64), done: make(chan struct{})}
	go func() {
		defer close(pl.done)
		for {
			m, err := st.NextMessage(ctx)
			if err == nil && m.Method != "ping" {
				select {
				case pl.others <- m:
				case <-ctx.Done():
					return
				}
				continue
			}
			if err != nil {
				if isClosed(st.Ended()) {
					pl.mu.Lock()
					pl.endedAt, pl.endErr = time.Now(), err
					pl.mu.Unlock()
				}
				return
			}
			pl.mu.Lock()
			pl.times = append(pl.times, time.Now())
			pl.mu.Unlock()
			select {
			case pl.added <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-pl.done })
	return pl
}

// since counts the pings that arrived after t0.
func (pl *pingLog) since(t0 time.Time) int {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	return countAfter(pl.times, t0)
}

// await waits until n pings arrived after t0, reporting false if the
// stream ends or d passes first.
func (pl *pingLog) await(n int, t0 time.Time, d time.Duration) bool {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for pl.since(t0) < n {
		select {
		case <-pl.added:
		case <-pl.done:
			return pl.since(t0) >= n
		case <-timeout.C:
			return false
		}
	}
	return true
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// end says whether and how the stream ended, relative to the event at t0.
func (pl *pingLog) end(t0 time.Time, event string) string {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.endedAt.IsZero() {
		return "still open"
	}
	when := fmt.Sprintf("%v after %s", pl.endedAt.Sub(t0).Round(time.Millisecond), event)
	if pl.endedAt.Before(t0) {
		when = fmt.Sprintf("%v before %s", t0.Sub(pl.endedAt).Round(time.Millisecond), event)
	}
	return fmt.Sprintf("ended %s (%v), after %d pings since %s", when, pl.endErr, countAfter(pl.times, t0), event)
}

// gaps lists the intervals between the pings that arrived after t0.
func (pl *pingLog) gaps(t0 time.Time) []time.Duration {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var out []time.Duration
	prev := t0
	for _, at := range pl.times {
		if at.After(t0) {
			out = append(out, at.Sub(prev).Round(time.Millisecond))
			prev = at
		}
	}
	return out
}

func countAfter(times []time.Time, t0 time.Time) int {
	n := 0
	for _, at := range times {
		if at.After(t0) {
			n++
		}
	}
	return n
}
