package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// commandCounter is a go-redis hook counting the checks a client sends
// (HGET, EVALSHA, EVAL: not the bus's commands), pipelined ones included.
type commandCounter struct{ n atomic.Int64 }

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c *commandCounter) count(cmd redis.Cmder) {
	switch cmd.Name() {
	case "hget", "evalsha", "eval":
		c.n.Add(1)
	}
}

// countedStore is a Store on a client of its own whose commands are
// counted.
func (e *env) countedStore(t *testing.T, opts redisstore.Options) (*redisstore.Store, *commandCounter) {
	t.Helper()
	c := newClient(t, e.addr)
	n := &commandCounter{}
	c.AddHook(n)
	if opts.Prefix == "" {
		opts.Prefix = prefix
	}
	s := redisstore.New(c, opts)
	t.Cleanup(func() { _ = s.Close() })
	return s, n
}

// Within its window a Store answers CheckLive from memory: a client's
// requests in a row cost one round trip per window, not one each; with
// the cache off (a negative window), one each.
func TestLiveCacheAnswersFromMemoryWithinTheWindow(t *testing.T) {
	e := newEnv(t)
	const window = time.Second
	s, sent := e.countedStore(t, redisstore.Options{LiveCacheWindow: window})
	off, offSent := e.countedStore(t, redisstore.Options{LiveCacheWindow: -1})
	mustCreate(t, s, "s", time.Minute)
	const checks = 200
	for _, st := range []struct {
		s    *redisstore.Store
		sent *commandCounter
	}{{s, sent}, {off, offSent}} {
		before := st.sent.n.Load()
		start := time.Now()
		for range checks {
			wantErr(t, "CheckLive", st.s.CheckLive(t.Context(), "s"), nil)
		}
		elapsed := time.Since(start)
		got := st.sent.n.Load() - before
		if st.s == off {
			if got != checks {
				t.Fatalf("without the cache %d checks sent %d commands, want one each", checks, got)
			}
			continue
		}
		// The first check, of a session not hot yet, is an HGET; then one
		// command per window that began (and one more for a Redis that
		// lost its scripts: Run's EVAL after a NOSCRIPT).
		if most := 1 + 2*(1+int64(elapsed/window)); got > most {
			t.Fatalf("%d checks in %v sent %d commands, want at most %d (window %v)", checks, elapsed, got, most, window)
		}
	}
}

// After Terminate returns on one Store, a CheckLive on any other Store
// answers ErrTerminated, even one that answered the session live from
// memory an instant before; and on the terminating Store itself.
func TestTerminateWaitsOutOtherStoresWindows(t *testing.T) {
	e := newEnv(t)
	const window = 300 * time.Millisecond
	a := e.store(t, redisstore.Options{LiveCacheWindow: window})
	b := e.store(t, redisstore.Options{LiveCacheWindow: window})
	for i, end := range []func(context.Context, string) error{a.Terminate, a.Remove} {
		id := fmt.Sprintf("s%d", i)
		mustCreate(t, a, id, time.Minute)
		wantErr(t, "CheckLive on A", a.CheckLive(t.Context(), id), nil)
		wantErr(t, "CheckLive on B", b.CheckLive(t.Context(), id), nil)
		wantErr(t, "end on A", end(t.Context(), id), nil)
		for name, st := range map[string]*redisstore.Store{"A": a, "B": b} {
			if err := st.CheckLive(t.Context(), id); err == nil {
				t.Fatalf("%s (%d): CheckLive on %s answered live after the session ended", id, i, name)
			} else if !errors.Is(err, sessionstore.ErrTerminated) && !errors.Is(err, sessionstore.ErrNotFound) {
				t.Fatalf("%s: CheckLive on %s: %v", id, name, err)
			}
		}
	}
}

// The window never outlasts the record: once Redis has expired a session,
// the next CheckLive answers ErrNotFound, however long the window.
func TestLiveCacheEndsWithTheRecordsExpiry(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{LiveCacheWindow: time.Second})
	mustCreate(t, s, "short", 150*time.Millisecond)
	wantErr(t, "CheckLive", s.CheckLive(t.Context(), "short"), nil)
	holds(t, "Redis to expire the record", func() bool {
		return e.raw.Exists(t.Context(), prefix+"session:short").Val() == 0
	})
	wantErr(t, "CheckLive after the expiry", s.CheckLive(t.Context(), "short"), sessionstore.ErrNotFound)
}

