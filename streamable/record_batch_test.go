package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// batchLog is a sessionstore.EventBatchLog on the memory log that records,
// for every POST response stream, the size of each message of each store
// call, in order.
type batchLog struct {
	*sessionstore.MemoryEventLog
	mu    sync.Mutex
	calls [][]int
}

func (l *batchLog) note(stream string, msgs ...json.RawMessage) {
	if !strings.HasPrefix(stream, "p") {
		return
	}
	sizes := make([]int, len(msgs))
	for i, m := range msgs {
		sizes[i] = len(m)
	}
	l.mu.Lock()
	l.calls = append(l.calls, sizes)
	l.mu.Unlock()
}

func (l *batchLog) StoreEvent(ctx context.Context, sessionID, streamID string, msg json.RawMessage) (string, error) {
	l.note(streamID, msg)
	return l.MemoryEventLog.StoreEvent(ctx, sessionID, streamID, msg)
}

func (l *batchLog) StoreEvents(ctx context.Context, sessionID, streamID string, msgs []json.RawMessage) ([]string, error) {
	l.note(streamID, msgs...)
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		id, err := l.MemoryEventLog.StoreEvent(ctx, sessionID, streamID, m)
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

func (l *batchLog) recorded() [][]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]int(nil), l.calls...)
}

// With a log that records batches (the Redis log), a 2025-11-25 response
// that opens with a message records its priming event and that message in
// one call, one round trip where the log is remote, the priming event
// first; a client that got only the priming event resumes from it and is
// replayed everything after it, the answer included.
func TestResponseOpeningIsRecordedInOneCall(t *testing.T) {
	const steps = 3
	step := make(chan struct{}, 1)
	log := &batchLog{MemoryEventLog: sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})}
	// No heartbeat: nothing opens the response before the first message.
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, EventLog: log}, steppedTool(steps, step))
	c := r.client()
	initializeAt(t, c, "2025-11-25")
	ctx := testutil.Context(t, wait)
	step <- struct{}{} // progress 1 opens the response
	call := callStepped(t, ctx, c, 5)
	first, err := call.Next(ctx)
	if err != nil || !first.IsPriming() {
		t.Fatalf("first event %+v (%v), want the priming event", first, err)
	}
	pr := &postReader{t: t, ids: map[string]bool{}}
	pr.take(first)
	call.Close() // the connection drops after the priming event
	for range steps {
		select {
		case step <- struct{}{}:
		case <-ctx.Done():
			t.Fatal("the tool stopped taking steps once its stream was cut: the request was cancelled")
		}
	}
	resumed := openResume(t, c, pr.lastID)
	wantStatus(t, "GET resuming from the priming event", resumed.Status, http.StatusOK, resumed.Body)
	pr.until(ctx, resumed, -1)
	pr.check(steps, "5")

	calls := log.recorded()
	if len(calls) == 0 || len(calls[0]) < 2 || calls[0][0] != 0 {
		t.Fatalf("the response's store calls, by message size: %v; want the first to hold the priming event (0 bytes) and progress 1", calls)
	}
}
