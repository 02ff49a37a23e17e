package sessionstore_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// A session's life in the in-memory store: create it, let one replica hold
// its standalone stream while another is refused, hand the stream over, and
// terminate the session.
func ExampleMemory() {
	ctx := context.Background()
	store := sessionstore.NewMemory(nil)

	rec := sessionstore.Record{ID: "session-1", ProtocolVersion: "2025-06-18"}
	if err := store.Create(ctx, rec, 30*time.Minute); err != nil {
		fmt.Println("create:", err)
		return
	}
	got, err := store.Get(ctx, "session-1")
	fmt.Println("get:", got.ID, got.ProtocolVersion, err)

	lease, err := store.AcquireStream(ctx, "session-1", "replica-a", time.Minute)
	fmt.Println("replica-a acquires:", lease.Holder, err)
	held, err := store.AcquireStream(ctx, "session-1", "replica-b", time.Minute)
	fmt.Println("replica-b refused:", errors.Is(err, sessionstore.ErrStreamHeld), "- held by", held.Holder)

	fmt.Println("replica-a releases:", store.ReleaseStream(ctx, lease))
	lease, err = store.AcquireStream(ctx, "session-1", "replica-b", time.Minute)
	fmt.Println("replica-b acquires:", lease.Holder, err)

	fmt.Println("terminate:", store.Terminate(ctx, "session-1"))
	_, err = store.Get(ctx, "session-1")
	fmt.Println("get after terminate:", errors.Is(err, sessionstore.ErrTerminated))

	// Output:
	// get: session-1 2025-06-18 <nil>
	// replica-a acquires: replica-a <nil>
	// replica-b refused: true - held by replica-a
	// replica-a releases: <nil>
	// replica-b acquires: replica-b <nil>
	// terminate: <nil>
	// get after terminate: true
}
