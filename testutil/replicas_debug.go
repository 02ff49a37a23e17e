package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// ReplicaProfile is what a replica's /debug/pprof/ reports about itself.
type ReplicaProfile struct {
	Goroutines int    // "goroutine profile: total N"
	HeapAlloc  uint64 // runtime.MemStats.HeapAlloc as of the heap profile
}

// Profile reads replica i's goroutine count and HeapAlloc from
// /debug/pprof/goroutine?debug=1 and /debug/pprof/heap?gc=1&debug=1 (the
// rig runs every replica with -debug); the replica runs a GC before it
// reports its heap.
func (r *Replicas) Profile(ctx context.Context, i int) (ReplicaProfile, error) {
	var out ReplicaProfile
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	err := pprofLines(ctx, hc, r.Base(i)+"/debug/pprof/goroutine?debug=1", func(line string) bool {
		if v, ok := strings.CutPrefix(line, "goroutine profile: total "); ok {
			out.Goroutines, _ = strconv.Atoi(strings.TrimSpace(v))
			return true
		}
		return false
	})
	if err != nil {
		return out, fmt.Errorf("replica %d: %w", i, err)
	}
	err = pprofLines(ctx, hc, r.Base(i)+"/debug/pprof/heap?gc=1&debug=1", func(line string) bool {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			out.HeapAlloc, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return true
		}
		return false
	})
	if err != nil {
		return out, fmt.Errorf("replica %d: %w", i, err)
	}
	return out, nil
}

// pprofLines GETs url and feeds each line of the answer to found until it
// returns true; it fails if none did.
func pprofLines(ctx context.Context, hc *http.Client, url string, found func(string) bool) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read %s: status %d (is the replica run with -debug?)", url, resp.StatusCode)
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 64<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if found(sc.Text()) {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", url, err)
	}
	return fmt.Errorf("read %s: the figure is not in the answer", url)
}
