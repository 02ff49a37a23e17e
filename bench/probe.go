package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"time"
)

// ProcStats is what a probe reads of the process a server runs in:
// goroutines, heap (HeapAlloc after two GCs), goroutine stacks
// (StackInuse), resident set, and CPU time (user and system) with when it
// was read, before the GCs (CPU, At) and after them (SettledCPU,
// SettledAt), so that a window between two probes counts neither's GCs.
type ProcStats struct {
	Goroutines int
	Heap       uint64
	Stack      uint64
	// StackUnsettled is StackInuse before the GCs (which shrink the
	// stacks of goroutines that use a quarter of theirs or less): what
	// the stacks take between collections.
	StackUnsettled uint64
	RSS            float64
	CPU            time.Duration
	At             time.Time
	SettledCPU     time.Duration
	SettledAt      time.Time
}

// Probe reads the ProcStats of the process the measured server runs in.
type Probe func() (ProcStats, error)

// LocalProbe reads this process's ProcStats.
func LocalProbe() (ProcStats, error) {
	st := ProcStats{CPU: cpuTime(), At: time.Now()}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	st.StackUnsettled = ms.StackInuse
	st.Goroutines, st.Heap, st.Stack = settle()
	st.RSS = rss()
	st.SettledCPU, st.SettledAt = cpuTime(), time.Now()
	return st, nil
}

// StatsHandler serves LocalProbe's ProcStats as JSON, for a RemoteProbe
// in another process.
func StatsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		st, _ := LocalProbe()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
}

// RemoteProbe reads the ProcStats a StatsHandler serves at url, each read
// bounded by 30 s.
func RemoteProbe(url string) Probe {
	return func() (ProcStats, error) {
		var st ProcStats
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return st, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return st, fmt.Errorf("read the server's stats: %w", err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return st, fmt.Errorf("read the server's stats: status %d", resp.StatusCode)
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return st, fmt.Errorf("decode the server's stats: %w", err)
		}
		return st, nil
	}
}
