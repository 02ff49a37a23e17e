package sessionstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// REVIEW-2: a record that is terminated or removed leaves its liveDue entry
// in the heap until the record's expiry would have come. Tombstones are
// bounded (MemoryTombstones) but the heap behind the live records is not:
// a client looping initialize + DELETE (or refused initializes, Remove)
// grows it by one entry (and its id string) per session for IdleTTL.
func TestReview2LiveDueBoundedAfterTerminateAndRemove(t *testing.T) {
	ctx := context.Background()
	m := NewMemory(nil)
	const n = 3 * MemoryTombstones
	for i := range n {
		id := fmt.Sprintf("session-%08d", i)
		if err := m.Create(ctx, Record{ID: id}, 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := m.Terminate(ctx, id); err != nil {
				t.Fatal(err)
			}
		} else if err := m.Remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	m.Sweep()
	m.mu.Lock()
	live, tombs, liveDue, tombDue := len(m.sessions), len(m.tombs), m.liveDue.Len(), m.tombDue.Len()
	m.mu.Unlock()
	t.Logf("live=%d tombs=%d liveDue=%d tombDue=%d", live, tombs, liveDue, tombDue)
	if liveDue > live+MemoryTombstones {
		t.Fatalf("liveDue holds %d entries for %d live records: unbounded by anything but the create rate × TTL", liveDue, live)
	}
}
