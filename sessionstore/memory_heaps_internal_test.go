package sessionstore

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A record terminated or removed before its expiry leaves its entry in the
// expiry heap; the heaps are compacted once such entries outnumber the
// live ones, so a client looping initialize + DELETE (or refused
// initializes) cannot grow them without bound.
func TestDueHeapsBoundedAfterTerminateAndRemove(t *testing.T) {
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
