package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// The -modern mode measures protocol 2026-07-28 (sessionless) side by side
// with stock mcp-go's own 2026-07-28 path and with the session era:
// tools/call throughput in interleaved rounds, progress notifications lost
// at 64-way concurrency, and idle subscriptions/listen streams (each peer in
// its own child process).

// modernSettings are the -modern mode's sizes.
type modernSettings struct {
	rounds       int
	roundDur     time.Duration
	maxReq       int
	progressN    int           // calls of the progress-loss measurement
	progressConc int           // its concurrent callers
	progressCap  time.Duration // and its time bound
	listenN      int           // idle listen streams
	cpuWindow    time.Duration
	heartbeat    time.Duration
	writeTime    time.Duration
}

// eraVariant is one column of the modern tables: a peer spoken to in one
// era.
type eraVariant struct {
	label string
	peer  string
	new   bool // 2026-07-28
}

// eraVariants are the columns, in rotation order.
var eraVariants = []eraVariant{
	{"lifeline 2026-07-28", bench.Lifeline, true},
	{"stock 2026-07-28", bench.MCPGo, true},
	{"lifeline 2025-11-25", bench.Lifeline, false},
	{"stock 2025-11-25", bench.MCPGo, false},
}

// modernCells are the throughput cells, in report order.
var modernCells = []struct {
	sse  bool
	conc int
}{{false, 1}, {false, 16}, {false, 64}, {true, 1}, {true, 16}, {true, 64}}

// modernResult is what runModern measured.
type modernResult struct {
	// rps[cell][variant] holds one req/s per round that measured it.
	rps      map[string]map[string][]float64
	rounds   []map[string]map[string]float64 // per round: cell -> variant -> req/s
	progress map[string]bench.Throughput     // per variant
	listen   map[string]bench.Idle           // lifeline, mcp-go listen; plain GET
	errs     []string
}

// runModern runs the -modern mode.
func runModern(ms modernSettings) *modernResult {
	res := &modernResult{rps: map[string]map[string][]float64{}, progress: map[string]bench.Throughput{}, listen: map[string]bench.Idle{}}
	opts := bench.Options{Heartbeat: ms.heartbeat, WriteTimeout: ms.writeTime}
	servers := map[string]*bench.Peer{}
	for _, name := range []string{bench.Lifeline, bench.MCPGo} {
		p, err := bench.StartPeer(name, opts)
		if err != nil {
			res.errs = append(res.errs, fmt.Sprintf("starting %s: %v", name, err))
			return res
		}
		defer p.Close()
		servers[name] = p
	}
	peerOf := func(v eraVariant) *bench.Peer { return servers[v.peer].InEra(v.new) }
	for r := range ms.rounds {
		round := map[string]map[string]float64{}
		for _, cell := range modernCells {
			key := thrKey(cell.sse, cell.conc)
			round[key] = map[string]float64{}
			if res.rps[key] == nil {
				res.rps[key] = map[string][]float64{}
			}
			for i := range eraVariants {
				v := eraVariants[(r+i)%len(eraVariants)]
				t, err := bench.MeasureThroughput(peerOf(v), cell.conc, cell.sse, ms.roundDur, ms.maxReq)
				if err != nil {
					res.errs = append(res.errs, fmt.Sprintf("round %d %s %s: %v", r+1, key, v.label, err))
					continue
				}
				if t.Errors > t.Short {
					res.errs = append(res.errs, fmt.Sprintf("round %d %s %s: %d errors, first: %s", r+1, key, v.label, t.Errors, t.FirstEr))
				}
				round[key][v.label] = t.RPS
				res.rps[key][v.label] = append(res.rps[key][v.label], t.RPS)
				logf("round %d/%d %-7s %-20s %8.0f req/s p50 %v p99 %v errors %d", r+1, ms.rounds, key, v.label, t.RPS, t.Lat.P50, t.Lat.P99, t.Errors)
			}
		}
		res.rounds = append(res.rounds, round)
	}
	for _, v := range eraVariants {
		t, err := bench.MeasureThroughput(peerOf(v), ms.progressConc, true, ms.progressCap, ms.progressN)
		if err != nil {
			res.errs = append(res.errs, fmt.Sprintf("progress %s: %v", v.label, err))
			continue
		}
		res.progress[v.label] = t
		logf("progress %-20s %d calls answered, %d short, %d of %d notifications lost, other errors %d",
			v.label, t.Lat.N+t.Short, t.Short, t.Lost, 3*(t.Lat.N+t.Errors), t.Errors-t.Short)
	}
	for _, name := range []string{bench.Lifeline, bench.MCPGo, bench.Plain} {
		idle, err := measureIdleChild(name, name != bench.Plain, ms.listenN, ms.cpuWindow, ms.heartbeat, ms.writeTime)
		if err != nil {
			res.errs = append(res.errs, fmt.Sprintf("listen idle %s: %v", name, err))
			continue
		}
		res.listen[name] = idle
		logf("idle %-8s %d/%d streams: %.2f goroutines/stream %.0f B heap/stream %.0f B stack/stream %.2f CPU s/min",
			name, idle.Opened, idle.N, idle.GoroutinesPerStream, idle.HeapPerStream, idle.StackPerStream, idle.CPUPerMin)
	}
	return res
}

