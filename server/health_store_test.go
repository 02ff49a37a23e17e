package server_test

import (
	"context"
	"net/http"
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
