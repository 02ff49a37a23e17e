package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/server"
	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// hangingGetStore is a Memory store whose Get hangs (until its context
// ends) once hang is set, as a store that stopped answering does; it
// counts the Gets made while hanging.
type hangingGetStore struct {
	*sessionstore.Memory
	hang  atomic.Bool
	calls atomic.Int64
}

func (s *hangingGetStore) Get(ctx context.Context, id string) (sessionstore.Record, error) {
	if !s.hang.Load() {
		return s.Memory.Get(ctx, id)
	}
	s.calls.Add(1)
	<-ctx.Done()
	return sessionstore.Record{}, ctx.Err()
}

// Concurrent readiness probes while the store hangs share one question to
// it: a burst of probes (many load balancers, or anyone who can reach the
// listener) does not become a burst of store calls, each holding one of
// the store's connections for the whole check timeout, while the store is
// already in trouble. Each probe still answers 503 "store unreachable".
func TestConcurrentReadinessProbesShareOneStoreCall(t *testing.T) {
	const probes = 16
	store := &hangingGetStore{Memory: sessionstore.NewMemory(time.Now)}
	srv := newServer(t, server.WithSessionStore(store), server.WithHealthPaths("/readyz", "/livez"))
	base, _ := serve(t, srv)
	c := httpClient(t)
	ctx := testutil.Context(t, wait)
	testutil.Eventually(t, wait, "ready", func() bool {
		code, _ := probe(ctx, t, c, base+"/readyz")
		return code == http.StatusOK
	})
	store.hang.Store(true)
	var wg sync.WaitGroup
	codes := make([]int, probes)
	states := make([]string, probes)
	for i := range probes {
		wg.Go(func() { codes[i], states[i] = probe(ctx, t, c, base+"/readyz") })
	}
	wg.Wait()
	for i := range probes {
		if codes[i] != http.StatusServiceUnavailable || states[i] != "store unreachable" {
			t.Errorf("probe %d: %d %q, want 503 \"store unreachable\"", i, codes[i], states[i])
		}
	}
	if n := store.calls.Load(); n > probes/4 {
		t.Errorf("%d concurrent probes made %d store calls, want them to share one (at most %d)", probes, n, probes/4)
	}
}

// lockedBuffer is a bytes.Buffer safe for the handler's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// A store that hangs (no answer at all, no error of its own within the
// check's bound: a hung Redis under redisstore's default 2 s OpTimeout)
// turns readiness 503, and is logged as the outage it is, once, at Warn,
// even when readiness probes are all that asks it (an idle replica).
func TestHangingStoreSeenByReadinessIsLogged(t *testing.T) {
	var logs lockedBuffer
	store := &hangingGetStore{Memory: sessionstore.NewMemory(time.Now)}
	srv := newServer(t, server.WithSessionStore(store), server.WithHealthPaths("/readyz", "/livez"),
		server.WithStreamableHTTPLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	base, _ := serve(t, srv)
	c := httpClient(t)
	ctx := testutil.Context(t, wait)
	expectProbe(ctx, t, c, base+"/readyz", http.StatusOK, "ready")
	store.hang.Store(true)
	expectProbe(ctx, t, c, base+"/readyz", http.StatusServiceUnavailable, "store unreachable")
	expectProbe(ctx, t, c, base+"/readyz", http.StatusServiceUnavailable, "store unreachable")
	out := logs.String()
	if n := strings.Count(out, "store is unreachable"); n != 1 || !strings.Contains(out, "level=WARN") {
		t.Fatalf("the outage readiness saw was logged %d times, want once at Warn:\n%s", n, out)
	}
	store.hang.Store(false)
	expectProbe(ctx, t, c, base+"/readyz", http.StatusOK, "ready")
	if out := logs.String(); !strings.Contains(out, "store answers again") {
		t.Fatalf("the outage's end was not logged:\n%s", out)
	}
}
