package bench

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartCallers, when a session after the first fails to open, returns the
// error and ends the sessions it opened (a DELETE each), no more: the
// harness records the error and goes on.
func TestStartCallersEndsTheSessionsItOpened(t *testing.T) {
	var (
		mu      sync.Mutex
		inits   int
		deleted []string
	)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodDelete:
			deleted = append(deleted, r.Header.Get("Mcp-Session-Id"))
		case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "":
			w.WriteHeader(http.StatusAccepted) // notifications/initialized
		default: // initialize: the first two open a session, the third fails
			inits++
			if inits == 3 {
				http.Error(w, "refused", http.StatusInternalServerError)
				return
			}
			w.Header().Set("Mcp-Session-Id", "session-"+string(rune('0'+inits)))
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"x","version":"1"}}}`))
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	defer func() {
		_ = srv.Close()
		<-served
	}()
	url := "http://" + ln.Addr().String() + "/mcp"
	c, err := StartCallers(&Peer{Name: "test", URL: url, JSONURL: url, Sessions: true}, 5, false)
	if err == nil {
		c.Close()
		t.Fatal("StartCallers succeeded against a server refusing the third session")
	}
	if !strings.Contains(err.Error(), "status 500") {
		t.Errorf("StartCallers: %v, want the refusal's status", err)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(deleted)
	if inits != 3 || !slices.Equal(deleted, []string{"session-1", "session-2"}) {
		t.Errorf("%d initializes, DELETEs for %q; want 3, and the two sessions opened", inits, deleted)
	}
}
