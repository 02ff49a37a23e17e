package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// render is the report of a run: per peer, its totals over every phase;
// then, for the first peer against each other one, the median and range
// of the phase-by-phase ratios (each phase measures both, in turn).
func render(s settings, got [][]phase) string {
	var b strings.Builder
	era := "session era"
	if s.modern {
		era = "2026-07-28"
	}
	fmt.Fprintf(&b, "JSON tools/call, %s, %d sessions, %d phases of %v a peer; servers in this process, clients in a child\n\n", era, s.conc, len(got), s.dur)
	fmt.Fprintf(&b, "| peer | calls/s | server CPU a call | clients' CPU a call | server allocation a call |\n|---|---:|---:|---:|---:|\n")
	for i, name := range s.peers {
		var calls int
		var elapsed, server, client time.Duration
		var bytes, objects uint64
		for _, row := range got {
			calls += row[i].calls
			elapsed += row[i].elapsed
			server += row[i].server
			client += row[i].client
			bytes += row[i].allocBytes
			objects += row[i].allocObjects
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.2f µs | %.2f µs | %.0f B, %.1f objects |\n", name, rate(calls, elapsed),
			perCall(server, calls), perCall(client, calls), float64(bytes)/float64(calls), float64(objects)/float64(calls))
	}
	for j := 1; j < len(s.peers); j++ {
		var rates, server, client []float64
		for _, row := range got {
			a, o := row[0], row[j]
			rates = append(rates, rate(a.calls, a.elapsed)/rate(o.calls, o.elapsed))
			server = append(server, perCall(a.server, a.calls)/perCall(o.server, o.calls))
			client = append(client, perCall(a.client, a.calls)/perCall(o.client, o.calls))
		}
		fmt.Fprintf(&b, "\n%s against %s, the median of %d phases' ratios (range): calls/s %s, server CPU a call %s, clients' CPU a call %s\n",
			s.peers[0], s.peers[j], len(got), spread(rates), spread(server), spread(client))
	}
	return b.String()
}

// spread is the median of v and its range, as "0.970x (0.91-1.02)".
func spread(v []float64) string {
	v = slices.Clone(v)
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return fmt.Sprintf("%.3fx (%.2f-%.2f)", m, v[0], v[len(v)-1])
}
