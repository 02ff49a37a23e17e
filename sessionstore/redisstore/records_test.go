package redisstore_test

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
)

func TestCreateGet(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	rec := sessionstore.Record{ID: "s", ProtocolVersion: "2025-06-18", ClientInfo: []byte(`{"a":1}`)}
	before := time.Now()
	wantErr(t, "Create", s.Create(t.Context(), rec, time.Minute), nil)
	after := time.Now()
	got := wantGet(t, s, "s", nil)
	if got.ID != "s" || got.ProtocolVersion != "2025-06-18" || string(got.ClientInfo) != `{"a":1}` {
		t.Fatalf("Get = %+v", got)
	}
	within(t, "CreatedAt", got.CreatedAt, before, after)
	within(t, "ExpiresAt", got.ExpiresAt, before.Add(time.Minute), after.Add(time.Minute))
	if d := e.pttl(t, prefix+"session:s"); d <= 59*time.Second || d > time.Minute {
		t.Fatalf("record PTTL = %v, want about a minute", d)
	}
	wantErr(t, "Create dup", s.Create(t.Context(), rec, time.Minute), sessionstore.ErrExists)
	wantGet(t, s, "missing", sessionstore.ErrNotFound)

	// A CreatedAt given by the caller is kept to the nanosecond.
	at := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	wantErr(t, "Create with CreatedAt", s.Create(t.Context(), sessionstore.Record{ID: "t", CreatedAt: at}, 0), nil)
	if got := wantGet(t, s, "t", nil); !got.CreatedAt.Equal(at) || got.ClientInfo != nil || got.ProtocolVersion != "" {
		t.Fatalf("Get t = %+v, want CreatedAt %v and empty fields", got, at)
	}
}

func TestExpiryAfterTTL(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	const ttl = 200 * time.Millisecond
	start := time.Now()
	mustCreate(t, s, "s", ttl)
	sub := subscribe(t, s, "s")
	if _, err := s.Get(t.Context(), "s"); err != nil && time.Since(start) < ttl {
		t.Fatalf("Get within the ttl: %v", err)
	}
	holds(t, "the session to expire", gone(t, s, "s"))
	if el := time.Since(start); el < ttl {
		t.Fatalf("expired after %v, before its ttl %v", el, ttl)
	}
	// Finding the session gone closed this Store's subscriptions to it.
	buffered(t, sub, true)
	// Create on a lapsed id succeeds, with no Get in between.
	mustCreate(t, s, "t", ttl)
	holds(t, "the record key to lapse", func() bool { return !e.exists(t, prefix+"session:t") })
	wantErr(t, "Create on lapsed", s.Create(t.Context(), sessionstore.Record{ID: "t"}, time.Minute), nil)
	wantGet(t, s, "t", nil)
}

// TestExpiryClosesSubscriptions: a Store that never looks an expired
// session up closes its subscriptions to it on its periodic check.
func TestExpiryClosesSubscriptions(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{CheckInterval: 100 * time.Millisecond})
	mustCreate(t, s, "s", 200*time.Millisecond)
	mustCreate(t, s, "live", time.Hour)
	sub, live := subscribe(t, s, "s"), subscribe(t, s, "live")
	closed(t, sub)
	publish(t, s, "live", "still here")
	if got := next(t, live); got != "still here" {
		t.Fatalf("live got %q", got)
	}
}

func TestTouchExtends(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	start := time.Now()
	mustCreate(t, s, "s", 300*time.Millisecond)
	before := time.Now()
	wantErr(t, "Touch", s.Touch(t.Context(), "s", 10*time.Second), nil)
	after := time.Now()
	holds(t, "the first ttl to pass", func() bool { return time.Since(start) > 600*time.Millisecond })
	rec := wantGet(t, s, "s", nil)
	within(t, "ExpiresAt after Touch", rec.ExpiresAt, before.Add(10*time.Second), after.Add(10*time.Second))
	if score := e.raw.ZScore(t.Context(), prefix+"sessions", "s").Val(); score != float64(rec.ExpiresAt.UnixMilli()) {
		t.Fatalf("index score %v, want %v", score, rec.ExpiresAt.UnixMilli())
	}
	wantErr(t, "Touch short", s.Touch(t.Context(), "s", 200*time.Millisecond), nil)
	holds(t, "the session to expire after the short Touch", gone(t, s, "s"))
	wantErr(t, "Touch unknown", s.Touch(t.Context(), "nope", time.Second), sessionstore.ErrNotFound)
}