// Checks racing a Terminate: every CheckLive, on either Store, that began
// after Terminate returned answers the termination, while checks run on
// both Stores without pause (so that windows open on each as the session
// ends). Each round ends another session.
func TestNoCheckAfterTerminateAnswersLive(t *testing.T) {
	e := newEnv(t)
	const window = 20 * time.Millisecond
	a := e.store(t, redisstore.Options{LiveCacheWindow: window})
	b := e.store(t, redisstore.Options{LiveCacheWindow: window})
	const rounds = 40
	for r := range rounds {
		id := fmt.Sprintf("race%d", r)
		mustCreate(t, a, id, time.Minute)
		var ended atomic.Bool
		var violations atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, st := range []*redisstore.Store{a, b, b} {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := ended.Load()
					if err := st.CheckLive(t.Context(), id); err == nil && after {
						violations.Add(1)
					}
				}
			})
		}
		// Let windows open on both before ending it.
		holds(t, "checks to run", func() bool { return a.CheckLive(t.Context(), id) == nil && b.CheckLive(t.Context(), id) == nil })
		end := a.Terminate
		if r%2 == 1 {
			end = b.Terminate
		}
		err := end(t.Context(), id)
		ended.Store(true)
		wantErr(t, "Terminate", err, nil)
		// A few more checks after it.
		holds(t, "checks after the termination", func() bool {
			return errors.Is(a.CheckLive(t.Context(), id), sessionstore.ErrTerminated)
		})
		close(stop)
		wg.Wait()
		if n := violations.Load(); n > 0 {
			t.Fatalf("round %d: %d checks begun after Terminate returned answered live", r, n)
		}
	}
}

// checkTwice checks id on st twice: the second check, of a hot session,
// opens a window.
func checkTwice(t *testing.T, name string, st *redisstore.Store, id string) {
	t.Helper()
	for range 2 {
		wantErr(t, "CheckLive on "+name, st.CheckLive(t.Context(), id), nil)
	}
}

// wantEnded fails unless CheckLive on st says id is gone.
func wantEnded(t *testing.T, name string, st *redisstore.Store, id string) {
	t.Helper()
	err := st.CheckLive(t.Context(), id)
	if !errors.Is(err, sessionstore.ErrTerminated) && !errors.Is(err, sessionstore.ErrNotFound) {
		t.Fatalf("%s: CheckLive on %s after the session ended: %v, want it gone", id, name, err)
	}
}

// Windows held by one Store alone: the terminating Store's own (which it
// forgets, without waiting) and another's (which it waits out), through
// Terminate and Remove.
func TestEndingASessionClosesEachWindow(t *testing.T) {
	e := newEnv(t)
	const window = 300 * time.Millisecond
	a := e.store(t, redisstore.Options{LiveCacheWindow: window})
	b := e.store(t, redisstore.Options{LiveCacheWindow: window})
	for _, tc := range []struct {
		name    string
		holder  *redisstore.Store
		holderN string
		end     func(context.Context, string) error
	}{
		{"own window, Terminate", a, "A", a.Terminate},
		{"own window, Remove", a, "A", a.Remove},
		{"other's window, Terminate", b, "B", a.Terminate},
		{"other's window, Remove", b, "B", a.Remove},
	} {
		id := "w" + strings.ReplaceAll(tc.name, " ", "-")
		mustCreate(t, a, id, time.Minute)
		checkTwice(t, tc.holderN, tc.holder, id)
		wantErr(t, tc.name, tc.end(t.Context(), id), nil)
		wantEnded(t, tc.holderN+" ("+tc.name+")", tc.holder, id)
	}
}

// A second Terminate, on a third Store, of a session whose first Terminate
// is still waiting out another Store's window waits it out too: the
// tombstone keeps the window.
func TestRepeatedTerminateWaitsOutTheWindowToo(t *testing.T) {
	e := newEnv(t)
	const window = time.Second
	a := e.store(t, redisstore.Options{LiveCacheWindow: window})
	b := e.store(t, redisstore.Options{LiveCacheWindow: window})
	c := e.store(t, redisstore.Options{LiveCacheWindow: window})
	mustCreate(t, a, "twice", time.Minute)
	checkTwice(t, "B", b, "twice")
	first := make(chan error, 1)
	go func() { first <- a.Terminate(context.Background(), "twice") }()
	holds(t, "the first Terminate to end the record", func() bool {
		return e.raw.HGet(t.Context(), prefix+"session:twice", "s").Val() == "terminated"
	})
	wantErr(t, "the second Terminate", c.Terminate(t.Context(), "twice"), nil)
	wantEnded(t, "B", b, "twice")
	select {
	case err := <-first:
		wantErr(t, "the first Terminate", err, nil)
	case <-time.After(wait):
		t.Fatal("the first Terminate did not return")
	}
}

