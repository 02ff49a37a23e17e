package sessionstore

import (
	"container/heap"
	"time"
)

// sweepBudget is how many due entries one Create, Terminate or Remove
// examines: each adds at most one, so the sweep keeps up with them.
const sweepBudget = 64

// Sweep drops every record and tombstone of m that has lapsed, closing the
// subscriptions of the records. Memory also sweeps a little on its own
// (see Memory); Sweep is for a caller that wants it all done now, such as a
// transport's periodic sweeper.
func (m *Memory) Sweep() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(m.now(), -1)
}

// scheduleLive makes sure liveDue holds a time no later than e's expiry.
// A Touch that moves the expiry later adds nothing: the sweep finds the old
// time first and moves it on. Callers hold m.mu.
func (m *Memory) scheduleLive(id string, e *memoryEntry) {
	at := e.rec.ExpiresAt
	if at.IsZero() || !e.due.IsZero() && !at.Before(e.due) {
		return
	}
	e.due = at
	heap.Push(&m.liveDue, due{at: at, id: id})
}

// addTomb records id's tombstone, forgetting the ones closest to lapsing
// past MemoryTombstones. Callers hold m.mu.
func (m *Memory) addTomb(id string, at time.Time) {
	m.tombs[id] = at
	m.tombsPeak = max(m.tombsPeak, len(m.tombs))
	heap.Push(&m.tombDue, due{at: at, id: id})
	for len(m.tombs) > MemoryTombstones && m.tombDue.Len() > 0 {
		d := heap.Pop(&m.tombDue).(due)
		if cur, ok := m.tombs[d.id]; ok && cur.Equal(d.at) {
			delete(m.tombs, d.id)
		}
	}
}

// sweepLocked drops what lapsed by now, examining at most budget due
// entries (all of them when budget < 0). Callers hold m.mu.
func (m *Memory) sweepLocked(now time.Time, budget int) {
	for budget != 0 && m.tombDue.Len() > 0 && lapsed(now, m.tombDue[0].at) {
		budget--
		d := heap.Pop(&m.tombDue).(due)
		if cur, ok := m.tombs[d.id]; ok && cur.Equal(d.at) {
			delete(m.tombs, d.id)
		}
	}
	for budget != 0 && m.liveDue.Len() > 0 && lapsed(now, m.liveDue[0].at) {
		budget--
		d := heap.Pop(&m.liveDue).(due)
		e, ok := m.sessions[d.id]
		if !ok || !e.due.Equal(d.at) {
			continue // the record is gone, or has an earlier entry
		}
		e.due = time.Time{}
		if lapsed(now, e.rec.ExpiresAt) {
			m.drop(d.id, e)
			continue
		}
		m.scheduleLive(d.id, e) // touched since: due again at its new expiry
	}
	m.compact()
	m.shrink()
}

// compact drops the heap entries of records and tombstones that are gone
// (a record terminated or removed before its expiry leaves its entry, a
// tombstone removed or forgotten leaves its own), once they outnumber the
// live ones: so the heaps stay within twice what the store holds, plus a
// little, at a cost amortised over the pushes that made them grow.
// Callers hold m.mu.
func (m *Memory) compact() {
	if m.liveDue.Len() > 2*len(m.sessions)+shrinkAbove {
		m.liveDue.keep(func(d due) bool {
			e, ok := m.sessions[d.id]
			return ok && e.due.Equal(d.at)
		})
	}
	if m.tombDue.Len() > 2*len(m.tombs)+shrinkAbove {
		m.tombDue.keep(func(d due) bool {
			at, ok := m.tombs[d.id]
			return ok && at.Equal(d.at)
		})
	}
}

// shrink gives back the memory of heaps that use under a quarter of their
// array, and of maps once they are empty after holding many entries (Go
// maps never shrink by themselves; a map is remade only when empty, so a
// store that stays busy keeps the map of its peak). Callers hold m.mu.
func (m *Memory) shrink() {
	if len(m.tombs) == 0 && m.tombsPeak > shrinkAbove {
		m.tombs, m.tombsPeak = make(map[string]time.Time), 0
	}
	if len(m.sessions) == 0 && m.sessionsPeak > shrinkAbove {
		m.sessions, m.sessionsPeak = make(map[string]*memoryEntry), 0
	}
	m.tombDue.shrink()
	m.liveDue.shrink()
}

// due is a time at which the entry named id may lapse.
type due struct {
	at time.Time
	id string
}

// dueHeap is a min-heap of due entries by time (container/heap).
type dueHeap []due

// shrinkAbove is the size below which shrink leaves maps and heaps alone.
const shrinkAbove = 64

// shrink reallocates h when it uses under a quarter of a large array.
func (h *dueHeap) shrink() {
	if c := cap(*h); c > shrinkAbove && len(*h) < c/4 {
		*h = append(make(dueHeap, 0, 2*len(*h)), *h...)
	}
}

// keep drops the entries for which live is false and restores the heap.
func (h *dueHeap) keep(live func(due) bool) {
	kept := (*h)[:0]
	for _, d := range *h {
		if live(d) {
			kept = append(kept, d)
		}
	}
	clear((*h)[len(kept):])
	*h = kept
	heap.Init(h)
}

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(due)) }
func (h *dueHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = due{}
	*h = old[:len(old)-1]
	return d
}
