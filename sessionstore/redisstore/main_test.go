package redisstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait: a broken store fails a test, it does not hang it.
const wait = 5 * time.Second

// prefix is the key prefix of the stores in these tests.
const prefix = "test:"

// env is one redis-server with a raw client to inspect it.
type env struct {
	addr string
	raw  *redis.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	t.Parallel()
	addr := testutil.StartRedis(t)
	return &env{addr: addr, raw: newClient(t, addr)}
}

func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// store returns a Store on its own client; both are closed with the test.
func (e *env) store(t *testing.T, opts redisstore.Options) *redisstore.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = prefix
	}
	s := redisstore.New(newClient(t, e.addr), opts)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func wantErr(t *testing.T, what string, got, want error) {
	t.Helper()
	if want == nil && got != nil || want != nil && !errors.Is(got, want) {
		t.Fatalf("%s: err = %v, want %v", what, got, want)
	}
}

func mustCreate(t *testing.T, s *redisstore.Store, id string, ttl time.Duration) {
	t.Helper()
	wantErr(t, "Create "+id, s.Create(t.Context(), sessionstore.Record{ID: id, ProtocolVersion: "v1"}, ttl), nil)
}

func wantGet(t *testing.T, s *redisstore.Store, id string, want error) sessionstore.Record {
	t.Helper()
	rec, err := s.Get(t.Context(), id)
	wantErr(t, "Get "+id, err, want)
	return rec
}

// gone reports whether Get says the session does not exist.
func gone(t *testing.T, s *redisstore.Store, id string) func() bool {
	return func() bool {
		_, err := s.Get(t.Context(), id)
		return errors.Is(err, sessionstore.ErrNotFound)
	}
}

func acquire(t *testing.T, s *redisstore.Store, id, holder string, ttl time.Duration, want error) sessionstore.Lease {
	t.Helper()
	l, err := s.AcquireStream(t.Context(), id, holder, ttl)
	wantErr(t, fmt.Sprintf("AcquireStream(%s, %s)", id, holder), err, want)
	return l
}

func renew(t *testing.T, s *redisstore.Store, l sessionstore.Lease, ttl time.Duration, want error) sessionstore.Lease {
	t.Helper()
	r, err := s.RenewStream(t.Context(), l, ttl)
	wantErr(t, fmt.Sprintf("RenewStream(%+v)", l), err, want)
	return r
}

func wantHolder(t *testing.T, s *redisstore.Store, id, want string) {
	t.Helper()
	l, ok, err := s.StreamHolder(t.Context(), id)
	if err != nil || ok != (want != "") || l.Holder != want {
		t.Fatalf("StreamHolder(%s) = %+v, %v, %v; want holder %q", id, l, ok, err, want)
	}
}

func wantCount(t *testing.T, s *redisstore.Store, want int) {
	t.Helper()
	if n, err := s.Count(t.Context()); err != nil || n != want {
		t.Fatalf("Count = %d, %v; want %d", n, err, want)
	}
}

// within fails unless lo-slack <= got <= hi+slack; slack covers the
// server clock's millisecond resolution.
func within(t *testing.T, what string, got, lo, hi time.Time) {
	t.Helper()
	const slack = 2 * time.Millisecond
	if got.Before(lo.Add(-slack)) || got.After(hi.Add(slack)) {
		t.Fatalf("%s = %v, want within [%v, %v]", what, got, lo, hi)
	}
}

// pttl returns the remaining ttl of a raw key (-1: none, -2: no key).
func (e *env) pttl(t *testing.T, key string) time.Duration {
	t.Helper()
	d, err := e.raw.PTTL(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("PTTL %s: %v", key, err)
	}
	return d
}

func (e *env) exists(t *testing.T, key string) bool {
	t.Helper()
	n, err := e.raw.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

func subscribe(t *testing.T, s *redisstore.Store, id string) sessionstore.Subscription {
	t.Helper()
	sub, err := s.Subscribe(t.Context(), id)
	wantErr(t, "Subscribe "+id, err, nil)
	t.Cleanup(func() { sub.Close() })
	return sub
}

func publish(t *testing.T, s *redisstore.Store, id, msg string) {
	t.Helper()
	wantErr(t, fmt.Sprintf("Publish(%s, %q)", id, msg), s.Publish(t.Context(), id, []byte(msg)), nil)
}

// next waits for sub's next message.
func next(t *testing.T, sub sessionstore.Subscription) string {
	t.Helper()
	select {
	case msg, ok := <-sub.Messages():
		if !ok {
			t.Fatal("subscription closed; want a message")
		}
		return string(msg)
	case <-time.After(wait):
		t.Fatalf("no message within %v", wait)
	}
	return ""
}

// closed waits for sub's channel to close, with no message before.
func closed(t *testing.T, sub sessionstore.Subscription) {
	t.Helper()
	select {
	case msg, ok := <-sub.Messages():
		if ok {
			t.Fatalf("message %q; want the subscription closed", msg)
		}
	case <-time.After(wait):
		t.Fatalf("subscription not closed within %v", wait)
	}
}

// buffered reads what sub holds now without waiting, then checks that
// the channel is closed if it must be, or holds nothing more.
func buffered(t *testing.T, sub sessionstore.Subscription, wantClosed bool) (got []string) {
	t.Helper()
	for {
		select {
		case msg, ok := <-sub.Messages():
			if !ok {
				if !wantClosed {
					t.Fatalf("subscription closed after %v", got)
				}
				return got
			}
			got = append(got, string(msg))
		default:
			if wantClosed {
				t.Fatalf("subscription still open after %v", got)
			}
			return got
		}
	}
}

// holds polls until cond holds, bounded by wait.
func holds(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, wait, what, cond)
}

// awaitDialProbers makes the test, when it ends, wait for go-redis's dial
// probers to exit. After failed dials a client probes the server once a
// second until it answers or the client is closed, so a prober outlives
// its closed client by up to a second, longer than goleak waits. Call it
// before creating clients: cleanups run last first.
func awaitDialProbers(t *testing.T) {
	t.Cleanup(func() {
		testutil.Eventually(t, 2*wait, "go-redis's dial probers to exit", func() bool {
			buf := make([]byte, 1<<20)
			return !bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("(*ConnPool).tryDial"))
		})
	})
}

// canceled returns an already canceled context.
func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