// ratios is variant a's req/s over variant b's in cell key, one per round
// that measured both.
func (m *modernResult) ratios(key, a, b string) []float64 {
	var out []float64
	for _, rd := range m.rounds {
		x, xok := rd[key][a]
		y, yok := rd[key][b]
		if xok && yok && y > 0 {
			out = append(out, x/y)
		}
	}
	return out
}

// ratioCell renders the median of rs and its range.
func ratioCell(rs []float64) string {
	if len(rs) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx (%.2f–%.2f)", median(rs), slices.Min(rs), slices.Max(rs))
}

// renderModern renders the -modern mode's result as markdown.
func renderModern(m *modernResult, ms modernSettings) string {
	var b strings.Builder
	fmt.Fprintf(&b, "tools/call req/s, median of %d interleaved rounds of %v per variant and cell (the starting variant rotating each round); "+
		"ratios are medians of per-round ratios (range in brackets).\n\n", ms.rounds, ms.roundDur)
	b.WriteString("| cell |")
	for _, v := range eraVariants {
		b.WriteString(" " + v.label + " |")
	}
	b.WriteString(" lifeline 2026 / stock 2026 | lifeline 2026 / lifeline 2025 |\n|---|")
	b.WriteString(strings.Repeat("---:|", len(eraVariants)+2) + "\n")
	for _, cell := range modernCells {
		key := thrKey(cell.sse, cell.conc)
		fmt.Fprintf(&b, "| %s |", key)
		for _, v := range eraVariants {
			if xs := m.rps[key][v.label]; len(xs) > 0 {
				fmt.Fprintf(&b, " %.0f |", median(xs))
			} else {
				b.WriteString(" n/a |")
			}
		}
		fmt.Fprintf(&b, " %s | %s |\n", ratioCell(m.ratios(key, eraVariants[0].label, eraVariants[1].label)),
			ratioCell(m.ratios(key, eraVariants[0].label, eraVariants[2].label)))
	}
	fmt.Fprintf(&b, "\nProgress notifications: %d calls of `bench_progress` (3 notifications each) at %d-way concurrency:\n\n", ms.progressN, ms.progressConc)
	b.WriteString("| variant | calls answered | calls short of a notification | notifications lost | other errors |\n|---|---:|---:|---:|---:|\n")
	for _, v := range eraVariants {
		t, ok := m.progress[v.label]
		if !ok {
			fmt.Fprintf(&b, "| %s | n/a | n/a | n/a | n/a |\n", v.label)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d of %d | %d |\n", v.label, t.Lat.N+t.Short, t.Short, t.Lost, 3*(t.Lat.N+t.Errors), t.Errors-t.Short)
	}
	fmt.Fprintf(&b, "\nIdle subscriptions/listen streams (%d, each on its own connection, acknowledgement read, then never read), "+
		"each peer in a fresh process; plain is net/http holding the same number of bare GETs (the baseline):\n\n", ms.listenN)
	b.WriteString("| peer | opened | goroutines / stream | heap / stream | beyond plain | goroutine stacks / stream | CPU s/min idle |\n|---|---:|---:|---:|---:|---:|---:|\n")
	plain, plainOK := m.listen[bench.Plain]
	for _, name := range []string{bench.Lifeline, bench.MCPGo, bench.Plain} {
		i, ok := m.listen[name]
		if !ok {
			fmt.Fprintf(&b, "| %s | n/a | | | | | |\n", name)
			continue
		}
		beyond := "—"
		if plainOK && name != bench.Plain {
			beyond = fmt.Sprintf("%.2f goroutines, %.0f B", i.GoroutinesPerStream-plain.GoroutinesPerStream, i.HeapPerStream-plain.HeapPerStream)
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.0f B | %s | %.0f B | %.2f |\n", name, i.Opened, i.GoroutinesPerStream, i.HeapPerStream, beyond, i.StackPerStream, i.CPUPerMin)
	}
	if len(m.errs) > 0 {
		b.WriteString("\nErrors:\n\n")
		for _, e := range m.errs {
			b.WriteString("- " + e + "\n")
		}
	}
	return b.String()
}

// modernMain runs the -modern mode (shorter with quick) and prints its
// markdown on stdout.
func modernMain(quick bool) {
	ms := modernSettings{rounds: 5, roundDur: time.Second, maxReq: 500000, progressN: 10000, progressConc: 64,
		progressCap: 3 * time.Minute, listenN: 2000, cpuWindow: 5 * time.Second, heartbeat: time.Second, writeTime: 10 * time.Second}
	if quick {
		ms.rounds, ms.roundDur, ms.progressN, ms.listenN, ms.cpuWindow = 2, 300*time.Millisecond, 1000, 200, time.Second
	}
	start := time.Now()
	m := runModern(ms)
	fmt.Println(renderModern(m, ms))
	fmt.Printf("total %.1f s\n", time.Since(start).Seconds())
}
