package redisstore

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// CheckLive implements sessionstore.LivenessChecker: one HGET of the
// record's state, no write (through a one-line script where the client may
// route a read to a replica, which could lag the primary: a DELETE must be
// seen at once). Calls made at once share round trips: up to maxLiveChecks
// go out on their own; while that many are in flight, the calls that come
// meanwhile wait together and go out as one pipeline (at most maxLiveBatch
// of them) once one of those returns, so that under load a check costs a
// fraction of a round trip's system calls, and alone it costs one round
// trip, as before. Each answer is as fresh as a call of its own: its HGET
// runs after the call began. Every caller returns when its own context
// ends; a batch runs on a goroutine of its own, within OpTimeout.
func (s *Store) CheckLive(ctx context.Context, id string) error {
	const op = "check a session"
	if s.checks.tryAlone() {
		defer s.checks.doneAlone()
		octx, cancel := s.opCtx(ctx)
		defer cancel()
		st, err := s.stateCmd(octx, s.client, id).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return fail(ctx, op, err)
		}
		return s.lookupErr(op, id, st)
	}
	b, i, leader := s.checks.join(id)
	if leader && !s.checks.startBatch(func() { s.runLiveBatch(b) }) {
		s.runLiveBatch(b) // the Store is closed: on this goroutine
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return fail(ctx, op, context.Cause(ctx))
	}
	if err := b.errs[i]; err != nil {
		return fail(ctx, op, err)
	}
	return s.lookupErr(op, id, b.states[i])
}

// maxLiveChecks bounds the round trips CheckLive has in flight on its
// own; maxLiveBatch, the checks one pipeline carries.
const (
	maxLiveChecks = 4
	maxLiveBatch  = 256
)

// liveChecks is CheckLive's share of round trips: its slots (a semaphore)
// and the batch forming while every slot is taken, and the batches'
// goroutines, which Close joins.
type liveChecks struct {
	slots   chan struct{}
	mu      sync.Mutex
	forming *liveBatch
	closed  bool
	batches sync.WaitGroup // Add under mu, before closed
}

// startBatch runs run on a goroutine of its own, unless the Store is
// closed (false).
func (c *liveChecks) startBatch(run func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.batches.Go(run)
	return true
}

// close waits for the batches running: each ends within OpTimeout.
func (c *liveChecks) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.batches.Wait()
}

func newLiveChecks() liveChecks { return liveChecks{slots: make(chan struct{}, maxLiveChecks)} }

// liveBatch is checks that go out as one pipeline. states and errs are
// written by its leader before done closes.
type liveBatch struct {
	ids    []string
	states []string
	errs   []error
	done   chan struct{}
}

// tryAlone takes a slot if one is free.
func (c *liveChecks) tryAlone() bool {
	select {
	case c.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (c *liveChecks) doneAlone() { <-c.slots }

// join adds id to the batch forming (starting one, whose leader the caller
// then is, when none is or the one forming is full) and returns it and
// id's place in it.
func (c *liveChecks) join(id string) (b *liveBatch, i int, leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forming == nil || len(c.forming.ids) == maxLiveBatch {
		c.forming = &liveBatch{done: make(chan struct{})}
		leader = true
	}
	b = c.forming
	b.ids = append(b.ids, id)
	return b, len(b.ids) - 1, leader
}

// runLiveBatch waits for a slot, closes b to new checks and sends them as
// one pipeline, within OpTimeout from now (whatever any one caller's
// context: each waits on its own), then answers each. Every path closes
// b.done.
func (s *Store) runLiveBatch(b *liveBatch) {
	octx, cancel := s.opCtx(context.Background())
	defer cancel()
	defer close(b.done)
	select {
	case s.checks.slots <- struct{}{}:
		defer s.checks.doneAlone()
	case <-octx.Done():
		s.closeBatch(b)
		b.errs = make([]error, len(b.ids))
		for i := range b.errs {
			b.errs[i] = octx.Err()
		}
		return
	}
	s.closeBatch(b)
	pipe := s.client.Pipeline()
	cmds := make([]stringResult, len(b.ids))
	for i, id := range b.ids {
		cmds[i] = s.stateCmd(octx, pipe, id)
	}
	_, _ = pipe.Exec(octx) // each command's own error is read below
	b.states, b.errs = make([]string, len(b.ids)), make([]error, len(b.ids))
	for i, cmd := range cmds {
		st, err := cmd.Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			b.errs[i] = err
		}
		b.states[i] = st
	}
}

// closeBatch ends b's forming: later checks start another.
func (s *Store) closeBatch(b *liveBatch) {
	s.checks.mu.Lock()
	if s.checks.forming == b {
		s.checks.forming = nil
	}
	s.checks.mu.Unlock()
}

// stringResult is a command's string answer, a plain one's or a script's.
type stringResult interface{ Result() (string, error) }

// stateCmd queues (on a pipeline) or sends the read of id's state: an
// HGET, or, where the client may read from a replica, the same through a
// script, which goes to the primary.
func (s *Store) stateCmd(ctx context.Context, c redis.Cmdable, id string) stringResult {
	if s.checkOnPrimary {
		return stringOf{c.Eval(ctx, luaState, []string{s.keyRecord(id)})}
	}
	return c.HGet(ctx, s.keyRecord(id), "s")
}

// luaState answers a record's state field (nil when there is none).
const luaState = `return redis.call('HGET', KEYS[1], 's')`

// stringOf reads a script's answer as a string (redis.Nil for none).
type stringOf struct{ cmd *redis.Cmd }

func (r stringOf) Result() (string, error) { return r.cmd.Text() }

// readsReplicas reports whether client may route a read-only command to a
// replica: a cluster client told to read from replicas (ReadOnly,
// RouteByLatency, RouteRandomly).
func readsReplicas(client redis.UniversalClient) bool {
	if cc, ok := client.(*redis.ClusterClient); ok {
		o := cc.Options()
		return o.ReadOnly || o.RouteByLatency || o.RouteRandomly
	}
	return false
}
