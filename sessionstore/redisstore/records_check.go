package redisstore

import (
	"context"
	"errors"
	"fmt"
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
// trip, as before (trip_share.go). Each answer is as fresh as a call of its
// own: its check runs after the call began. A call returns within
// OpTimeout, and at once when its context ends while it waits for a batch.
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
	ans, err := s.checks.do(ctx, liveCall{id, mark})
	if err != nil {
		return fail(ctx, op, err)
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

// liveCall is one CheckLive's check: the session, and whether it marks a
// window (luaCheck) or not (HGET).
type liveCall struct {
	id   string
	mark bool
}

// liveSend is how CheckLive's checks go out (tripShare): one with
// checkCmd on the client, a batch with pipelineChecks.
func (s *Store) liveSend() tripSend[liveCall, checkAnswer] {
	return tripSend[liveCall, checkAnswer]{
		alone: func(ctx context.Context, c liveCall) checkAnswer {
			return s.checkCmd(ctx, s.client, c.id, c.mark).answer()
		},
		pipeline: s.pipelineLiveChecks,
		failed:   checkFailed,
	}
}

// checkFailed answers a check that was not made, with why.
func checkFailed(err error) checkAnswer { return checkAnswer{err: err} }

// pipelineLiveChecks sends the checks of calls whose callers still wait
// as one pipeline and answers each; when Redis had lost the check script
// (a restart), it loads it once and sends those checks again, of callers
// still waiting, as one pipeline.
func (s *Store) pipelineLiveChecks(ctx context.Context, calls []liveCall, waiting func(i int) bool) []checkAnswer {
	answers := make([]checkAnswer, len(calls))
	send := func(at []int) {
		if len(at) == 0 {
			return
		}
		sub := make([]liveCall, len(at))
		for j, i := range at {
			sub[j] = calls[i]
		}
		for j, ans := range s.pipelineChecks(ctx, sub) {
			answers[at[j]] = ans
		}
	}
	send(stillWaiting(upTo(len(calls)), waiting, answers, checkFailed))
	var lost []int // the checks Redis had lost the script for
	for i, ans := range answers {
		if isNoScript(ans.err) {
			lost = append(lost, i)
		}
	}
	if len(lost) == 0 {
		return answers
	}
	if err := s.scripts.check.Load(ctx, s.client).Err(); err != nil {
		for _, i := range lost {
			answers[i].err = fmt.Errorf("reloading the check script: %w", err)
		}
		return answers
	}
	if again := stillWaiting(lost, waiting, answers, checkFailed); len(again) > 0 {
		send(again)
	}
	return answers
}

// pipelineChecks sends the checks of calls as one pipeline and answers
// each.
func (s *Store) pipelineChecks(ctx context.Context, calls []liveCall) []checkAnswer {
	pipe := s.client.Pipeline()
	cmds := make([]checkResult, len(calls))
	for i, c := range calls {
		cmds[i] = s.checkCmd(ctx, pipe, c.id, c.mark)
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below
	answers := make([]checkAnswer, len(calls))
	for i, cmd := range cmds {
		answers[i] = cmd.answer()
	}
	return answers
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
// pipeline it is EVALSHA alone (pipelineLiveChecks resends the checks that fail
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
