package redisstore

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// OpTimeout bounds every call "on top of the caller's context", and a
// CheckLive on its own returns when its context ends. One that starts a
// batch (every slot taken: a Redis that is slow to answer) returns when
// its context ends too, 50 ms in, not when the batch, on a goroutine of
// its own, ends within OpTimeout.
func TestReviewCheckLiveInABatchReturnsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	const opTimeout = 2 * time.Second
	rs := testutil.StartRedisServer(t)
	c := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	defer c.Close()
	s := New(c, Options{Prefix: "review:", OpTimeout: opTimeout})
	defer s.Close()
	if err := s.Create(t.Context(), sessionstore.Record{ID: "a", ProtocolVersion: "v1"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := rs.Pause(); err != nil { // Redis stops answering
		t.Fatal(err)
	}
	var resumeOnce sync.Once
	resume := func() {
		resumeOnce.Do(func() {
			if err := rs.Resume(); err != nil {
				t.Error(err)
			}
		})
	}
	defer resume()

	// maxLiveChecks checks take every slot, each waiting on Redis.
	var alone sync.WaitGroup
	for range maxLiveChecks {
		alone.Add(1)
		go func() {
			defer alone.Done()
			_ = s.CheckLive(context.Background(), "a")
		}()
	}
	testutil.Eventually(t, opTimeout/2, "every slot taken", func() bool { return len(s.checks.slots) == maxLiveChecks })

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.CheckLive(ctx, "a") // starts a batch
	took := time.Since(start)
	resume()
	alone.Wait()
	if err == nil {
		t.Fatal("CheckLive answered while Redis was stopped")
	}
	if took > 500*time.Millisecond {
		t.Fatalf("a CheckLive whose context ended after 50 ms returned after %v (OpTimeout %v): %v", took, opTimeout, err)
	}
}
