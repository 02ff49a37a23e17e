package streamable_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// faultSlack is what a store failure's answer may take beyond the store's
// OpTimeout: the HTTP round trip, go-redis's bookkeeping, a loaded machine.
const faultSlack = time.Second

// unavailableText is what the JSON-RPC error of a 503 caused by Redis says.
const unavailableText = "redis is unavailable"

// Redis stopped (killed, so connections are refused): requests that need
// it fail fast with 503, Retry-After and a JSON-RPC error saying Redis is
// unavailable, on every replica, initialize included; a GET stream opened
// before the outage keeps serving pings throughout it. Redis restarted
// without persistence has lost every session: the old one gets 404 on
// every replica (once the replica reaches Redis again), its GET stream is
// closed, and a fresh session works, with nobody restarting the replicas.
func TestClusterRedisStoppedFailsFastAndRecovers(t *testing.T) {
	c := newCluster(t, streamable.Config{}, redisstore.Options{}) // default OpTimeout
	a := c.session(0)
	for i := range 3 { // every replica holds the session
		toolText(t, c.client(i, a), "echo", map[string]any{"text": "adopt"})
	}
	st := c.stream(a)
	st.AnswerPings(true)
	testutil.Eventually(t, wait, "a ping answered", func() bool { return st.Pongs() > 0 })
	pings := watchPings(t, st)

	c.redis.Stop()
	stopped := time.Now()
	// On every replica, a request on the session and an initialize, all
	// at once (each may take up to OpTimeout).
	bound := redisstore.DefaultOpTimeout + faultSlack
	var wg sync.WaitGroup
	for i := range 3 {
		name := c.replicas[i].name
		wg.Go(func() {
			start := time.Now()
			resp, err := c.client(i, a).CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
			if err != nil {
				t.Error(err)
				return
			}
			d := time.Since(start)
			t.Logf("replica %s: tools/call with Redis stopped answered %d in %v", name, resp.Status, d.Round(time.Millisecond))
			wantUnavailable(t, "tools/call on replica "+name, resp, d, bound)
		})
		wg.Go(func() {
			start := time.Now()
			resp, err := c.client(i, nil).Call(testutil.Context(t, wait), "initialize", initializeParams())
			if err != nil {
				t.Error(err)
				return
			}
			d := time.Since(start)
			t.Logf("replica %s: initialize with Redis stopped answered %d in %v", name, resp.Status, d.Round(time.Millisecond))
			wantUnavailable(t, "initialize on replica "+name, resp, d, bound)
		})
	}
	wg.Wait()

	// The stream keeps serving: pings keep coming, more of them than a
	// stream whose client stopped answering would get before it is closed
	// (MissedPongLimit, 2 by default). Its client answers every ping, one
	// at a time, and each answer POSTed while Redis is away may take up to
	// OpTimeout: hence the bound.
	const wantPings = 4
	checked := time.Now()
	if !pings.await(wantPings, checked, wantPings*bound) {
		t.Errorf("GET stream opened before the outage: %d pings in the %v after the 503s, want %d; stream %s",
			pings.since(checked), time.Since(checked).Round(time.Millisecond), wantPings, pings.end(stopped, "Redis was stopped"))
	} else {
		t.Logf("GET stream during the outage: %d pings in %v after the 503s (gaps %v), still open",
			pings.since(checked), time.Since(checked).Round(time.Millisecond), pings.gaps(stopped))
	}

	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	// The restart lost every key: the old session is gone on every
	// replica, once it reaches Redis again.
	for i := range 3 {
		cl := c.client(i, a)
		var resp *testutil.Response
		testutil.Eventually(t, wait, fmt.Sprintf("replica %s answers without 503 after the restart", c.replicas[i].name), func() bool {
			var err error
			resp, err = cl.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
			if err != nil {
				t.Fatal(err)
			}
			return resp.Status != http.StatusServiceUnavailable
		})
		t.Logf("replica %s: old session answered %d %v after the restart", c.replicas[i].name, resp.Status, time.Since(restarted).Round(time.Millisecond))
		wantStatus(t, fmt.Sprintf("old session on replica %s after the restart", c.replicas[i].name), resp.Status, http.StatusNotFound, resp.Body)
	}
	answered := time.Now()
	// Its GET stream is closed once A reaches Redis again and finds the
	// session gone (its bus subscription is dropped, or its lease renewal
	// fails).
	const streamBound = 2 * time.Second
	select {
	case <-pings.done:
		t.Logf("old GET stream: %s; every replica answered 404 %v after the restart",
			pings.end(restarted, "Redis restarted"), answered.Sub(restarted).Round(time.Millisecond))
	case <-time.After(streamBound):
		t.Errorf("old GET stream still open %v after every replica answered 404 for its session", streamBound)
	}
	// Service resumed by itself: a fresh session works everywhere.
	fresh := c.session(0)
	for i := range 3 {
		if got := toolText(t, c.client(i, fresh), "echo", map[string]any{"text": "back"}); got != "back" {
			t.Errorf("replica %s: echo = %q", c.replicas[i].name, got)
		}
	}
	c.stream(fresh)
}

// Redis hung (SIGSTOP: connections open, nothing answered): a request that
// needs it answers 503 within the store's OpTimeout (300 ms here) plus
// slack, with the JSON-RPC error saying Redis is unavailable; once Redis
// continues, the same session serves again on every replica. A request
// within the store's LiveCacheWindow of its session's last check on that
// replica does not need Redis and may still answer 200: each replica
// answers 503 once its window has passed.
func TestClusterRedisHungFailsWithinOpTimeout(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	c := newCluster(t, streamable.Config{}, redisstore.Options{OpTimeout: opTimeout})
	a := c.session(0)
	for i := range 3 {
		toolText(t, c.client(i, a), "echo", map[string]any{"text": "adopt"})
	}
	resume := c.pauseRedis()
	paused := time.Now()
	for i := range 3 {
		for {
			start := time.Now()
			resp, err := c.client(i, a).CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "x"})
			if err != nil {
				t.Fatal(err)
			}
			d := time.Since(start)
			if resp.Status == http.StatusOK && start.Sub(paused) < redisstore.DefaultLiveCacheWindow {
				continue // answered from the window's memory
			}
			t.Logf("replica %s: tools/call with Redis hung answered %d in %v", c.replicas[i].name, resp.Status, d)
			wantUnavailable(t, fmt.Sprintf("tools/call on replica %s", c.replicas[i].name), resp, d, opTimeout+faultSlack)
			break
		}
	}
	start := time.Now()
	resp, err := c.client(1, nil).Call(testutil.Context(t, wait), "initialize", initializeParams())
	if err != nil {
		t.Fatal(err)
	}
	wantUnavailable(t, "initialize on replica B", resp, time.Since(start), opTimeout+faultSlack)

	resume()
	resumedAt := time.Now()
	for i := range 3 {
		cl := c.client(i, a)
		var resp *testutil.Response
		testutil.Eventually(t, wait, fmt.Sprintf("replica %s serves the session again", c.replicas[i].name), func() bool {
			var err error
			resp, err = cl.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "again"})
			if err != nil {
				t.Fatal(err)
			}
			return resp.Status != http.StatusServiceUnavailable
		})
		wantStatus(t, fmt.Sprintf("tools/call on replica %s after Resume", c.replicas[i].name), resp.Status, http.StatusOK, resp.Body)
		t.Logf("replica %s: serving again %v after Resume", c.replicas[i].name, time.Since(resumedAt).Round(time.Millisecond))
	}
	toolText(t, c.client(2, a), "echo", map[string]any{"text": "same session"})
}

// A GET stream whose client answers every ping lives through a Redis hang
// and the recovery after it: it keeps getting pings while Redis hangs (the
// answers, POSTed while the store is unreachable, reach the stream all the
// same), it is not closed as dead when Redis answers again, and it gets a
// notification sent from another replica afterwards. The store's OpTimeout
// (300 ms) is longer than a few heartbeats (20 ms), as it is whenever the
// heartbeat is short against the store's timeout.
func TestClusterStreamLivesThroughARedisHang(t *testing.T) {
	const opTimeout = 300 * time.Millisecond
	c := newCluster(t, streamable.Config{}, redisstore.Options{OpTimeout: opTimeout})
	a := c.session(0)
	toolText(t, c.client(2, a), "echo", map[string]any{"text": "adopt on C"})
	st := c.stream(a)
	st.AnswerPings(true)
	testutil.Eventually(t, wait, "a ping answered", func() bool { return st.Pongs() > 0 })
	pings := watchPings(t, st)

	resume := c.pauseRedis()
	paused := time.Now()
	// Pings keep coming while Redis hangs, for more than the missed-pong
	// limit's worth of heartbeats and more than one OpTimeout.
	const wantPings = 4
	if !pings.await(wantPings, paused, wantPings*(opTimeout+faultSlack)) {
		t.Fatalf("GET stream while Redis hangs: %d pings in %v, want %d; stream %s",
			pings.since(paused), time.Since(paused).Round(time.Millisecond), wantPings, pings.end(paused, "Redis hung"))
	}
	t.Logf("GET stream while Redis hangs: %d pings in %v (gaps %v)",
		pings.since(paused), time.Since(paused).Round(time.Millisecond), pings.gaps(paused))

	resume()
	resumedAt := time.Now()
	cl := c.client(0, a)
	testutil.Eventually(t, wait, "replica A serves the session again", func() bool {
		resp, err := cl.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "again"})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status == http.StatusOK
	})
	// Not closed as dead once the store is back: a window of many
	// heartbeats (and lease renewals) with the stream open.
	const window = 20 * 20 * time.Millisecond
	select {
	case <-pings.done:
		t.Fatalf("the GET stream of a client that answered every ping was closed after Redis came back: %s",
			pings.end(resumedAt, "Resume"))
	case <-time.After(window):
	}
	toolText(t, c.client(2, a), "lifeline_notify_session", map[string]any{"count": 1, "bytes": 3})
	// The watcher reads the stream; it hands over every message but pings.
	select {
	case m := <-pings.others:
		if m.Method != "notifications/message" || !strings.Contains(string(m.Params), `"xxx"`) {
			t.Fatalf("the stream after Resume: got %s %s, want the notification from C", m.Method, m.Params)
		}
	case <-time.After(wait):
		t.Fatalf("the stream after Resume: no notification from C (stream %s)", pings.end(resumedAt, "Resume"))
	}
}

