package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is an injectable now func whose time only moves on Advance.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var ctx = context.Background()

func newStore() (*Memory, *fakeClock) {
	clk := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewMemory(clk.Now), clk
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if want == nil && got != nil || want != nil && !errors.Is(got, want) {
		t.Fatalf("%s: err = %v, want %v", what, got, want)
	}
}

func mustCreate(t *testing.T, m *Memory, id string, ttl time.Duration) {
	t.Helper()
	wantErr(t, "Create "+id, m.Create(ctx, Record{ID: id, ProtocolVersion: "v1"}, ttl), nil)
}

// wantGet, acquire and renew call the method and check the error it returns.
func wantGet(t *testing.T, m *Memory, id string, want error) Record {
	t.Helper()
	rec, err := m.Get(ctx, id)
	wantErr(t, "Get "+id, err, want)
	return rec
}

func acquire(t *testing.T, m *Memory, id, holder string, ttl time.Duration, want error) Lease {
	t.Helper()
	l, err := m.AcquireStream(ctx, id, holder, ttl)
	wantErr(t, fmt.Sprintf("AcquireStream(%s, %s)", id, holder), err, want)
	return l
}

func renew(t *testing.T, m *Memory, l Lease, ttl time.Duration, want error) Lease {
	t.Helper()
	r, err := m.RenewStream(ctx, l, ttl)
	wantErr(t, fmt.Sprintf("RenewStream(%+v)", l), err, want)
	return r
}

func wantHolder(t *testing.T, m *Memory, id, want string) {
	t.Helper()
	l, ok, err := m.StreamHolder(ctx, id)
	if err != nil || ok != (want != "") || l.Holder != want {
		t.Fatalf("StreamHolder(%s) = %+v, %v, %v; want holder %q", id, l, ok, err, want)
	}
}

func wantCount(t *testing.T, m *Memory, want int) {
	t.Helper()
	if n, err := m.Count(ctx); err != nil || n != want {
		t.Fatalf("Count = %d, %v; want %d", n, err, want)
	}
}

func TestCreateGet(t *testing.T) {
	m, clk := newStore()
	rec := Record{ID: "s", ProtocolVersion: "2025-06-18", ClientInfo: []byte(`{"a":1}`)}
	wantErr(t, "Create", m.Create(ctx, rec, time.Minute), nil)
	got := wantGet(t, m, "s", nil)
	if got.ID != "s" || got.ProtocolVersion != "2025-06-18" || string(got.ClientInfo) != `{"a":1}` {
		t.Fatalf("Get = %+v", got)
	}
	if !got.CreatedAt.Equal(clk.Now()) || !got.ExpiresAt.Equal(clk.Now().Add(time.Minute)) {
		t.Fatalf("CreatedAt/ExpiresAt = %v/%v", got.CreatedAt, got.ExpiresAt)
	}
	wantErr(t, "Create dup", m.Create(ctx, rec, time.Minute), ErrExists)
	wantGet(t, m, "missing", ErrNotFound)
}

func TestExpiryAfterTTL(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "s", 10*time.Second)
	sub := subscribe(t, m, "s")
	clk.Advance(10*time.Second - time.Nanosecond)
	wantGet(t, m, "s", nil)
	clk.Advance(time.Nanosecond)
	wantGet(t, m, "s", ErrNotFound)
	recv(t, sub, 0, true) // dropping a lapsed record closes its subscribers
	// Create on a lapsed id succeeds, with no Get in between to drop it.
	mustCreate(t, m, "t", time.Second)
	clk.Advance(time.Second)
	wantErr(t, "Create on lapsed", m.Create(ctx, Record{ID: "t"}, time.Second), nil)
	wantGet(t, m, "t", nil)
}

func TestTouchExtends(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "s", 10*time.Second)
	clk.Advance(8 * time.Second)
	wantErr(t, "Touch", m.Touch(ctx, "s", 10*time.Second), nil)
	clk.Advance(8 * time.Second) // 16s after Create, 8s after Touch
	if rec := wantGet(t, m, "s", nil); !rec.ExpiresAt.Equal(clk.Now().Add(2 * time.Second)) {
		t.Fatalf("ExpiresAt = %v", rec.ExpiresAt)
	}
	clk.Advance(2 * time.Second)
	wantGet(t, m, "s", ErrNotFound)
	wantErr(t, "Touch unknown", m.Touch(ctx, "nope", time.Second), ErrNotFound)
}

