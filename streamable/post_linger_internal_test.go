package streamable

import (
	"testing"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// The linger a Handler gives its responses is the log's: localLinger on
// the process's own log (the default), openLinger on any other.
func TestLingerIsTheLogs(t *testing.T) {
	other := struct{ sessionstore.EventLog }{sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})}
	for _, c := range []struct {
		name string
		log  sessionstore.EventLog
		want any
	}{
		{"default", nil, localLinger},
		{"memory", sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{}), localLinger},
		{"another process's", other, openLinger},
	} {
		h := New(demotools.NewServer("linger", "1"), Config{EventLog: c.log, HeartbeatInterval: Disabled})
		if h.openLinger != c.want {
			t.Errorf("%s log: linger %v, want %v", c.name, h.openLinger, c.want)
		}
		h.Close()
	}
}