// A Store's window never ends after the one its check wrote into the
// record (k, in the server's ms), which is what Terminate waits out: the
// mark is at least the window past the moment the check was sent, by
// Redis's own clock.
func TestTheMarkCoversTheStoresWindow(t *testing.T) {
	e := newEnv(t)
	const window = 10 * time.Millisecond
	s := e.store(t, redisstore.Options{LiveCacheWindow: window})
	mustCreate(t, s, "mark", time.Minute)
	wantErr(t, "CheckLive", s.CheckLive(t.Context(), "mark"), nil) // hot now
	for i := range 50 {
		before, err := e.raw.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		// Past the last window, so that this check goes to Redis.
		holds(t, "the window to close", func() bool {
			now, err := e.raw.Time(t.Context()).Result()
			return err == nil && now.Sub(before) > 2*window
		})
		sent, err := e.raw.Time(t.Context()).Result()
		if err != nil {
			t.Fatal(err)
		}
		wantErr(t, "CheckLive", s.CheckLive(t.Context(), "mark"), nil)
		k, err := e.raw.HGet(t.Context(), prefix+"session:mark", "k").Int64()
		if err != nil {
			t.Fatal(err)
		}
		if mark := time.UnixMilli(k); mark.Before(sent.Add(window)) {
			t.Fatalf("check %d: the mark %v ends before the Store's window (sent %v + %v)", i, mark, sent, window)
		}
	}
}

// Redis out of memory (maxmemory with noeviction) refuses the mark: the
// check still answers live, it is just not kept, and Terminate does not
// wait for a window that was never opened.
func TestChecksAnswerWhenRedisRefusesTheMark(t *testing.T) {
	t.Parallel()
	rs := testutil.StartRedisServer(t)
	raw := newClient(t, rs.Addr())
	s := redisstore.New(newClient(t, rs.Addr()), redisstore.Options{Prefix: prefix, LiveCacheWindow: time.Second})
	t.Cleanup(func() { _ = s.Close() })
	mustCreate(t, s, "oom", time.Minute)
	wantErr(t, "CheckLive", s.CheckLive(t.Context(), "oom"), nil) // hot now
	if err := raw.ConfigSet(t.Context(), "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := raw.ConfigSet(t.Context(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "CheckLive with Redis out of memory", s.CheckLive(t.Context(), "oom"), nil)
	if k := raw.HGet(t.Context(), prefix+"session:oom", "k").Val(); k != "" {
		t.Fatalf("a mark was written out of memory: k = %q", k)
	}
	if err := raw.ConfigSet(t.Context(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "Terminate", s.Terminate(t.Context(), "oom"), nil)
	wantEnded(t, "the Store", s, "oom")
}

// A hot session whose record lapses in Redis is never answered live from
// memory after that: each window ends before the record's expiry, even
// for the check that runs in the record's last millisecond (PTTL 0).
func TestLiveCacheNeverOutlivesTheRecord(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{LiveCacheWindow: 10 * time.Millisecond})
	const trials = 30
	late := 0
	for trial := range trials {
		id := fmt.Sprintf("lapse%d", trial)
		mustCreate(t, s, id, 25*time.Millisecond)
		deadline := time.Now().Add(10 * time.Second)
		var goneAt time.Time
		answeredLate := false
		// Back-to-back checks, until 20 ms after Redis says the record is
		// gone: every one begun after that must answer it gone.
		for goneAt.IsZero() || time.Since(goneAt) < 20*time.Millisecond {
			if time.Now().After(deadline) {
				t.Fatalf("trial %d: the record did not lapse", trial)
			}
			gone := e.raw.Exists(t.Context(), prefix+"session:"+id).Val() == 0
			if gone && goneAt.IsZero() {
				goneAt = time.Now()
			}
			if err := s.CheckLive(t.Context(), id); gone && err == nil {
				answeredLate = true
			}
		}
		if answeredLate {
			late++
		}
	}
	if late > 0 {
		t.Fatalf("%d of %d sessions were answered live after their record lapsed", late, trials)
	}
}