func TestNonPositiveTTLNeverExpires(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "zero", 0)
	mustCreate(t, m, "negative", -time.Second)
	mustCreate(t, m, "touched", time.Second)
	wantErr(t, "Touch", m.Touch(ctx, "touched", 0), nil)
	clk.Advance(100 * 365 * 24 * time.Hour)
	for _, id := range []string{"zero", "negative", "touched"} {
		if rec := wantGet(t, m, id, nil); !rec.ExpiresAt.IsZero() {
			t.Fatalf("%s: ExpiresAt = %v, want zero", id, rec.ExpiresAt)
		}
	}
	// A terminated session without expiry is not remembered forever.
	wantErr(t, "Terminate", m.Terminate(ctx, "zero"), nil)
	wantGet(t, m, "zero", ErrTerminated)
	clk.Advance(TombstoneTTL)
	wantGet(t, m, "zero", ErrNotFound)
}

func TestUpdate(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", time.Minute)
	before := wantGet(t, m, "s", nil)
	upd := Record{ID: "s", ProtocolVersion: "v2", ClientInfo: []byte("ci"), ExpiresAt: before.ExpiresAt.Add(time.Hour)}
	wantErr(t, "Update", m.Update(ctx, upd), nil)
	got := wantGet(t, m, "s", nil)
	if got.ProtocolVersion != "v2" || string(got.ClientInfo) != "ci" || !got.CreatedAt.Equal(before.CreatedAt) || !got.ExpiresAt.Equal(before.ExpiresAt) {
		t.Fatalf("after Update = %+v, was %+v", got, before)
	}
	wantErr(t, "Update unknown", m.Update(ctx, Record{ID: "x"}), ErrNotFound)
	wantErr(t, "Terminate", m.Terminate(ctx, "s"), nil)
	wantErr(t, "Update terminated", m.Update(ctx, upd), ErrTerminated)
	wantErr(t, "Touch terminated", m.Touch(ctx, "s", time.Minute), ErrTerminated)
}

func TestTerminateTombstone(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "s", 10*time.Second)
	la := acquire(t, m, "s", "a", 0, nil)
	subs := []Subscription{subscribe(t, m, "s"), subscribe(t, m, "s")}
	wantErr(t, "Publish", m.Publish(ctx, "s", []byte("last")), nil)
	clk.Advance(5 * time.Second)
	wantErr(t, "Terminate", m.Terminate(ctx, "s"), nil)
	wantErr(t, "Terminate again", m.Terminate(ctx, "s"), nil)
	wantGet(t, m, "s", ErrTerminated)
	// Terminate closed every subscription, after what was already buffered.
	for _, sub := range subs {
		recv(t, sub, 1, true)
		wantErr(t, "Close after Terminate", sub.Close(), nil)
	}
	wantErr(t, "Publish terminated", m.Publish(ctx, "s", nil), ErrTerminated)
	_, err := m.Subscribe(ctx, "s")
	wantErr(t, "Subscribe terminated", err, ErrTerminated)
	// Terminate dropped the lease; the tombstone refuses stream operations.
	if _, live := m.sessions["s"]; live || m.tombs["s"].IsZero() {
		t.Fatalf("after Terminate: live record %v, tombstone %v; want only a tombstone", live, m.tombs["s"])
	}
	_, _, err = m.StreamHolder(ctx, "s")
	wantErr(t, "StreamHolder terminated", err, ErrTerminated)
	acquire(t, m, "s", "b", 0, ErrTerminated)
	renew(t, m, la, time.Minute, ErrLeaseLost)
	wantErr(t, "Release terminated", m.ReleaseStream(ctx, la), nil)
	wantErr(t, "Create on tombstone", m.Create(ctx, Record{ID: "s"}, time.Minute), ErrExists)
	// The tombstone lives for the record's last ttl, counted from Terminate.
	clk.Advance(10*time.Second - time.Nanosecond)
	wantGet(t, m, "s", ErrTerminated)
	clk.Advance(time.Nanosecond)
	wantGet(t, m, "s", ErrNotFound)
	wantErr(t, "Terminate lapsed", m.Terminate(ctx, "s"), ErrNotFound)
	wantErr(t, "Create on lapsed tombstone", m.Create(ctx, Record{ID: "s"}, time.Minute), nil)
	wantGet(t, m, "s", nil)
}

