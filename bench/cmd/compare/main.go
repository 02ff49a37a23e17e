// Command compare benchmarks lifeline against stock mcp-go v1.2.1, the
// official Go SDK v1.8.0, the floor (stock mcp-go's MCPServer behind the least
// HTTP handling possible) and a plain net/http handler (the limit), in one
// process over loopback (each peer's idle phase in a fresh child process),
// then measures the headline (tools/call JSON at 64 sessions) again in
// interleaved rounds, and writes a markdown table and an SVG chart.
//
//	cd bench && go run ./cmd/compare -quick          # < 60 s, prints the RATIO line last
//	cd bench && go run ./cmd/compare                 # full run, writes ../BENCHMARKS.md and chart.svg
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
	dur                  time.Duration
	maxReq               int
	idleN                int
	cpuWindow            time.Duration
	deleteN, notifyN     int
	stallCap             time.Duration
	churnDur             time.Duration
	heartbeat, writeTime time.Duration
	// rounds interleaved rounds of roundDur per peer measure the headline.
	rounds   int
	roundDur time.Duration
}

// peerResult is what runPeer measured for one peer; the ok flags say which
// measurements succeeded (a row prints n/a for the others).
type peerResult struct {
	thr     map[string]bench.Throughput
	idle    bench.Idle
	idleOK  bool
	life    bench.Lifecycle
	lifeOK  bool
	notify  bench.Latency
	tried   int
	notOK   bool
	stall   bench.Stalled
	stallOK bool
	churn   float64
	churnOK bool
	errs    []string
}

// peers are the peers in run and report order.
var peers = []string{bench.Lifeline, bench.MCPGo, bench.GoSDK, bench.Floor, bench.Plain}

// main runs every selected peer in turn, then the interleaved rounds, prints
// the table and the rounds, writes the markdown and the chart when asked and
// prints the RATIO line last.
func main() {
	if isIdleChild() {
		idleChildMain()
		return
	}
	quick := flag.Bool("quick", false, "quick mode: short, bounded, under 60 s")
	mdPath := flag.String("md", "", "write the markdown report here (default ../BENCHMARKS.md in full mode, none in quick mode)")
	svgPath := flag.String("svg", "", "write the SVG chart here (default chart.svg in full mode, none in quick mode)")
	only := flag.String("peers", strings.Join(peers, ","), "comma-separated peers to run")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the throughput phase (use with -peers lifeline)")
	modern := flag.Bool("modern", false, "measure protocol 2026-07-28 instead: lifeline and stock in both eras, progress loss, idle listen streams; prints markdown")
	flag.Parse()
	if *modern {
		modernMain(*quick)
		return
	}

	s := settings{quick: *quick, dur: 3 * time.Second, maxReq: 500000, idleN: 9000, cpuWindow: 10 * time.Second,
		deleteN: 300, notifyN: 300, stallCap: 30 * time.Second, churnDur: 3 * time.Second,
		heartbeat: time.Second, writeTime: 10 * time.Second, rounds: 7, roundDur: 2 * time.Second}
	if s.quick {
		s.dur, s.maxReq, s.idleN, s.cpuWindow = 500*time.Millisecond, 50000, 1000, 1500*time.Millisecond
		s.deleteN, s.notifyN, s.stallCap, s.churnDur = 50, 50, 2*time.Second, 700*time.Millisecond
		s.rounds, s.roundDur = 3, 400*time.Millisecond
	}
	if !s.quick {
		if *mdPath == "" {
			*mdPath = "../BENCHMARKS.md"
		}
		if *svgPath == "" {
			*svgPath = "chart.svg"
		}
	}
	run := strings.Split(*only, ",")
	start := time.Now()
	results := map[string]*peerResult{}
	for _, name := range peers {
		if !slices.Contains(run, name) {
			continue
		}
		results[name] = runPeer(name, s, *cpuProfile)
	}
	rep := report{res: results, iv: runInterleaved(roundPeers(run), s)}
	rep.head = headlineOf(results, rep.iv)
	rep.table = renderTable(results, s)
	fmt.Println(rep.table)
	fmt.Println(renderInterleaved(rep.iv))
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
	fmt.Println(ratioLine(results, rep.head))
}

// report is everything the markdown is rendered from.
type report struct {
	table string
	res   map[string]*peerResult
	iv    *interleaved
	head  headline
}

// logf prints a progress line on stderr.
func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

// runPeer starts peer name and measures it: throughput cells, then (for the
// peers with sessions) notification, DELETE-to-close and churn, the idle
// phase in a child process (not for the floor) and the stalled reader.
func runPeer(name string, s settings, cpuProfile string) *peerResult {
	r := &peerResult{thr: map[string]bench.Throughput{}}
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
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err == nil {
			_ = pprof.StartCPUProfile(f)
		}
	}
	for _, sse := range []bool{false, true} {
		if sse && p.JSONOnly {
			continue
		}
		for _, conc := range []int{1, 16, 64} {
			t, err := bench.MeasureThroughput(p, conc, sse, s.dur, s.maxReq)
			if err != nil {
				fail(thrKey(sse, conc), err)
				continue
			}
			if t.Errors > 0 {
				r.errs = append(r.errs, fmt.Sprintf("%s: %d errors, first: %s", thrKey(sse, conc), t.Errors, t.FirstEr))
			}
			r.thr[thrKey(sse, conc)] = t
			logf("%-8s %-7s %8.0f req/s p50 %v p99 %v errors %d", name, thrKey(sse, conc), t.RPS, t.Lat.P50, t.Lat.P99, t.Errors)
		}
	}
	if cpuProfile != "" {
		pprof.StopCPUProfile()
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
		if r.churn, err = bench.MeasureChurn(p, 8, s.churnDur, 200000); err != nil {
			fail("churn", err)
		} else {
			r.churnOK = true
			logf("%-8s churn %.0f cycles/s", name, r.churn)
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

// thrKey names a throughput cell in peerResult.thr.
func thrKey(sse bool, conc int) string {
	if sse {
		return fmt.Sprintf("sse-%d", conc)
	}
	return fmt.Sprintf("json-%d", conc)
}

// thr64 is r's tools/call JSON req/s at 64 sessions (0 when r is nil).
func thr64(r *peerResult) float64 {
	if r == nil {
		return 0
	}
	return r.thr["json-64"].RPS
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ratioLine is the last line printed: the throughput ratios of the headline
// h, and lifeline's idle stream cost beyond the plain handler.
func ratioLine(res map[string]*peerResult, h headline) string {
	l, m, p := res[bench.Lifeline], res[bench.MCPGo], res[bench.Plain]
	var gor, heap float64
	if l != nil && p != nil && l.idleOK && p.idleOK {
		gor = l.idle.GoroutinesPerStream - p.idle.GoroutinesPerStream
		if m != nil && m.idleOK {
			heap = ratio(l.idle.HeapPerStream-p.idle.HeapPerStream, m.idle.HeapPerStream-p.idle.HeapPerStream)
		}
	}
	return fmt.Sprintf("RATIO throughput_vs_mcpgo=%.2f throughput_vs_gosdk=%.2f goroutines_per_idle_stream=%.2f heap_per_idle_stream_vs_mcpgo=%.2f",
		h.mcpgo.v, h.gosdk.v, gor, heap)
}
