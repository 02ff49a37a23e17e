package streamable_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
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
	log := &batchLog{MemoryEventLog: sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})}
	resumeFromPriming(t, streamable.Config{EventLog: log})
	calls := log.recorded()
	if len(calls) == 0 || len(calls[0]) < 2 || calls[0][0] != 0 {
		t.Fatalf("the response's store calls, by message size: %v; want the first to hold the priming event (0 bytes) and progress 1", calls)
	}
}