func TestCount(t *testing.T) {
	m, clk := newStore()
	wantCount(t, m, 0)
	mustCreate(t, m, "short", time.Second)
	mustCreate(t, m, "long", time.Hour)
	mustCreate(t, m, "forever", 0)
	mustCreate(t, m, "dead", time.Hour)
	wantCount(t, m, 4)
	wantErr(t, "Terminate", m.Terminate(ctx, "dead"), nil)
	wantCount(t, m, 3)
	clk.Advance(time.Second)
	wantCount(t, m, 2)
	clk.Advance(time.Hour)
	wantCount(t, m, 1)
}

func TestAcquireStream(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "s", 0)
	l := acquire(t, m, "s", "a", 10*time.Second, nil)
	if want := (Lease{SessionID: "s", Holder: "a", ExpiresAt: clk.Now().Add(10 * time.Second)}); l != want {
		t.Fatalf("lease = %+v, want %+v", l, want)
	}
	clk.Advance(5 * time.Second)
	// The same holder may re-acquire, which restarts the ttl.
	if l = acquire(t, m, "s", "a", 10*time.Second, nil); !l.ExpiresAt.Equal(clk.Now().Add(10 * time.Second)) {
		t.Fatalf("re-acquire ExpiresAt = %v", l.ExpiresAt)
	}
	if held := acquire(t, m, "s", "b", 10*time.Second, ErrStreamHeld); held.Holder != "a" || held.SessionID != "s" {
		t.Fatalf("ErrStreamHeld lease = %+v, want holder a", held)
	}
	wantHolder(t, m, "s", "a")
	// Once a's lease lapses b can take it over.
	clk.Advance(10 * time.Second)
	wantHolder(t, m, "s", "")
	if l = acquire(t, m, "s", "b", 0, nil); l.Holder != "b" || !l.ExpiresAt.IsZero() {
		t.Fatalf("takeover lease = %+v", l)
	}
	// A ttl<=0 lease never lapses.
	clk.Advance(1000 * time.Hour)
	acquire(t, m, "s", "a", time.Second, ErrStreamHeld)
	wantHolder(t, m, "s", "b")
	acquire(t, m, "nope", "a", time.Second, ErrNotFound)
}

func TestRenewStream(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "s", time.Hour)
	la := acquire(t, m, "s", "a", 10*time.Second, nil)
	clk.Advance(9 * time.Second)
	r := renew(t, m, la, 10*time.Second, nil)
	if r.Holder != "a" || !r.ExpiresAt.Equal(clk.Now().Add(10*time.Second)) {
		t.Fatalf("renewed = %+v", r)
	}
	renew(t, m, Lease{SessionID: "s", Holder: "b"}, time.Second, ErrLeaseLost)
	wantHolder(t, m, "s", "a")
	// After a lapse renew fails, even with nobody else holding the stream.
	clk.Advance(10 * time.Second)
	renew(t, m, r, 10*time.Second, ErrLeaseLost)
	// After a takeover the old holder has lost it too.
	acquire(t, m, "s", "b", 10*time.Second, nil)
	renew(t, m, la, 10*time.Second, ErrLeaseLost)
	wantHolder(t, m, "s", "b")
}