func TestNonPositiveTTLNeverExpires(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "zero", 0)
	mustCreate(t, s, "negative", -time.Second)
	mustCreate(t, s, "touched", time.Second)
	wantErr(t, "Touch", s.Touch(t.Context(), "touched", 0), nil)
	for _, id := range []string{"zero", "negative", "touched"} {
		if rec := wantGet(t, s, id, nil); !rec.ExpiresAt.IsZero() {
			t.Fatalf("%s: ExpiresAt = %v, want zero", id, rec.ExpiresAt)
		}
		if d := e.pttl(t, prefix+"session:"+id); d != -1 {
			t.Fatalf("%s: PTTL = %v, want none", id, d)
		}
		if score := e.raw.ZScore(t.Context(), prefix+"sessions", id).Val(); !math.IsInf(score, 1) {
			t.Fatalf("%s: index score %v, want +inf", id, score)
		}
	}
	// A terminated session without expiry is not remembered forever.
	wantErr(t, "Terminate", s.Terminate(t.Context(), "zero"), nil)
	wantGet(t, s, "zero", sessionstore.ErrTerminated)
	if d := e.pttl(t, prefix+"session:zero"); d <= sessionstore.TombstoneTTL-time.Minute || d > sessionstore.TombstoneTTL {
		t.Fatalf("tombstone PTTL = %v, want about %v", d, sessionstore.TombstoneTTL)
	}
}

func TestUpdate(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Minute)
	before := wantGet(t, s, "s", nil)
	upd := sessionstore.Record{ID: "s", ProtocolVersion: "v2", ClientInfo: []byte("ci"), ExpiresAt: before.ExpiresAt.Add(time.Hour)}
	wantErr(t, "Update", s.Update(t.Context(), upd), nil)
	got := wantGet(t, s, "s", nil)
	if got.ProtocolVersion != "v2" || string(got.ClientInfo) != "ci" || !got.CreatedAt.Equal(before.CreatedAt) || !got.ExpiresAt.Equal(before.ExpiresAt) {
		t.Fatalf("after Update = %+v, was %+v", got, before)
	}
	if d := e.pttl(t, prefix+"session:s"); d <= 50*time.Second {
		t.Fatalf("Update changed the record's PTTL to %v", d)
	}
	wantErr(t, "Update unknown", s.Update(t.Context(), sessionstore.Record{ID: "x"}), sessionstore.ErrNotFound)
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	wantErr(t, "Update terminated", s.Update(t.Context(), upd), sessionstore.ErrTerminated)
	wantErr(t, "Touch terminated", s.Touch(t.Context(), "s", time.Minute), sessionstore.ErrTerminated)
}

func TestTerminateTombstone(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", 10*time.Second)
	la := acquire(t, s, "s", "a", 0, nil)
	subs := []sessionstore.Subscription{subscribe(t, s, "s"), subscribe(t, s, "s")}
	publish(t, s, "s", "last")
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	wantErr(t, "Terminate again", s.Terminate(t.Context(), "s"), nil)
	wantGet(t, s, "s", sessionstore.ErrTerminated)
	// Terminate returned with this Store's subscriptions closed, after
	// what was published before.
	for i, sub := range subs {
		if got := buffered(t, sub, true); len(got) != 1 || got[0] != "last" {
			t.Fatalf("sub %d got %q before closing, want [last]", i, got)
		}
		wantErr(t, "Close after Terminate", sub.Close(), nil)
	}
	wantErr(t, "Publish terminated", s.Publish(t.Context(), "s", nil), sessionstore.ErrTerminated)
	_, err := s.Subscribe(t.Context(), "s")
	wantErr(t, "Subscribe terminated", err, sessionstore.ErrTerminated)
	// Terminate dropped the lease; the tombstone refuses stream operations.
	if e.exists(t, prefix+"lease:s") {
		t.Fatal("the lease key outlived Terminate")
	}
	_, _, err = s.StreamHolder(t.Context(), "s")
	wantErr(t, "StreamHolder terminated", err, sessionstore.ErrTerminated)
	acquire(t, s, "s", "b", 0, sessionstore.ErrTerminated)
	renew(t, s, la, time.Minute, sessionstore.ErrLeaseLost)
	wantErr(t, "Release terminated", s.ReleaseStream(t.Context(), la), nil)
	wantErr(t, "Create on tombstone", s.Create(t.Context(), sessionstore.Record{ID: "s"}, time.Minute), sessionstore.ErrExists)
	wantCount(t, s, 0)
	// The tombstone lives for the record's last ttl, counted from Terminate.
	if d := e.pttl(t, prefix+"session:s"); d <= 9*time.Second || d > 10*time.Second {
		t.Fatalf("tombstone PTTL = %v, want about 10s", d)
	}

	// A short one lapses, and its id can be used again.
	mustCreate(t, s, "short", 300*time.Millisecond)
	wantErr(t, "Terminate short", s.Terminate(t.Context(), "short"), nil)
	wantGet(t, s, "short", sessionstore.ErrTerminated)
	holds(t, "the tombstone to lapse", gone(t, s, "short"))
	wantErr(t, "Terminate lapsed", s.Terminate(t.Context(), "short"), sessionstore.ErrNotFound)
	wantErr(t, "Create on lapsed tombstone", s.Create(t.Context(), sessionstore.Record{ID: "short"}, time.Minute), nil)
	wantGet(t, s, "short", nil)
}

