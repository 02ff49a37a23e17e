package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// storeCall is the store script's call storing msg on stream of session,
// as StoreEvent makes it.
func storeCall(l *EventLog, session, stream, msg string) scriptCall {
	return l.storeCall(session, stream, []json.RawMessage{json.RawMessage(msg)}, rand.Text())
}

// replayed is what l replays of session after id, messages only.
func replayed(t *testing.T, l *EventLog, session, id string) ([]string, error) {
	t.Helper()
	var got []string
	_, err := l.ReplayEventsAfter(t.Context(), session, id, func(_ string, m json.RawMessage) error {
		got = append(got, string(m))
		return nil
	})
	return got, err
}

// pausedStore is a Store on a Redis that the test pauses, with a hook
// counting the pipelines of EVALSHA that reach the client.
type pausedStore struct {
	rs        *testutil.RedisServer
	c         *redis.Client
	s         *Store
	l         *EventLog
	pipelines atomic.Int64
	resume    func()
}

func newPausedStore(t *testing.T, prefix string, opTimeout time.Duration) *pausedStore {
	t.Helper()
	p := &pausedStore{rs: testutil.StartRedisServer(t)}
	p.c = redis.NewClient(&redis.Options{Addr: p.rs.Addr(), ContextTimeoutEnabled: true})
	p.c.AddHook(pipelineCounter{&p.pipelines})
	p.s = New(p.c, Options{Prefix: prefix, OpTimeout: opTimeout})
	p.l = p.s.EventLog(sessionstore.EventLogOptions{})
	if _, err := p.l.StoreEvent(t.Context(), "other", "A", nil); err != nil { // loads the script
		t.Fatal(err)
	}
	if err := p.rs.Pause(); err != nil { // Redis stops answering
		t.Fatal(err)
	}
	var once sync.Once
	p.resume = func() {
		once.Do(func() {
			if err := p.rs.Resume(); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(func() {
		p.resume()
		_ = p.s.Close()
		_ = p.c.Close()
	})
	return p
}

// takeSlot makes a store that takes the one slot and waits on the paused
// Redis; its answer comes on the channel returned.
func (p *pausedStore) takeSlot(t *testing.T, session, stream string, msg json.RawMessage) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := p.l.StoreEvent(context.Background(), session, stream, msg)
		done <- err
	}()
	testutil.Eventually(t, 5*time.Second, "the slot taken", func() bool { return len(p.s.evals.slots) == maxScriptsAlone })
	return done
}

// forming is how many calls the batch forming holds.
func (p *pausedStore) forming() int {
	p.s.evals.mu.Lock()
	defer p.s.evals.mu.Unlock()
	if p.s.evals.forming == nil {
		return 0
	}
	return len(p.s.evals.forming.calls)
}

// pipelineCounter counts the pipelines that carry an EVALSHA.
type pipelineCounter struct{ n *atomic.Int64 }

func (pipelineCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (pipelineCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h pipelineCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "evalsha" {
				h.n.Add(1)
				break
			}
		}
		return next(ctx, cmds)
	}
}

// wait waits for ch, at most 10 s.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10 s", what)
		panic("unreachable")
	}
}