// During a Redis outage failed requests leave nothing behind: rounds of
// concurrent POSTs across the three replicas, all answered 503, leave the
// goroutine count where it was before the outage (within a small margin
// for go-redis's own reconnect probes), after every round and at the end.
func TestClusterRedisOutageLeavesNoGoroutines(t *testing.T) {
	const (
		perRound = 40
		rounds   = 5
		// margin covers goroutines that exist once per client rather
		// than per request: go-redis starts one dial probe per pool
		// when its dials keep failing.
		margin = 12
	)
	c := newCluster(t, streamable.Config{}, redisstore.Options{})
	a := c.session(0)
	tr := &http.Transport{MaxIdleConnsPerHost: perRound}
	t.Cleanup(tr.CloseIdleConnections)
	clients := make([]*testutil.Client, 3)
	for i := range clients {
		clients[i] = c.client(i, a)
		clients[i].HTTP = &http.Client{Transport: tr}
	}
	// round fires perRound concurrent POSTs, spread over the replicas, and
	// returns their statuses and the slowest answer's time.
	round := func() (map[int]int, time.Duration) {
		var (
			mu       sync.Mutex
			statuses = make(map[int]int)
			slowest  time.Duration
			wg       sync.WaitGroup
		)
		ctx := testutil.Context(t, wait)
		for j := range perRound {
			wg.Go(func() {
				start := time.Now()
				resp, err := clients[j%3].CallTool(ctx, "echo", map[string]any{"text": "x"})
				d := time.Since(start)
				mu.Lock()
				defer mu.Unlock()
				slowest = max(slowest, d)
				if err != nil {
					statuses[-1]++
					return
				}
				statuses[resp.Status]++
			})
		}
		wg.Wait()
		return statuses, slowest
	}
	// settle waits until the count is back within slack of base.
	settle := func(what string, base, slack int) int {
		t.Helper()
		tr.CloseIdleConnections()
		var n int
		testutil.Eventually(t, wait, what, func() bool {
			n = runtime.NumGoroutine()
			return n <= base+slack
		})
		return n
	}

	// Warm up: every replica holds the session, connections came and went.
	warm := runtime.NumGoroutine()
	if st, _ := round(); st[http.StatusOK] != perRound {
		t.Fatalf("warm-up round: statuses %v, want %d × 200", st, perRound)
	}
	// The baseline: the count once the warm-up's connections are gone.
	baseline := settle(fmt.Sprintf("goroutines settle after the warm-up (%d before it)", warm), warm, 2)
	t.Logf("goroutines before the outage: %d (%d before the warm-up)", baseline, warm)

	c.redis.Stop()
	peak := baseline
	for r := range rounds {
		st, slowest := round()
		during := runtime.NumGoroutine()
		peak = max(peak, during)
		if st[http.StatusServiceUnavailable] != perRound {
			t.Fatalf("round %d: statuses %v, want %d × 503", r, st, perRound)
		}
		after := settle(fmt.Sprintf("round %d: goroutines back within %d of %d (last count %d)", r, margin, baseline, runtime.NumGoroutine()), baseline, margin)
		t.Logf("round %d: %d × 503, slowest %v; goroutines %d right after the round, %d settled",
			r, perRound, slowest.Round(time.Millisecond), during, after)
	}
	// Bounded throughout: a round's own connections at most, nothing that
	// grows with the number of failed requests.
	if limit := baseline + margin + 4*perRound; peak > limit {
		t.Errorf("goroutines peaked at %d during the outage, want at most %d", peak, limit)
	}
	final := settle("goroutines back to the baseline after the outage's rounds", baseline, margin)
	t.Logf("goroutines: baseline %d, peak %d, after %d rounds of %d failed POSTs %d", baseline, peak, rounds, perRound, final)

	// And the service comes back (the restart lost the session).
	if err := c.redis.Restart(); err != nil {
		t.Fatal(err)
	}
	fresh := c.client(0, nil)
	testutil.Eventually(t, wait, "initialize works after the restart", func() bool {
		_, err := fresh.Initialize(testutil.Context(t, wait))
		return err == nil
	})
	// Each replica comes back on its own: go-redis's pool, once its dials
	// failed, answers with the last dial error until its probe (once a
	// second) reaches Redis again, so replica 1 may answer 503 for up to
	// a second after replica 0 took the initialize.
	back := c.client(1, fresh)
	testutil.Eventually(t, wait, "replica 1 serves the session after the restart", func() bool {
		resp, err := back.CallTool(testutil.Context(t, wait), "echo", map[string]any{"text": "back"})
		return err == nil && resp.Status == http.StatusOK
	})
	toolText(t, back, "echo", map[string]any{"text": "back"})
}

// wantUnavailable fails unless resp is a 503 with Retry-After and a
// JSON-RPC error saying Redis is unavailable, answered within bound.
func wantUnavailable(t *testing.T, what string, resp *testutil.Response, took, bound time.Duration) {
	t.Helper()
	if resp.Status != http.StatusServiceUnavailable {
		t.Errorf("%s: status %d, want 503 (body %q)", what, resp.Status, resp.Body)
		return
	}
	if took > bound {
		t.Errorf("%s: 503 took %v, want at most %v", what, took, bound)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Errorf("%s: 503 without Retry-After", what)
	}
	var body struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil || body.JSONRPC != "2.0" || body.Error == nil {
		t.Errorf("%s: 503 body is not a JSON-RPC error: %q (%v)", what, resp.Body, err)
		return
	}
	if !strings.Contains(body.Error.Message, unavailableText) {
		t.Errorf("%s: error message %q does not say %q", what, body.Error.Message, unavailableText)
	}
}

// initializeParams are testutil.Client.Initialize's, for tests that need
// the raw answer to initialize.
func initializeParams() map[string]any {
	return map[string]any{
		"protocolVersion": testutil.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "lifeline-testutil", "version": "1"},
	}
}
