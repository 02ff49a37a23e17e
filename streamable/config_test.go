package streamable_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestInjectedSessionIDGeneratorAndStore(t *testing.T) {
	var n atomic.Int64
	store := &countingStore{Store: sessionstore.NewMemory(nil)}
	r := newRig(t, streamable.Config{
		NewSessionID: func() string { return fmt.Sprintf("test-session-%d", n.Add(1)) },
		Store:        store,
	})
	c := r.session()
	if c.SessionID != "test-session-1" {
		t.Fatalf("session id %q, want the injected generator's", c.SessionID)
	}
	if store.creates.Load() != 1 {
		t.Fatalf("store Create calls: %d, want 1", store.creates.Load())
	}
	if _, err := c.Delete(testutil.Context(t, wait)); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Get(context.Background(), c.SessionID); err != sessionstore.ErrTerminated {
		t.Fatalf("store after DELETE: %v, want ErrTerminated", err)
	}
}

func TestInvalidGeneratedSessionIDIsRefused(t *testing.T) {
	r := newRig(t, streamable.Config{NewSessionID: func() string { return "has space" }})
	c := r.client()
	resp, err := c.Call(testutil.Context(t, wait), "initialize", map[string]any{
		"protocolVersion": testutil.ProtocolVersion, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "x", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "initialize", resp.Status, http.StatusInternalServerError, resp.Body, "visible ASCII")
	if r.h.Stats().Sessions != 0 {
		t.Fatal("a session was created with an invalid id")
	}
}

func TestSessionIsRegisteredBeforeInitializeAnswers(t *testing.T) {
	var registered atomic.Int64
	r := newRig(t, streamable.Config{}, func(s *server.MCPServer) {
		hooks := &server.Hooks{}
		hooks.AddOnRegisterSession(func(context.Context, server.ClientSession) { registered.Add(1) })
		server.WithHooks(hooks)(s)
	})
	r.session()
	if registered.Load() != 1 {
		t.Fatalf("register hook ran %d times by the time initialize answered, want 1", registered.Load())
	}
}

func TestShutdownUnregistersEverySessionOnce(t *testing.T) {
	var unregistered atomic.Int64
	r := newRig(t, streamable.Config{}, countUnregisters(&unregistered))
	for range 5 {
		r.stream(r.session())
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := r.h.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.h.Shutdown(ctx); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	if unregistered.Load() != 5 {
		t.Fatalf("unregister hooks: %d, want 5", unregistered.Load())
	}
}

// countingStore counts Create calls on a wrapped store.
type countingStore struct {
	sessionstore.Store
	creates atomic.Int64
}

func (s *countingStore) Create(ctx context.Context, rec sessionstore.Record, ttl time.Duration) error {
	s.creates.Add(1)
	return s.Store.Create(ctx, rec, ttl)
}