func TestCount(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	wantCount(t, s, 0)
	mustCreate(t, s, "short", 300*time.Millisecond)
	mustCreate(t, s, "long", time.Hour)
	mustCreate(t, s, "forever", 0)
	mustCreate(t, s, "dead", time.Hour)
	// A lease without expiry on a session that lapses is pruned with it.
	acquire(t, s, "short", "a", 0, nil)
	wantCount(t, s, 4)
	wantErr(t, "Terminate", s.Terminate(t.Context(), "dead"), nil)
	wantCount(t, s, 3)
	// The index's score and the record's expiry are set a moment apart:
	// Count stops counting the session at its score, and prunes it from
	// the index once its record has lapsed too (a later Count).
	holds(t, "Count to drop the lapsed session, and prune it from the index", func() bool {
		n, err := s.Count(t.Context())
		return err == nil && n == 2 && e.raw.ZCard(t.Context(), prefix+"sessions").Val() == 2
	})
	if e.exists(t, prefix+"lease:short") {
		t.Fatal("the lapsed session's lease was not pruned")
	}
}

// A tombstone keeps only what answers ErrTerminated: not the client's
// initialize parameters, which may be as large as a request body.
func TestTombstoneKeepsNoClientInfo(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = 'x'
	}
	rec := sessionstore.Record{ID: "s", ProtocolVersion: "2025-06-18", ClientInfo: big}
	wantErr(t, "Create", s.Create(t.Context(), rec, time.Minute), nil)
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	wantGet(t, s, "s", sessionstore.ErrTerminated)
	fields, err := e.raw.HKeys(t.Context(), prefix+"session:s").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if f == "ci" || f == "v" {
			t.Fatalf("tombstone fields %q still hold %q", fields, f)
		}
	}
}

// Remove leaves nothing of a session: no record, tombstone, lease or
// index entry, and its subscriptions end.
func TestRemove(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	other := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Minute)
	acquire(t, s, "s", "a", 0, nil)
	sub, far := subscribe(t, s, "s"), subscribe(t, other, "s")
	wantErr(t, "Remove", s.Remove(t.Context(), "s"), nil)
	wantGet(t, s, "s", sessionstore.ErrNotFound)
	for _, key := range []string{prefix + "session:s", prefix + "lease:s"} {
		if e.exists(t, key) {
			t.Fatalf("%s outlived Remove", key)
		}
	}
	if n := e.raw.ZCard(t.Context(), prefix+"sessions").Val(); n != 0 {
		t.Fatalf("index holds %d ids after Remove, want 0", n)
	}
	closed(t, sub)
	closed(t, far)
	wantErr(t, "Remove again", s.Remove(t.Context(), "s"), nil)
	wantErr(t, "Create after Remove", s.Create(t.Context(), sessionstore.Record{ID: "s"}, time.Minute), nil)

	// A tombstone goes too.
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	wantErr(t, "Remove tombstone", s.Remove(t.Context(), "s"), nil)
	wantGet(t, s, "s", sessionstore.ErrNotFound)
}

// CheckLive answers what Touch would (live, terminated, unknown, expired)
// and extends nothing: the record's expiry and its index entry stay (it
// writes only the live cache's window, live_cache_test.go).
func TestCheckLiveExtendsNothing(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "s", time.Minute)
	before := e.pttl(t, prefix+"session:s")
	score := e.raw.ZScore(t.Context(), prefix+"sessions", "s").Val()
	wantErr(t, "CheckLive", s.CheckLive(t.Context(), "s"), nil)
	if d := e.pttl(t, prefix+"session:s"); d > before {
		t.Fatalf("CheckLive extended the record's PTTL from %v to %v", before, d)
	}
	if got := e.raw.ZScore(t.Context(), prefix+"sessions", "s").Val(); got != score {
		t.Fatalf("CheckLive moved the index score from %v to %v", score, got)
	}
	wantErr(t, "CheckLive unknown", s.CheckLive(t.Context(), "nope"), sessionstore.ErrNotFound)
	mustCreate(t, s, "short", 100*time.Millisecond)
	holds(t, "the short session to expire", func() bool { return errors.Is(s.CheckLive(t.Context(), "short"), sessionstore.ErrNotFound) })
	wantErr(t, "Terminate", s.Terminate(t.Context(), "s"), nil)
	wantErr(t, "CheckLive terminated", s.CheckLive(t.Context(), "s"), sessionstore.ErrTerminated)
}

// CheckLive calls made at once (more than go out on their own: the rest go
// in shared pipelines) each get their own session's answer.
func TestConcurrentCheckLiveAnswersEachSession(t *testing.T) {
	e := newEnv(t)
	s := e.store(t, redisstore.Options{})
	mustCreate(t, s, "live", time.Minute)
	mustCreate(t, s, "ended", time.Minute)
	wantErr(t, "Terminate", s.Terminate(t.Context(), "ended"), nil)
	want := map[string]error{"live": nil, "ended": sessionstore.ErrTerminated, "unknown": sessionstore.ErrNotFound}
	ids := []string{"live", "ended", "unknown"}
	const calls = 600
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { errs[i] = s.CheckLive(t.Context(), ids[i%len(ids)]) })
	}
	wg.Wait()
	for i, err := range errs {
		if w := want[ids[i%len(ids)]]; !errors.Is(err, w) || (w == nil && err != nil) {
			t.Fatalf("call %d, %s: %v, want %v", i, ids[i%len(ids)], err, w)
		}
	}
}
