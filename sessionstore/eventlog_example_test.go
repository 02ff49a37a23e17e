package sessionstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// A stream's events are logged as they are sent; a client that comes back
// with the id of the last event it got is sent what followed, on that
// stream only; once the session is purged its ids are unknown.
func ExampleMemoryEventLog() {
	ctx := context.Background()
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})

	first, _ := log.StoreEvent(ctx, "session-1", "post-7", json.RawMessage(`{"progress":1}`))
	_, _ = log.StoreEvent(ctx, "session-1", "listen", json.RawMessage(`{"method":"notifications/tools/list_changed"}`))
	_, _ = log.StoreEvent(ctx, "session-1", "post-7", json.RawMessage(`{"result":{}}`))

	stream, err := log.ReplayEventsAfter(ctx, "session-1", first, func(id string, msg json.RawMessage) error {
		fmt.Printf("replay %s\n", msg)
		return nil
	})
	fmt.Println("stream:", stream, err)

	_ = log.PurgeSession(ctx, "session-1")
	_, err = log.ReplayEventsAfter(ctx, "session-1", first, nil)
	fmt.Println("after purge, unknown:", errors.Is(err, sessionstore.ErrUnknownEventID))
	// Output:
	// replay {"result":{}}
	// stream: post-7 <nil>
	// after purge, unknown: true
}
