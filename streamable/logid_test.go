package streamable_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// lockedBuffer is a bytes.Buffer safe for the handler's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Session ids are credentials: logs name a session by a digest of its id.
func TestLogsNeverHoldASessionID(t *testing.T) {
	var logs lockedBuffer
	r := newRig(t, streamable.Config{IdleTTL: testIdleTTL,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	c := r.session()
	testutil.Eventually(t, wait, "the idle session to expire", func() bool {
		return strings.Contains(logs.String(), "session expired")
	})
	sum := sha256.Sum256([]byte(c.SessionID))
	digest := hex.EncodeToString(sum[:6])
	out := logs.String()
	if strings.Contains(out, c.SessionID) {
		t.Fatalf("the session id %s is in the logs:\n%s", c.SessionID, out)
	}
	if !strings.Contains(out, "session="+digest) {
		t.Fatalf("the expiry line does not name the session by its digest %s:\n%s", digest, out)
	}
}