func TestReleaseStream(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", time.Hour)
	la := acquire(t, m, "s", "a", time.Minute, nil)
	// A non-holder's release leaves the lease in place (compare-and-delete).
	wantErr(t, "Release by b", m.ReleaseStream(ctx, Lease{SessionID: "s", Holder: "b"}), nil)
	wantHolder(t, m, "s", "a")
	acquire(t, m, "s", "b", time.Minute, ErrStreamHeld)
	wantErr(t, "Release by a", m.ReleaseStream(ctx, la), nil)
	wantHolder(t, m, "s", "")
	wantErr(t, "Release again", m.ReleaseStream(ctx, la), nil)
	wantErr(t, "Release unknown", m.ReleaseStream(ctx, Lease{SessionID: "x", Holder: "a"}), nil)
	lb := acquire(t, m, "s", "b", time.Minute, nil)
	// a's stale lease cannot release b's.
	wantErr(t, "stale Release by a", m.ReleaseStream(ctx, la), nil)
	wantHolder(t, m, "s", lb.Holder)
}

// TestAcquireReleaseRace is meant for -race: holders race for one stream
// and at no time may two of them believe they hold it.
func TestAcquireReleaseRace(t *testing.T) {
	const workers, iters = 8, 200
	m, _ := newStore()
	mustCreate(t, m, "s", 0)
	var holding, wins atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		holder := fmt.Sprintf("h%d", w)
		wg.Go(func() {
			for range iters {
				l, err := m.AcquireStream(ctx, "s", holder, time.Minute)
				if errors.Is(err, ErrStreamHeld) {
					continue
				}
				if err != nil {
					t.Errorf("%s: AcquireStream: %v", holder, err)
					return
				}
				if n := holding.Add(1); n > 1 {
					t.Errorf("%s: %d holders believe they hold the stream", holder, n)
				}
				wins.Add(1)
				holding.Add(-1)
				if err := m.ReleaseStream(ctx, l); err != nil {
					t.Errorf("%s: ReleaseStream: %v", holder, err)
				}
			}
		})
	}
	wg.Wait()
	if wins.Load() == 0 {
		t.Fatal("no AcquireStream ever succeeded")
	}
	wantHolder(t, m, "s", "")
}

// Records and tombstones that lapse are freed without anyone looking their
// ids up: a little on every Create, Terminate and Remove, all of them on
// Count and Sweep. A tombstone keeps nothing of the record.
func TestLapsedEntriesAreFreedWithoutLookup(t *testing.T) {
	m, clk := newStore()
	big := make([]byte, 1<<10)
	for i := range 200 {
		id := fmt.Sprint("s", i)
		wantErr(t, "Create", m.Create(ctx, Record{ID: id, ClientInfo: big}, time.Minute), nil)
		if i%2 == 0 {
			wantErr(t, "Terminate", m.Terminate(ctx, id), nil)
		}
	}
	if len(m.sessions) != 100 || len(m.tombs) != 100 {
		t.Fatalf("%d records and %d tombstones, want 100 and 100", len(m.sessions), len(m.tombs))
	}
	clk.Advance(2 * time.Minute)
	// One Create frees up to sweepBudget of them, the earliest due first.
	mustCreate(t, m, "new", time.Hour)
	if n := len(m.sessions) + len(m.tombs); n != 200+1-sweepBudget {
		t.Fatalf("%d entries after one Create, want %d", n, 200+1-sweepBudget)
	}
	m.Sweep()
	if len(m.sessions) != 1 || len(m.tombs) != 0 || m.liveDue.Len() != 1 || m.tombDue.Len() != 0 {
		t.Fatalf("after Sweep: %d records, %d tombstones, %d+%d due; want 1, 0, 1+0",
			len(m.sessions), len(m.tombs), m.liveDue.Len(), m.tombDue.Len())
	}
	wantGet(t, m, "s0", ErrNotFound)
	wantGet(t, m, "s1", ErrNotFound)

	// A touched record is not swept before its new expiry.
	clk.Advance(59 * time.Minute)
	wantErr(t, "Touch", m.Touch(ctx, "new", time.Hour), nil)
	clk.Advance(30 * time.Minute)
	m.Sweep()
	wantGet(t, m, "new", nil)
	clk.Advance(30 * time.Minute)
	wantCount(t, m, 0)
	if len(m.sessions) != 0 || m.liveDue.Len() != 0 {
		t.Fatalf("after Count: %d records, %d due; want none", len(m.sessions), m.liveDue.Len())
	}
}

