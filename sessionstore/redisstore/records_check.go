package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// CheckLive implements sessionstore.LivenessChecker: one round trip that
// reads the record's state and writes no expiry. With a LiveCacheWindow
// (live_cache.go), a session Redis answered live for less than the window
// ago is answered from memory, and the round trip is a script that also
// marks the record with the window, which Terminate waits out; without
// one, it is one HGET (through a one-line script where the client may
// route a read to a replica, which could lag the primary: a DELETE must be
// seen at once). Calls made at once share round trips: up to maxLiveChecks
// go out on their own; while that many are in flight, the calls that come
// meanwhile wait together and go out as one pipeline (at most maxLiveBatch
// of them) once one of those returns, so that under load a check costs a
// fraction of a round trip's system calls, and alone it costs one round
// trip, as before. Each answer is as fresh as a call of its own: its check
// runs after the call began. Every caller returns when its own context
// ends; a batch runs on a goroutine of its own, within OpTimeout.
func (s *Store) CheckLive(ctx context.Context, id string) error {
	const op = "check a session"
	var sent time.Duration
	var seq uint64
	mark := false
	if s.live.window > 0 {
		sent = s.live.now()
		var open bool
		if open, mark, seq = s.live.lookup(id, sent); open {
			return nil
		}
	}
	var ans checkAnswer
	if s.checks.tryAlone() {
		defer s.checks.doneAlone()
		octx, cancel := s.opCtx(ctx)
		ans = s.checkCmd(octx, s.client, id, mark).answer()
		cancel()
	} else {
		b, i, leader := s.checks.join(id, mark)
		if leader && !s.checks.startBatch(func() { s.runLiveBatch(b) }) {
			s.runLiveBatch(b) // the Store is closed: on this goroutine
		}
		select {
		case <-b.done:
		case <-ctx.Done():
			return fail(ctx, op, context.Cause(ctx))
		}
		ans = b.answers[i]
	}
	if ans.err != nil {
		return fail(ctx, op, ans.err)
	}
	if s.live.window > 0 {
		s.live.keep(id, seq, sent, ans.ttl, ans.state == stateLive, ans.marked)
	}
	return s.lookupErr(op, id, ans.state)
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

// liveBatch is checks that go out as one pipeline. answers is written by
// its leader before done closes.
type liveBatch struct {
	ids     []string
	marks   []bool // each check's mark (luaCheck) or not (HGET)
	answers []checkAnswer
	done    chan struct{}
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
func (c *liveChecks) join(id string, mark bool) (b *liveBatch, i int, leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.forming == nil || len(c.forming.ids) == maxLiveBatch {
		c.forming = &liveBatch{done: make(chan struct{})}
		leader = true
	}
	b = c.forming
	b.ids = append(b.ids, id)
	b.marks = append(b.marks, mark)
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
		b.answers = make([]checkAnswer, len(b.ids))
		for i := range b.answers {
			b.answers[i].err = octx.Err()
		}
		return
	}
	s.closeBatch(b)
	b.answers = s.pipelineChecks(octx, b.ids, b.marks)
	var lost []int // the checks Redis had lost the script for
	for i, ans := range b.answers {
		if isNoScript(ans.err) {
			lost = append(lost, i)
		}
	}
	if len(lost) == 0 {
		return
	}
	// Redis lost its scripts (a restart): load it once and send those
	// checks again, as one pipeline.
	if err := s.scripts.check.Load(octx, s.client).Err(); err != nil {
		for _, i := range lost {
			b.answers[i].err = fmt.Errorf("reloading the check script: %w", err)
		}
		return
	}
	ids, marks := make([]string, len(lost)), make([]bool, len(lost))
	for j, i := range lost {
		ids[j], marks[j] = b.ids[i], b.marks[i]
	}
	for j, ans := range s.pipelineChecks(octx, ids, marks) {
		b.answers[lost[j]] = ans
	}
}

// pipelineChecks sends the checks of ids as one pipeline and answers each.
func (s *Store) pipelineChecks(ctx context.Context, ids []string, marks []bool) []checkAnswer {
	pipe := s.client.Pipeline()
	cmds := make([]checkResult, len(ids))
	for i, id := range ids {
		cmds[i] = s.checkCmd(ctx, pipe, id, marks[i])
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	answers := make([]checkAnswer, len(ids))
	for i, cmd := range cmds {
		answers[i] = cmd.answer()
	}
	return answers
}

// closeBatch ends b's forming: later checks start another.
func (s *Store) closeBatch(b *liveBatch) {
	s.checks.mu.Lock()
	if s.checks.forming == b {
		s.checks.forming = nil
	}
	s.checks.mu.Unlock()
}

// checkAnswer is a check's answer: the record's state ("" for none) and,
// from luaCheck, its remaining ttl (negative for none: the record does
// not expire) and whether the window's mark was written.
type checkAnswer struct {
	state  string
	ttl    time.Duration
	marked bool
	err    error
}

// checkResult is a check sent or queued.
type checkResult interface{ answer() checkAnswer }

// checkCmd queues (on a pipeline) or sends the check of id: to mark a
// window (a hot session), luaCheck, which goes to the primary since it
// writes; else an HGET of the state, or, where the client may read from a
// replica, the same through a script, which goes to the primary. A script
// sent to the client runs with EVALSHA and falls back to EVAL; on a
// pipeline it is EVALSHA alone (runLiveBatch resends the checks that fail
// with NOSCRIPT).
func (s *Store) checkCmd(ctx context.Context, c redis.Cmdable, id string, mark bool) checkResult {
	switch keys := []string{s.keyRecord(id)}; {
	case mark:
		args := []any{s.live.name, ms(s.live.window)}
		if _, ok := c.(redis.Pipeliner); ok {
			return checkOf{c.EvalSha(ctx, s.scripts.check.Hash(), keys, args...)}
		}
		return checkOf{s.scripts.check.Run(ctx, c, keys, args...)}
	case s.checkOnPrimary:
		return stateOf{c.Eval(ctx, luaState, keys)}
	default:
		return hgetOf{c.HGet(ctx, keys[0], "s")}
	}
}

// luaState answers a record's state field (nil when there is none).
const luaState = `return redis.call('HGET', KEYS[1], 's')`

// hgetOf reads an HGET of the state.
type hgetOf struct{ cmd *redis.StringCmd }

func (r hgetOf) answer() checkAnswer { return orNil(r.cmd.Result()) }

// stateOf reads luaState's answer.
type stateOf struct{ cmd *redis.Cmd }

func (r stateOf) answer() checkAnswer { return orNil(r.cmd.Text()) }

// orNil reads redis.Nil (no record) as the state "".
func orNil(st string, err error) checkAnswer {
	if errors.Is(err, redis.Nil) {
		return checkAnswer{}
	}
	return checkAnswer{state: st, err: err}
}

// checkOf reads luaCheck's answer: {state, pttl ms, 1 if marked else 0}.
type checkOf struct{ cmd *redis.Cmd }

func (r checkOf) answer() checkAnswer {
	const op = "check a session"
	res, err := r.cmd.Slice()
	if err != nil {
		return checkAnswer{err: err}
	}
	st, err := field[string](op, res, 0)
	if err != nil {
		return checkAnswer{err: err}
	}
	pttl, err := field[int64](op, res, 1)
	if err != nil {
		return checkAnswer{err: err}
	}
	marked, err := field[int64](op, res, 2)
	if err != nil {
		return checkAnswer{err: err}
	}
	// PTTL -1: no expiry; 0: the record lapses within the millisecond.
	return checkAnswer{state: st, ttl: time.Duration(pttl) * time.Millisecond, marked: marked == 1}
}

// isNoScript reports whether err is Redis's answer to an EVALSHA of a
// script it does not have.
func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

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
