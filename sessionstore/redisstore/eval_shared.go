package redisstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Scripts that share round trips (tripShare): the event log's stores.

// scriptCall is a script's run: what evalShared sends. once, when set,
// names what a retry of the script is told apart on (the event log's
// stream: its store script stores a repeat of the stream's last call only
// once): two calls with the same once never go out in one pipeline, since
// go-redis resends a whole pipeline whose connection broke, and the first
// one's repeat would no longer be the stream's last call.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	once   string
}

// scriptAnswer is a script's table, or its error.
type scriptAnswer struct {
	res []any
	err error
}

// maxScriptsAlone bounds the scripts evalShared has in flight on their
// own; maxScriptBatch, the scripts one batch carries. One alone keeps a
// caller's stores in order: its next store cannot go out until the one
// before it was answered (retries included) or, sent alone, given up.
// It also means one round trip of stores in flight per Store at a time,
// the stores made meanwhile waiting for it together.
const (
	maxScriptsAlone = 1
	maxScriptBatch  = 128
)

// behindLinger is how long a batch of StoreStream's scripts waits for more
// before it goes out: their callers wrote what they record already (a
// transport's response written before its record), so a short wait costs
// no client anything, and a session's calls made one after another share
// round trips instead of each making its own (the system calls and
// wake-ups of one on both sides cost more than the script itself).
const behindLinger = time.Millisecond

// evalBehind is evalShared for StoreStream: its scripts never go out
// alone, and each batch lingers for behindLinger first, then goes out as
// a pipeline, one round trip of them in flight at a time, beside
// evalShared's.
func (s *Store) evalBehind(ctx context.Context, c scriptCall) ([]any, error) {
	ans, err := s.behind.do(ctx, c)
	if err != nil {
		return nil, err
	}
	return ans.res, ans.err
}

// evalShared runs a script as eval does, sharing round trips with the
// scripts other callers run at once (tripShare).
func (s *Store) evalShared(ctx context.Context, c scriptCall) ([]any, error) {
	ans, err := s.evals.do(ctx, c)
	if err != nil {
		return nil, err
	}
	return ans.res, ans.err
}

// evalSend is how evalShared's scripts go out (tripShare): one with
// EVALSHA falling back to EVAL, a batch with pipelineScripts; a batched
// call's []byte arguments are copied (its caller may reuse them once it
// returned).
func (s *Store) evalSend() tripSend[scriptCall, scriptAnswer] {
	return tripSend[scriptCall, scriptAnswer]{
		alone: func(ctx context.Context, c scriptCall) scriptAnswer {
			res, err := c.script.Run(ctx, s.client, c.keys, c.args...).Slice()
			return scriptAnswer{res, err}
		},
		pipeline: s.pipelineScripts,
		keep: func(c scriptCall) scriptCall {
			args := make([]any, len(c.args))
			for i, a := range c.args {
				if b, ok := a.([]byte); ok {
					a = bytes.Clone(b)
				}
				args[i] = a
			}
			c.args = args
			return c
		},
		failed: scriptFailed,
	}
}

// scriptFailed answers a script that was not run, with why.
func scriptFailed(err error) scriptAnswer { return scriptAnswer{err: err} }

// pipelineScripts sends calls as pipelines of EVALSHA and answers each:
// one pipeline per round (scriptRounds: one in all unless calls share a
// once), each with the calls whose callers still wait. When Redis had lost
// a round's scripts (a restart), they are loaded once per batch and the
// calls that failed for it, of callers still waiting, sent again before
// the next round.
func (s *Store) pipelineScripts(ctx context.Context, calls []scriptCall, waiting func(i int) bool) []scriptAnswer {
	answers := make([]scriptAnswer, len(calls))
	send := func(at []int) {
		pipe := s.client.Pipeline()
		cmds := make([]*redis.Cmd, len(at))
		for j, i := range at {
			c := calls[i]
			cmds[j] = pipe.EvalSha(ctx, c.script.Hash(), c.keys, c.args...)
		}
		_, _ = pipe.Exec(ctx) // each command's own error is read below
		for j, i := range at {
			res, err := cmds[j].Slice()
			answers[i] = scriptAnswer{res, err}
		}
	}
	loaded := map[*redis.Script]error{}
	for _, round := range scriptRounds(calls, upTo(len(calls))) {
		if round = stillWaiting(round, waiting, answers, scriptFailed); len(round) == 0 {
			continue
		}
		send(round)
		var lost []int
		for _, i := range round {
			if !isNoScript(answers[i].err) {
				continue
			}
			sc := calls[i].script
			lerr, done := loaded[sc]
			if !done {
				lerr = sc.Load(ctx, s.client).Err()
				loaded[sc] = lerr
			}
			if lerr != nil {
				answers[i].err = fmt.Errorf("reloading a script: %w", lerr)
				continue
			}
			lost = append(lost, i)
		}
		if lost = stillWaiting(lost, waiting, answers, scriptFailed); len(lost) > 0 {
			send(lost)
		}
	}
	return answers
}

// scriptRounds splits the calls at (indexes into calls, in order) into
// rounds to send one after the other: a call goes in the round after the
// last one holding a call with its once, so that no round holds two calls
// with the same once and each once's calls go in their order.
func scriptRounds(calls []scriptCall, at []int) [][]int {
	var rounds [][]int
	next := map[string]int{} // a once's next round
	for _, i := range at {
		r := 0
		if o := calls[i].once; o != "" {
			r = next[o]
			next[o] = r + 1
		}
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], i)
	}
	return rounds
}