// A record whose ttl Touch shortens is swept at its new, earlier expiry.
func TestSweepAfterShorterTouch(t *testing.T) {
	m, clk := newStore()
	mustCreate(t, m, "s", time.Hour)
	mustCreate(t, m, "forever", 0)
	wantErr(t, "Touch", m.Touch(ctx, "s", time.Minute), nil)
	wantErr(t, "Touch forever", m.Touch(ctx, "forever", time.Minute), nil)
	clk.Advance(time.Minute)
	m.Sweep()
	if len(m.sessions) != 0 {
		t.Fatalf("%d records left, want 0", len(m.sessions))
	}
}

// Tombstones are bounded: past MemoryTombstones, the one closest to
// lapsing is forgotten.
func TestTombstonesAreBounded(t *testing.T) {
	m, clk := newStore()
	for i := range MemoryTombstones + 10 {
		id := fmt.Sprint("s", i)
		mustCreate(t, m, id, time.Hour)
		wantErr(t, "Terminate", m.Terminate(ctx, id), nil)
		clk.Advance(time.Millisecond)
	}
	if len(m.tombs) != MemoryTombstones {
		t.Fatalf("%d tombstones, want %d", len(m.tombs), MemoryTombstones)
	}
	wantGet(t, m, "s9", ErrNotFound)
	wantGet(t, m, "s10", ErrTerminated)
	wantGet(t, m, fmt.Sprint("s", MemoryTombstones+9), ErrTerminated)
}

// Remove leaves nothing: no record, tombstone or lease, subscriptions end.
func TestRemove(t *testing.T) {
	m, _ := newStore()
	mustCreate(t, m, "s", time.Minute)
	acquire(t, m, "s", "a", 0, nil)
	sub := subscribe(t, m, "s")
	wantErr(t, "Remove", m.Remove(ctx, "s"), nil)
	recv(t, sub, 0, true)
	wantGet(t, m, "s", ErrNotFound)
	wantErr(t, "Remove again", m.Remove(ctx, "s"), nil)
	mustCreate(t, m, "s", time.Minute)
	wantErr(t, "Terminate", m.Terminate(ctx, "s"), nil)
	wantErr(t, "Remove tombstone", m.Remove(ctx, "s"), nil)
	wantGet(t, m, "s", ErrNotFound)
	if len(m.sessions) != 0 || len(m.tombs) != 0 {
		t.Fatalf("%d records, %d tombstones after Remove; want none", len(m.sessions), len(m.tombs))
	}
}

// The caller a session is bound to is kept by Create, read back by Get and
// left alone by Update.
func TestRecordCaller(t *testing.T) {
	m, _ := newStore()
	wantErr(t, "Create", m.Create(ctx, Record{ID: "s", Caller: "digest-a"}, time.Minute), nil)
	if got := wantGet(t, m, "s", nil); got.Caller != "digest-a" {
		t.Fatalf("Get Caller = %q, want digest-a", got.Caller)
	}
	wantErr(t, "Update", m.Update(ctx, Record{ID: "s", ProtocolVersion: "v2", Caller: "digest-b"}), nil)
	if got := wantGet(t, m, "s", nil); got.Caller != "digest-a" || got.ProtocolVersion != "v2" {
		t.Fatalf("after Update = %+v, want Caller digest-a kept", got)
	}
}

// recv reads n buffered messages from sub without blocking, then, if
// closed, checks that the channel is closed.
func recv(t *testing.T, sub Subscription, n int, closed bool) (got []string) {
	t.Helper()
	for i := 0; i < n || closed; i++ {
		select {
		case msg, ok := <-sub.Messages():
			if ok != (i < n) {
				t.Fatalf("read %d: message %q, open=%v; want %d messages, closed=%v", i, msg, ok, n, closed)
			}
			if !ok {
				return got
			}
			got = append(got, string(msg))
		default:
			t.Fatalf("read %d of %d messages (closed=%v); no more buffered", i, n, closed)
		}
	}
	return got
}

func subscribe(t *testing.T, m *Memory, id string) Subscription {
	t.Helper()
	sub, err := m.Subscribe(ctx, id)
	wantErr(t, "Subscribe "+id, err, nil)
	t.Cleanup(func() { sub.Close() })
	return sub
}
