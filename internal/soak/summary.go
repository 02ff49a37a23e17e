package soak

import (
	"fmt"
	"strings"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// Figures are the replicas' goroutines and heap (HeapAlloc after a GC),
// summed over the replicas.
type Figures struct {
	Goroutines int
	HeapAlloc  uint64
}

// Summary is what a Run saw: the clients' counts summed, the faults made,
// and the replicas' figures at the start and at the end (after the
// clients' sessions were deleted).
type Summary struct {
	Options Options
	testutil.ResumingStats
	ProxyCuts                  int64
	Kills, Drains, FaultErrors int
	Start, End                 Figures
}

func (s *Summary) add(st testutil.ResumingStats) {
	s.Calls += st.Calls
	s.Failures += st.Failures
	s.Hung += st.Hung
	s.Retries += st.Retries
	s.Reinits += st.Reinits
	s.Resumes += st.Resumes
	s.Reconnects += st.Reconnects
	s.NotesSent += st.NotesSent
	s.NotesReceived += st.NotesReceived
	s.NotesLost += st.NotesLost
	s.NotesDuplicated += st.NotesDuplicated
	s.NotesUnexpected += st.NotesUnexpected
	s.NotesRefused += st.NotesRefused
}

// OK reports whether nothing was lost, duplicated, refused, hung or
// failed.
func (s Summary) OK() bool {
	return s.NotesLost == 0 && s.NotesDuplicated == 0 && s.NotesRefused == 0 && s.Hung == 0 && s.Failures == 0
}

// String is the one summary line.
func (s Summary) String() string {
	o := s.Options
	store := "redis"
	if o.Memory {
		store = "memory"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "lifeline-soak: replicas=%d store=%s clients=%d duration=%v cuts=%s kills=%s drains=%s",
		o.Replicas, store, o.Clients, o.Duration, onOff(o.Cuts), onOff(o.Kills), onOff(o.Drains))
	fmt.Fprintf(&b, " | calls=%d failures=%d hung=%d retries=%d reinits=%d post_resumes=%d get_reconnects=%d",
		s.Calls, s.Failures, s.Hung, s.Retries, s.Reinits, s.Resumes, s.Reconnects)
	fmt.Fprintf(&b, " | notifications sent=%d received=%d lost=%d duplicated=%d unexpected=%d refused=%d",
		s.NotesSent, s.NotesReceived, s.NotesLost, s.NotesDuplicated, s.NotesUnexpected, s.NotesRefused)
	fmt.Fprintf(&b, " | faults proxy_cuts=%d kills=%d drains=%d fault_errors=%d",
		s.ProxyCuts, s.Kills, s.Drains, s.FaultErrors)
	fmt.Fprintf(&b, " | replicas goroutines=%d->%d heap=%.1fMiB->%.1fMiB",
		s.Start.Goroutines, s.End.Goroutines, mib(s.Start.HeapAlloc), mib(s.End.HeapAlloc))
	return b.String()
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }
