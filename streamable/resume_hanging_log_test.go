package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// hangingLog is an event log whose StoreEvent hangs until its context
// ends or the test releases it: a log whose backend stopped answering,
// with no timeout of its own.
type hangingLog struct {
	entered chan struct{}
	once    sync.Once
	release chan struct{}
}

func (l *hangingLog) StoreEvent(ctx context.Context, _, _ string, _ json.RawMessage) (string, error) {
	l.once.Do(func() { close(l.entered) })
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-l.release:
		return "", context.Canceled
	}
}

func (l *hangingLog) ReplayEventsAfter(ctx context.Context, _, _ string, _ func(string, json.RawMessage) error) (string, error) {
	return "", context.Canceled
}

func (l *hangingLog) PurgeSession(context.Context, string) error { return nil }

// A log whose StoreEvent hangs never holds the GET handler past DELETE:
// recording is bounded by WriteTimeout and cut short when the session
// ends, and the message then goes without an id.
func TestHangingEventLogDoesNotHoldTheGetHandlerPastDelete(t *testing.T) {
	log := &hangingLog{entered: make(chan struct{}), release: make(chan struct{})}
	r := newRig(t, streamable.Config{EventLog: log, HeartbeatInterval: streamable.Disabled,
		CleanupTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { close(log.release) }) // before the rig's Shutdown: no goroutine outlives the test
	ctx := testutil.Context(t, wait)
	c := r.client()
	initializeAt(t, c, "2025-06-18") // no priming event: the first StoreEvent is the notification's
	r.stream(c)
	notify(t, r, c.SessionID, "one")
	select {
	case <-log.entered:
	case <-ctx.Done():
		t.Fatal("the stream never recorded the notification")
	}
	resp, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	// Bounded poll: well past CleanupTimeout and WriteTimeout.
	deadline := time.Now().Add(3 * time.Second)
	for r.h.Stats().GetStreams != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("3 s after DELETE (cleanup timeout 200 ms) the GET handler still runs, blocked in StoreEvent")
		}
		time.Sleep(10 * time.Millisecond) // spacing the samples of a bounded poll
	}
}