// Stores made while the slot is taken go out together, as pipelines once
// it frees, and each is stored as a call of its own would be: every caller
// gets its ids and each stream's events replay in the order they were
// made. Two stores of one stream never share a pipeline (a retried
// pipeline would store the first one twice): a batch holding k stores of
// its busiest stream goes out as k pipelines.
func TestEventStoresMadeAtOnceSharePipelines(t *testing.T) {
	t.Parallel()
	p := newPausedStore(t, "share:", 10*time.Second)
	ctx := t.Context()

	type call struct {
		session, stream string
		msgs            []json.RawMessage
		ids             []string
		err             error
	}
	var calls []*call
	perStream := map[string]int{}
	for i := range 13 {
		msgs := []json.RawMessage{json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if i%3 == 0 {
			msgs = append(msgs, json.RawMessage(fmt.Sprintf(`{"n":%d,"second":true}`, i)), nil)
		}
		cl := &call{session: fmt.Sprintf("s%d", i%2), stream: fmt.Sprintf("p%d", i%3), msgs: msgs}
		calls = append(calls, cl)
		perStream[cl.session+"/"+cl.stream]++
	}
	rounds := 0
	for _, n := range perStream {
		rounds = max(rounds, n)
	}
	alone := p.takeSlot(t, "other", "A", json.RawMessage("1"))
	before := p.pipelines.Load()
	// The calls join one batch, one after the other so that each stream's
	// go out in the order they were made.
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, cl := range calls {
		wg.Go(func() { cl.ids, cl.err = p.l.StoreEvents(ctx, cl.session, cl.stream, cl.msgs) })
		testutil.Eventually(t, 5*time.Second, "the call joined the batch", func() bool { return p.forming() == i+1 })
	}
	go func() { wg.Wait(); close(done) }()
	p.resume()
	if err := wait(t, alone, "the store that took the slot"); err != nil {
		t.Fatal(err)
	}
	wait(t, done, "the batch's stores")
	if got := p.pipelines.Load() - before; got != int64(rounds) {
		t.Fatalf("the batch went out as %d pipelines; want %d, one per store of its busiest stream", got, rounds)
	}

	want := map[string][]string{}
	first := map[string]string{}
	for _, cl := range calls {
		if cl.err != nil || len(cl.ids) != len(cl.msgs) {
			t.Fatalf("a store of %d messages on %s/%s answered %q, %v", len(cl.msgs), cl.session, cl.stream, cl.ids, cl.err)
		}
		key := cl.session + "/" + cl.stream
		ids, msgs := cl.ids, cl.msgs
		if _, ok := first[key]; !ok {
			first[key] = ids[0]
			ids, msgs = ids[1:], msgs[1:]
		}
		for i, id := range ids {
			want[key] = append(want[key], id+"="+string(msgs[i]))
		}
	}
	for key, from := range first {
		var got []string
		if _, err := p.l.ReplayEventsAfter(ctx, key[:2], from, func(id string, m json.RawMessage) error {
			got = append(got, id+"="+string(m))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want[key]) {
			t.Fatalf("%s replayed %q after its first event; want %q", key, got, want[key])
		}
	}
}

// A batch of scripts that goes out after Redis lost its scripts (a
// restart, SCRIPT FLUSH) loads them again and resends the calls that
// failed with NOSCRIPT, of callers still waiting: each is answered as on
// its own.
func TestScriptBatchAfterAScriptFlush(t *testing.T) {
	t.Parallel()
	c, s := testStore(t, "sflush:")
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	if _, err := l.StoreEvent(ctx, "s", "A", json.RawMessage("0")); err != nil {
		t.Fatal(err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	base := l.base("s")
	calls := []scriptCall{storeCall(l, "s", "A", "1"), storeCall(l, "s", "B", "2"), storeCall(l, "s", "A", "3"), storeCall(l, "s", "C", "4"),
		{script: l.scripts.replay, keys: []string{base + ":m"}, args: []any{base, "AAAAAAAAAAAA", "1", "1"}}}
	asked := false
	answers := s.pipelineScripts(ctx, calls, func(i int) bool { // C's caller leaves once its first send failed
		if i != 3 {
			return true
		}
		defer func() { asked = true }()
		return !asked
	})
	for i, a := range answers[:3] {
		if a.err != nil || len(a.res) != 2 || a.res[0] != statusOK {
			t.Fatalf("store %d after the flush: %v, %v", i, a.res, a.err)
		}
	}
	if a := answers[3]; !errors.Is(a.err, errCallerLeft) {
		t.Fatalf("the store whose caller left after its first send failed: %v, %v; want it not sent again", a.res, a.err)
	}
	if has, err := c.HExists(ctx, base+":m", "s:C").Result(); err != nil || has {
		t.Fatalf("stream C is in the log (%v, %v): the store whose caller left was sent again", has, err)
	}
	if a := answers[4]; a.err != nil || len(a.res) != 1 || a.res[0] != "UNKNOWN" {
		t.Fatalf("a replay of an unknown id after the flush: %v, %v", a.res, a.err)
	}
	if got, err := replayed(t, l, "s", answers[0].res[1].(string)); err != nil || !slices.Equal(got, []string{"3"}) {
		t.Fatalf("replay after the batch's first event on A: %q, %v; want [3]", got, err)
	}
}

// A caller that leaves while its batch goes out in rounds is not sent in
// a later round: the rounds before went out, the rest are answered with
// errCallerLeft.
func TestScriptRoundsSkipACallerThatLeft(t *testing.T) {
	t.Parallel()
	_, s := testStore(t, "rounds:")
	l := s.EventLog(sessionstore.EventLogOptions{})
	ctx := t.Context()
	if _, err := l.StoreEvent(ctx, "other", "A", nil); err != nil { // loads the script
		t.Fatal(err)
	}
	calls := []scriptCall{storeCall(l, "s", "A", "1"), storeCall(l, "s", "A", "2"), storeCall(l, "s", "A", "3")}
	asked := 0
	answers := s.pipelineScripts(ctx, calls, func(i int) bool {
		asked++
		return i != 2 // the third call's caller has left by its round
	})
	if asked != 3 {
		t.Fatalf("waiting asked %d times; want once per round", asked)
	}
	for i, a := range answers[:2] {
		if a.err != nil || len(a.res) != 2 || a.res[0] != statusOK {
			t.Fatalf("store %d: %v, %v", i, a.res, a.err)
		}
	}
	if !errors.Is(answers[2].err, errCallerLeft) {
		t.Fatalf("the store whose caller left: %v, %v; want errCallerLeft", answers[2].res, answers[2].err)
	}
	if got, err := replayed(t, l, "s", answers[0].res[1].(string)); err != nil || !slices.Equal(got, []string{"2"}) {
		t.Fatalf("replay after the first store: %q, %v; want [2]", got, err)
	}
}

// scriptRounds puts no two calls with one once in a round, keeps each
// once's calls in order, and calls without a once in the first round.
func TestScriptRounds(t *testing.T) {
	calls := []scriptCall{{once: "a"}, {once: "b"}, {once: "a"}, {}, {once: "a"}, {once: "b"}, {}}
	got := scriptRounds(calls, []int{0, 1, 2, 3, 4, 5, 6})
	want := [][]int{{0, 1, 3, 6}, {2, 5}, {4}}
	if len(got) != len(want) {
		t.Fatalf("rounds %v; want %v", got, want)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("rounds %v; want %v", got, want)
		}
	}
	if got := scriptRounds(calls, []int{2, 5}); len(got) != 1 || !slices.Equal(got[0], []int{2, 5}) {
		t.Fatalf("rounds of a subset %v; want [[2 5]]", got)
	}
}

// A batched store outlives its caller when the caller's context ends: it
// keeps its own copy of the messages, which the caller may then reuse
// (sessionstore.EventLog: the log does not keep a message).
func TestBatchedScriptKeepsACopyOfItsMessages(t *testing.T) {
	s := &Store{}
	msg := []byte("message")
	c := s.evalSend().keep(scriptCall{args: []any{"base", 7, msg}})
	copy(msg, "reused!")
	if got := string(c.args[2].([]byte)); got != "message" || c.args[0] != "base" || c.args[1] != 7 {
		t.Fatalf("the batched call's arguments after the caller reused its buffer: %v", c.args)
	}
}

// A store that waits in a batch behind a round trip Redis does not answer
// returns within OpTimeout of its call, as a store on its own does, with
// ErrUnavailable: it does not wait for the round trip ahead of it and then
// for its batch's own.
func TestEventStoresBehindAStuckRoundTripReturnWithinOpTimeout(t *testing.T) {
	t.Parallel()
	const opTimeout = time.Second
	p := newPausedStore(t, "stuck:", opTimeout)
	type result struct {
		err  error
		took time.Duration
	}
	results := make(chan result, 2)
	store := func(stream string) {
		start := time.Now()
		_, err := p.l.StoreEvent(context.Background(), "s", stream, json.RawMessage("1"))
		results <- result{err, time.Since(start)}
	}
	go store("A")
	testutil.Eventually(t, 5*time.Second, "the slot taken", func() bool { return len(p.s.evals.slots) == maxScriptsAlone })
	go store("B")
	for range 2 {
		r := wait(t, results, "a store on a stopped Redis")
		if !errors.Is(r.err, ErrUnavailable) || r.took > opTimeout*3/2 {
			t.Fatalf("a store on a stopped Redis returned after %v with %v; want ErrUnavailable within about OpTimeout (%v)", r.took, r.err, opTimeout)
		}
	}
}
