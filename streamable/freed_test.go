package streamable_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// heapBytes is the live heap after a collection.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// heapGrowth is how much the live heap grew from before, never negative.
func heapGrowth(before uint64) uint64 {
	if now := heapBytes(); now > before {
		return now - before
	}
	return 0
}

// bigInitialize sends an initialize whose params carry bigBytes the server
// ignores, and returns the answer.
func bigInitialize(t *testing.T, c *testutil.Client) *testutil.Response {
	t.Helper()
	c.SessionID = ""
	resp, err := c.Call(testutil.Context(t, wait), "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "big", "version": "1"},
		"padding":         strings.Repeat("x", bigBytes),
	})
	if err != nil {
		t.Fatal(err)
	}
	c.SessionID = resp.Header.Get("Mcp-Session-Id")
	c.ProtocolVersion = testutil.ProtocolVersion
	return resp
}

// idRecorder is a Config.NewSessionID that remembers every id it made.
type idRecorder struct {
	mu  sync.Mutex
	ids []string
	n   int
}

func (r *idRecorder) next() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	id := fmt.Sprintf("sess-%06d", r.n)
	r.ids = append(r.ids, id)
	return id
}

func (r *idRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// bigSessions is how many big messages (of bigBytes each) the memory tests
// send: 12 of 256 KiB, or to measure, LIFELINE_BIG_SESSIONS of 1 MiB.
var bigSessions, bigBytes = func() (int, int) {
	if n, err := strconv.Atoi(os.Getenv("LIFELINE_BIG_SESSIONS")); err == nil && n > 0 {
		return n, 1 << 20
	}
	return 12, 256 << 10
}()

// heapBound is how much the heap may grow while the tests below send
// bigSessions big messages: a quarter of what they send.
func heapBound() uint64 { return uint64(bigSessions*bigBytes) / 4 }

// Ended sessions are freed: after DELETE the store keeps only a small
// tombstone (not the client's initialize params), and once the tombstones
// lapse nothing is left, with no request naming their ids.
func TestEndedSessionsAreFreed(t *testing.T) {
	clock := testutil.NewManualClock(time.Unix(1_000_000, 0))
	store := sessionstore.NewMemory(clock.Now)
	const ttl = 10 * time.Minute
	r := newRig(t, streamable.Config{Clock: clock, Store: store, IdleTTL: ttl})
	c := r.client()
	bigInitialize(t, c) // warm up: pools, buffers and the like
	if _, err := c.Delete(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	before := heapBytes()
	for range bigSessions {
		resp := bigInitialize(t, c)
		wantStatus(t, "initialize", resp.Status, http.StatusOK, resp.Body)
		del, err := c.Delete(testutil.Context(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "DELETE", del.Status, http.StatusOK, del.Body)
	}
	if n := r.h.Stats().Sessions; n != 0 {
		t.Fatalf("%d live sessions, want 0", n)
	}
	tombs := heapGrowth(before)
	t.Logf("heap after %d x (%d KiB initialize + DELETE): +%d KiB", bigSessions, bigBytes>>10, tombs>>10)
	if tombs > heapBound() {
		t.Fatalf("heap grew %d KiB for %d ended sessions; their tombstones keep what they were sent", tombs>>10, bigSessions)
	}
	clock.Advance(ttl + time.Minute)
	if n, err := store.Count(context.Background()); err != nil || n != 0 {
		t.Fatalf("Count = %d, %v; want 0", n, err)
	}
	t.Logf("heap after the tombstones lapsed and a sweep: +%d KiB", heapGrowth(before)>>10)
}

// A live session keeps one copy of its initialize params (mcp-go's), not
// a second one in the default store.
func TestLiveSessionKeepsOneCopyOfItsParams(t *testing.T) {
	ids := &idRecorder{}
	store := sessionstore.NewMemory(nil)
	r := newRig(t, streamable.Config{Store: store, NewSessionID: ids.next})
	before := heapBytes()
	for range bigSessions {
		resp := bigInitialize(t, r.client())
		wantStatus(t, "initialize", resp.Status, http.StatusOK, resp.Body)
	}
	grew := heapGrowth(before)
	t.Logf("heap after %d live sessions of %d KiB initialize each: +%d KiB", bigSessions, bigBytes>>10, grew>>10)
	for _, id := range ids.all() {
		rec, err := store.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("Get %s: %v", id, err)
		}
		if len(rec.ClientInfo) != 0 {
			t.Fatalf("the default store keeps %d bytes of %s's initialize params", len(rec.ClientInfo), id)
		}
	}
	if grew > heapBound() {
		t.Fatalf("heap grew %d KiB for %d sessions", grew>>10, bigSessions)
	}
}

// An initialize refused at MaxSessions leaves nothing behind: its client
// never learnt the id.
func TestRefusedInitializeLeavesNothing(t *testing.T) {
	ids := &idRecorder{}
	store := sessionstore.NewMemory(nil)
	r := newRig(t, streamable.Config{Store: store, MaxSessions: 1, NewSessionID: ids.next})
	r.session()
	bigInitialize(t, r.client()) // warm up
	before := heapBytes()
	for range bigSessions {
		resp := bigInitialize(t, r.client())
		wantStatus(t, "initialize beyond MaxSessions", resp.Status, http.StatusServiceUnavailable, resp.Body)
	}
	grew := heapGrowth(before)
	t.Logf("heap after %d refused %d KiB initializes: +%d KiB", bigSessions, bigBytes>>10, grew>>10)
	refused := ids.all()[1:]
	for _, id := range refused {
		if _, err := store.Get(context.Background(), id); !errors.Is(err, sessionstore.ErrNotFound) {
			t.Fatalf("Get of refused %s: %v, want ErrNotFound (no record, no tombstone)", id, err)
		}
	}
	if grew > heapBound() {
		t.Fatalf("heap grew %d KiB for %d refused initializes", grew>>10, bigSessions)
	}
}
