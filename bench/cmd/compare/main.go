// Command compare benchmarks lifeline against stock mcp-go v1.2.1, the
// official Go SDK v1.8.0, the floor (stock mcp-go's MCPServer behind the least
// HTTP handling possible) and a plain net/http handler (the limit), in one
// process over loopback. Every throughput cell (tools/call JSON and SSE at
// 1, 16 and 64 sessions, session churn; both protocol eras; lifeline on the
// memory and on the Redis store; lifeline with resumability off and with
// SDK telemetry) is measured in interleaved rounds, every variant running at
// once and measured in turn. The other rows (idle streams, each peer in a
// fresh child process; DELETE to close; notifications; the stalled reader)
// are measured per peer. It writes a markdown report and an SVG chart.
//
//	cd bench && go run ./cmd/compare -quick          # about a minute, prints the RATIO line last
//	cd bench && go run ./cmd/compare                 # full run (~13 min; -rounds 11 ~17), writes ../BENCHMARKS.md and chart.svg
//	cd bench && go run ./cmd/compare -modern         # 2026-07-28 vs stock and vs the session era, prints markdown
//
// It reports; it never fails on a number.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// settings are the run's durations and sizes (full or quick mode).
type settings struct {
	quick                bool
	maxReq               int
	idleN                int
	cpuWindow            time.Duration
	deleteN, notifyN     int
	stallCap             time.Duration
	heartbeat, writeTime time.Duration
	// rounds interleaved rounds of roundDur per variant and cell (in two
	// halves, measureMirrored) measure the throughput cells of cells.
	rounds   int
	roundDur time.Duration
	cells    []cellSpec
	// orderSeed seeds the order each round measures a cell's variants
	// in (shuffledOrder); 0 draws one, which the run logs.
	orderSeed uint64
	// floorRounds floor rounds of floorRoundDur per variant and cell, after
	// the main rounds, measure floorCells for floorVariants alone: what
	// the floor targets are read from.
	floorRounds   int
	floorRoundDur time.Duration
	floorCells    []cellSpec
}

// peerResult is what runPeer measured for one peer; the ok flags say which
// measurements succeeded (a row prints n/a for the others).
type peerResult struct {
	idle    bench.Idle
	idleOK  bool
	life    bench.Lifecycle
	lifeOK  bool
	notify  bench.Latency
	tried   int
	notOK   bool
	stall   bench.Stalled
	stallOK bool
	errs    []string
}

// peers are the peers in run and report order.
var peers = []string{bench.Lifeline, bench.MCPGo, bench.GoSDK, bench.Floor, bench.Plain}

// fullSettings and quickSettings are the two modes' settings.
var (
	fullSettings = settings{maxReq: 500000, idleN: 9000, cpuWindow: 10 * time.Second,
		deleteN: 300, notifyN: 300, stallCap: 30 * time.Second,
		heartbeat: time.Second, writeTime: 10 * time.Second, rounds: 7, roundDur: time.Second, cells: allCells,
		floorRounds: 40, floorRoundDur: 500 * time.Millisecond, floorCells: []cellSpec{cellJSON16, cellJSON64}}
	quickSettings = settings{quick: true, maxReq: 50000, idleN: 1000, cpuWindow: 1500 * time.Millisecond,
		deleteN: 50, notifyN: 50, stallCap: 2 * time.Second,
		heartbeat: time.Second, writeTime: 10 * time.Second, rounds: 3, roundDur: 300 * time.Millisecond, cells: quickCells,
		floorRounds: 4, floorRoundDur: 300 * time.Millisecond, floorCells: []cellSpec{cellJSON64}}
)

// main measures every selected peer's non-throughput rows in turn, then the
// throughput cells in interleaved rounds, prints the tables and the
// targets, writes the markdown and the chart when asked and prints the
// RATIO line last.
func main() {
	if isIdleChild() {
		idleChildMain()
		return
	}
	quick := flag.Bool("quick", false, "quick mode: short, bounded, about a minute; JSON and SSE at 64 sessions and churn only")
	mdPath := flag.String("md", "", "write the markdown report here (default ../BENCHMARKS.md in full mode, none in quick mode)")
	svgPath := flag.String("svg", "", "write the SVG chart here (default chart.svg in full mode, none in quick mode)")
	only := flag.String("peers", strings.Join(peers, ","), "comma-separated peers to run")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the interleaved rounds (with -peers lifeline, of lifeline's variants alone)")
	rounds := flag.Int("rounds", 0, "interleaved rounds (default 7, quick 3); more on a quiet machine narrows the ranges")
	roundDur := flag.Duration("round-dur", 0, "each variant's measurement per cell and round, taken in two halves (default 1s, quick 300ms)")
	floorRounds := flag.Int("floor-rounds", 0, "floor rounds, the floor targets' variants alone after the main rounds (default 40, quick 4; -1: none; none under -cpuprofile)")
	orderSeed := flag.Uint64("order-seed", 0, "seed of the variants' order in each cell of each round (default: drawn, logged and written in the report); "+
		"the same seed gives the same orders only with the same -peers, mode and -rounds and the same variants started (a redis-server found or not); -modern rotates instead")
	modern := flag.Bool("modern", false, "measure protocol 2026-07-28 instead: lifeline and stock in both eras, progress loss, idle listen streams; prints markdown")
	flag.Parse()
	if *modern {
		modernMain(*quick)
		return
	}
	s := fullSettings
	if *quick {
		s = quickSettings
	} else {
		if *mdPath == "" {
			*mdPath = "../BENCHMARKS.md"
		}
		if *svgPath == "" {
			*svgPath = "chart.svg"
		}
	}
	if *rounds > 0 {
		s.rounds = *rounds
	}
	if *roundDur > 0 {
		s.roundDur = *roundDur
	}
	s.orderSeed = *orderSeed
	s.floorRounds = floorRoundsOf(*floorRounds, s.floorRounds, *cpuProfile != "")
	run := strings.Split(*only, ",")
	start := time.Now()
	results := map[string]*peerResult{}
	for _, name := range peers {
		if slices.Contains(run, name) && name != bench.Floor { // the floor has only throughput cells
			results[name] = runPeer(name, s)
		}
	}
	rep := report{res: results, iv: runRounds(selectVariants(run, false), s, *cpuProfile)}
	rep.table = renderTable(results, s)
	fmt.Println(rep.table)
	fmt.Println(renderCells(rep.iv))
	fmt.Println("## Targets (issue 16)\n\n" + renderTargets(targetsOf(rep.iv)))
	if errs := runErrors(rep); len(errs) > 0 {
		fmt.Println("## Errors during the run\n\n" + strings.Join(errs, "\n") + "\n")
	}
	fmt.Printf("total %.1f s\n", time.Since(start).Seconds())
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, []byte(renderSVG(results, rep.iv)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *mdPath != "" {
		if err := os.WriteFile(*mdPath, []byte(renderMarkdown(rep, s, *svgPath)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(ratioLine(results, rep.iv))
}

// floorRoundsOf is how many floor rounds a run measures: flagged, when the
// -floor-rounds flag is positive; none when it is negative, or under a CPU
// profile (which profiles the main rounds' variants, as -cpuprofile says);
// otherwise the mode's default.
func floorRoundsOf(flagged, def int, profiled bool) int {
	switch {
	case flagged < 0, profiled:
		return 0
	case flagged > 0:
		return flagged
	}
	return def
}

// runRounds starts the backends the variants vs need, runs the interleaved
// rounds (under a CPU profile written to cpuProfile, when set) and stops
// the backends.
func runRounds(vs []variant, s settings, cpuProfile string) *interleaved {
	be := startBackends(vs)
	defer be.close()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	return runInterleaved(vs, s.cells, s, be)
}

// report is everything the markdown is rendered from.
type report struct {
	table string
	res   map[string]*peerResult
	iv    *interleaved
}

// logf prints a progress line on stderr.
func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// runPeer starts peer name and measures its non-throughput rows: for the
// peers with sessions notification and DELETE-to-close, the idle phase in a
// child process, and for the peers with sessions the stalled reader.
func runPeer(name string, s settings) *peerResult {
	r := &peerResult{}
	p, err := bench.StartPeer(name, bench.Options{Heartbeat: s.heartbeat, WriteTimeout: s.writeTime})
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return r
	}
	defer p.Close()
	fail := func(what string, err error) {
		r.errs = append(r.errs, what+": "+err.Error())
		logf("%s %s: %v", name, what, err)
	}
	if p.Sessions {
		if r.notify, r.tried, err = bench.MeasureNotify(p, s.notifyN, 300*time.Millisecond); err != nil {
			fail("notify", err)
		} else {
			r.notOK = true
			logf("%-8s notify  p50 %v p99 %v (%d/%d arrived)", name, r.notify.P50, r.notify.P99, r.notify.N, r.tried)
		}
		if r.life, err = bench.MeasureDeleteClose(p, s.deleteN, time.Second); err != nil {
			fail("delete-close", err)
		} else {
			r.lifeOK = true
			logf("%-8s delete→closed p50 %v p99 %v (not closed %d)", name, r.life.DeleteClose.P50, r.life.DeleteClose.P99, r.life.NotClosed)
		}
	}
	if !p.JSONOnly {
		idlePhase(name, s, r, fail)
	}
	if p.Sessions {
		if r.stall, err = bench.MeasureStalled(p, s.stallCap); err != nil {
			fail("stalled", err)
		} else {
			r.stallOK = true
			logf("%-8s stalled: DELETE %v (status %d), released %v", name, r.stall.DeleteReturned, r.stall.Status, r.stall.Released)
		}
	}
	return r
}

// thrKey names a throughput cell of the -modern mode.
func thrKey(sse bool, conc int) string {
	if sse {
		return fmt.Sprintf("sse-%d", conc)
	}
	return fmt.Sprintf("json-%d", conc)
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ratioLine is the last line printed: lifeline's throughput ratios, each the
// median of the interleaved rounds' per-round ratios (0 when not measured;
// json_vs_floor, as the floor target, of the floor rounds when the run had
// them, as since run 61; json_vs_floor_main, the same of the main rounds,
// as json_vs_floor was up to run 60),
// and its idle stream cost beyond the plain handler. New fields go at the
// end: scripts read the line by field name, older ones by position.
func ratioLine(res map[string]*peerResult, iv *interleaved) string {
	l, m, p := res[bench.Lifeline], res[bench.MCPGo], res[bench.Plain]
	var gor, heap float64
	if l != nil && p != nil && l.idleOK && p.idleOK {
		gor = l.idle.GoroutinesPerStream - p.idle.GoroutinesPerStream
		if m != nil && m.idleOK {
			heap = ratio(l.idle.HeapPerStream-p.idle.HeapPerStream, m.idle.HeapPerStream-p.idle.HeapPerStream)
		}
	}
	vs := func(c cellSpec, peer string) float64 { return iv.ratioSpread(c.key(), vLifeline, peer).med }
	return fmt.Sprintf("RATIO throughput_vs_mcpgo=%.2f throughput_vs_gosdk=%.2f goroutines_per_idle_stream=%.2f heap_per_idle_stream_vs_mcpgo=%.2f "+
		"sse_vs_mcpgo=%.2f churn_vs_mcpgo=%.2f json_vs_floor=%.2f json_vs_floor_main=%.2f",
		vs(cellJSON64, vMCPGo), vs(cellJSON64, vGoSDK), gor, heap, vs(cellSSE64, vMCPGo), vs(cellChurn, vMCPGo), iv.floorOrMain().ratioSpread(cellJSON64.key(), vLifeline, vFloor).med,
		vs(cellJSON64, vFloor))
}
