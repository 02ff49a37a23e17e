// Command compare benchmarks lifeline against stock mcp-go v1.2.1, the
// official Go SDK v1.8.0 and a plain net/http handler (the limit), in one
// process over loopback (each peer's idle phase in a fresh child process), and
// writes a markdown table and an SVG chart.
//
//	cd bench && go run ./cmd/compare -quick          # < 60 s, prints the RATIO line last
//	cd bench && go run ./cmd/compare                 # full run, writes ../BENCHMARKS.md and chart.svg
//
// It reports; it never fails on a number.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

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
}

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

var peers = []string{bench.Lifeline, bench.MCPGo, bench.GoSDK, bench.Plain}

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
	flag.Parse()

	s := settings{quick: *quick, dur: 3 * time.Second, maxReq: 500000, idleN: 9000, cpuWindow: 10 * time.Second,
		deleteN: 300, notifyN: 300, stallCap: 30 * time.Second, churnDur: 3 * time.Second,
		heartbeat: time.Second, writeTime: 10 * time.Second}
	if s.quick {
		s.dur, s.maxReq, s.idleN, s.cpuWindow = 500*time.Millisecond, 50000, 1000, 1500*time.Millisecond
		s.deleteN, s.notifyN, s.stallCap, s.churnDur = 50, 50, 2*time.Second, 700*time.Millisecond
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
	table := renderTable(results, s)
	fmt.Println(table)
	fmt.Printf("total %.1f s\n", time.Since(start).Seconds())
	if *svgPath != "" {
		if err := os.WriteFile(*svgPath, []byte(renderSVG(results)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	if *mdPath != "" {
		if err := os.WriteFile(*mdPath, []byte(renderMarkdown(table, results, s, *svgPath)), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(ratioLine(results))
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

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
	idlePhase(name, s, r, fail)
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

func thrKey(sse bool, conc int) string {
	if sse {
		return fmt.Sprintf("sse-%d", conc)
	}
	return fmt.Sprintf("json-%d", conc)
}

// cell is one measured value; ok false prints n/a; text overrides the number.
type cell struct {
	v    float64
	ok   bool
	text string
}

type row struct {
	name   string
	higher bool // higher is better
	cells  map[string]cell
	fmtv   func(float64) string
}

func ms(v float64) string  { return fmt.Sprintf("%.2f ms", v) }
func num(v float64) string { return fmt.Sprintf("%.0f", v) }
func f2(v float64) string  { return fmt.Sprintf("%.2f", v) }
func kib(v float64) string { return fmt.Sprintf("%.1f KiB", v/1024) }
func dms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

func buildRows(res map[string]*peerResult, s settings) []row {
	var rows []row
	add := func(name string, higher bool, f func(float64) string, get func(*peerResult) cell) {
		r := row{name: name, higher: higher, cells: map[string]cell{}, fmtv: f}
		for _, p := range peers {
			if pr, ok := res[p]; ok {
				r.cells[p] = get(pr)
			}
		}
		rows = append(rows, r)
	}
	for _, sse := range []bool{false, true} {
		kind := "JSON (echo)"
		if sse {
			kind = "SSE (3 progress)"
		}
		for _, conc := range []int{1, 16, 64} {
			k := thrKey(sse, conc)
			add(fmt.Sprintf("tools/call %s, %d sessions: req/s", kind, conc), true, num, func(p *peerResult) cell {
				t, ok := p.thr[k]
				return cell{v: t.RPS, ok: ok}
			})
			add(fmt.Sprintf("tools/call %s, %d sessions: p50", kind, conc), false, ms, func(p *peerResult) cell {
				t, ok := p.thr[k]
				return cell{v: dms(t.Lat.P50), ok: ok}
			})
			add(fmt.Sprintf("tools/call %s, %d sessions: p99", kind, conc), false, ms, func(p *peerResult) cell {
				t, ok := p.thr[k]
				return cell{v: dms(t.Lat.P99), ok: ok}
			})
		}
	}
	plain := res[bench.Plain]
	beyond := func(p *peerResult, f func(bench.Idle) float64) cell {
		if !p.idleOK || plain == nil || !plain.idleOK {
			return cell{}
		}
		return cell{v: f(p.idle) - f(plain.idle), ok: true}
	}
	n := fmt.Sprintf("%d", s.idleN)
	add("idle GET stream ("+n+"): goroutines per stream, client+server", false, f2, func(p *peerResult) cell {
		return cell{v: p.idle.GoroutinesPerStream, ok: p.idleOK}
	})
	add("idle GET stream: goroutines per stream beyond plain net/http", false, f2, func(p *peerResult) cell {
		return beyond(p, func(i bench.Idle) float64 { return i.GoroutinesPerStream })
	})
	add("idle GET stream: heap per stream, client+server", false, kib, func(p *peerResult) cell {
		return cell{v: p.idle.HeapPerStream, ok: p.idleOK}
	})
	add("idle GET stream: heap per stream beyond plain net/http", false, kib, func(p *peerResult) cell {
		return beyond(p, func(i bench.Idle) float64 { return i.HeapPerStream })
	})
	add("idle GET stream: heap + goroutine stacks per stream beyond plain net/http", false, kib, func(p *peerResult) cell {
		return beyond(p, func(i bench.Idle) float64 { return i.HeapPerStream + i.StackPerStream })
	})
	add("idle GET stream: RSS per stream, client+server", false, kib, func(p *peerResult) cell {
		return cell{v: p.idle.RSSPerStream, ok: p.idleOK}
	})
	add("idle session without stream: goroutines per session", false, f2, func(p *peerResult) cell {
		return cell{v: p.idle.GoroutinesPerSess, ok: p.idleOK && p != plain}
	})
	add("idle session without stream: heap per session, client+server", false, kib, func(p *peerResult) cell {
		return cell{v: p.idle.HeapPerSession, ok: p.idleOK && p != plain}
	})
	add(fmt.Sprintf("idle streams + sessions, heartbeat %v: process CPU s per minute", s.heartbeat), false, f2, func(p *peerResult) cell {
		return cell{v: p.idle.CPUPerMin, ok: p.idleOK}
	})
	closed := func(p *peerResult, l bench.Latency) cell {
		if !p.lifeOK {
			return cell{}
		}
		if p.life.NotClosed > 0 {
			return cell{v: 1e9, ok: true, text: fmt.Sprintf("never (%d of %d streams open > %v)", p.life.NotClosed, p.life.NotClosed+l.N, p.life.Timeout)}
		}
		return cell{v: dms(l.P99), ok: true}
	}
	add("DELETE until the GET stream closed: p50", false, ms, func(p *peerResult) cell {
		c := closed(p, p.life.DeleteClose)
		if c.ok && c.text == "" {
			c.v = dms(p.life.DeleteClose.P50)
		}
		return c
	})
	add("DELETE until the GET stream closed: p99", false, ms, func(p *peerResult) cell { return closed(p, p.life.DeleteClose) })
	add("DELETE response: p99", false, ms, func(p *peerResult) cell {
		return cell{v: dms(p.life.DeleteReturn.P99), ok: p.lifeOK && p.life.DeleteReturn.N > 0}
	})
	nt := func(p *peerResult, v time.Duration) cell {
		if !p.notOK {
			return cell{}
		}
		c := cell{v: dms(v), ok: p.notify.N > 0}
		if p.notify.N < p.tried {
			c.ok, c.v = true, dms(v)
			c.text = fmt.Sprintf("%s (%d of %d arrived)", ms(dms(v)), p.notify.N, p.tried)
			if p.notify.N == 0 {
				c.text, c.v = fmt.Sprintf("none arrived (0 of %d)", p.tried), 1e9
			}
		}
		return c
	}
	add("notification on the GET stream, call until event: p50", false, ms, func(p *peerResult) cell { return nt(p, p.notify.P50) })
	add("notification on the GET stream, call until event: p99", false, ms, func(p *peerResult) cell { return nt(p, p.notify.P99) })
	capped := func(p *peerResult, d time.Duration) cell {
		if !p.stallOK {
			return cell{}
		}
		if d > p.stall.Cap {
			return cell{v: 1e9, ok: true, text: fmt.Sprintf("> %v", p.stall.Cap)}
		}
		return cell{v: dms(d), ok: true}
	}
	add("stalled reader: DELETE returns", false, ms, func(p *peerResult) cell { return capped(p, p.stall.DeleteReturned) })
	add("stalled reader: every goroutine released", false, ms, func(p *peerResult) cell { return capped(p, p.stall.Released) })
	add("session churn, initialize + DELETE: cycles/s (8 clients)", true, num, func(p *peerResult) cell {
		return cell{v: p.churn, ok: p.churnOK}
	})
	return rows
}

func renderTable(res map[string]*peerResult, s settings) string {
	var b strings.Builder
	b.WriteString("| metric | lifeline | stock mcp-go | go-sdk | limit (plain net/http) | lifeline vs mcp-go | lifeline vs go-sdk | lifeline vs limit |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range buildRows(res, s) {
		b.WriteString("| " + r.name)
		for _, p := range peers {
			c, ok := r.cells[p]
			switch {
			case !ok || !c.ok:
				b.WriteString(" | n/a")
			case c.text != "":
				b.WriteString(" | " + c.text)
			default:
				b.WriteString(" | " + r.fmtv(c.v))
			}
		}
		l := r.cells[bench.Lifeline]
		for _, p := range peers[1:] {
			c := r.cells[p]
			if !l.ok || !c.ok || l.text != "" || c.text != "" || c.v == 0 {
				b.WriteString(" | n/a")
				continue
			}
			b.WriteString(fmt.Sprintf(" | %.2fx", l.v/c.v))
		}
		b.WriteString(" |\n")
	}
	b.WriteString("\nRatios are lifeline's value over the other's: above 1 is better for req/s, below 1 is better for everything else.\n")
	return b.String()
}

func thr64(r *peerResult) float64 {
	if r == nil {
		return 0
	}
	return r.thr["json-64"].RPS
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func ratioLine(res map[string]*peerResult) string {
	l, m, g, p := res[bench.Lifeline], res[bench.MCPGo], res[bench.GoSDK], res[bench.Plain]
	var gor, heap float64
	if l != nil && p != nil && l.idleOK && p.idleOK {
		gor = l.idle.GoroutinesPerStream - p.idle.GoroutinesPerStream
		if m != nil && m.idleOK {
			heap = ratio(l.idle.HeapPerStream-p.idle.HeapPerStream, m.idle.HeapPerStream-p.idle.HeapPerStream)
		}
	}
	return fmt.Sprintf("RATIO throughput_vs_mcpgo=%.2f throughput_vs_gosdk=%.2f goroutines_per_idle_stream=%.2f heap_per_idle_stream_vs_mcpgo=%.2f",
		ratio(thr64(l), thr64(m)), ratio(thr64(l), thr64(g)), gor, heap)
}

func sh(name string, args ...string) string {
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func renderMarkdown(table string, res map[string]*peerResult, s settings, svg string) string {
	var b strings.Builder
	cmd := "cd bench && go run ./cmd/compare"
	if s.quick {
		cmd += " -quick"
	}
	fmt.Fprintf(&b, "# Benchmarks\n\nlifeline against stock mcp-go v1.2.1 (`server.NewStreamableHTTPServer`, `WithStateful(true)`, `WithHeartbeatInterval`), "+
		"the official Go SDK v1.8.0 (`mcp.NewStreamableHTTPHandler`, stateful, `ServerOptions.KeepAlive`) and a plain `net/http` handler "+
		"answering the same JSON-RPC request with a fixed response (the limit), in one process over loopback (each peer's idle phase "+
		"in a fresh child process), with raw HTTP/1.1 clients "+
		"pinning protocol %s. Generated by [`bench/cmd/compare`](bench/cmd/compare/main.go); regenerate with the command below "+
		"(it overwrites this file up to the manual notes marker).\n\n", bench.ProtocolVersion)
	fmt.Fprintf(&b, "- command: `%s` (from the repository root; the harness is its own module)\n", cmd)
	fmt.Fprintf(&b, "- machine: `nproc` = %s, CPU %s, GOMAXPROCS %d, %s, %s/%s\n", sh("nproc"), cpuModel(), runtime.GOMAXPROCS(0), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "- date: %s; shared, noisy machine: treat differences under ~10%% as noise\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "- settings: heartbeat %v on every peer, lifeline write timeout %v, %v per throughput cell (at most %d calls), %d idle streams, "+
		"CPU window %v, %d DELETE-to-close samples, %d notification samples, stalled-reader cap %v, churn %v\n\n",
		s.heartbeat, s.writeTime, s.dur, s.maxReq, s.idleN, s.cpuWindow, s.deleteN, s.notifyN, s.stallCap, s.churnDur)
	if svg != "" {
		fmt.Fprintf(&b, "![throughput at 64 sessions and heap per idle stream](bench/%s)\n\n", svg)
	}
	b.WriteString(table)
	b.WriteString("\n## Targets (issue 5)\n\n")
	b.WriteString(targets(res, s))
	var errs []string
	for _, p := range peers {
		if r, ok := res[p]; ok {
			for _, e := range r.errs {
				errs = append(errs, fmt.Sprintf("- %s: %s", p, e))
			}
		}
	}
	if len(errs) > 0 {
		b.WriteString("\n## Errors during the run\n\n" + strings.Join(errs, "\n") + "\n")
	}
	b.WriteString(methodology)
	b.WriteString("\n" + ratioLine(res) + "\n")
	b.WriteString("\n" + marker + "\n")
	if old, err := os.ReadFile("../BENCHMARKS.md"); err == nil {
		if _, tail, ok := strings.Cut(string(old), marker+"\n"); ok {
			b.WriteString(tail)
		}
	}
	return b.String()
}

const marker = "<!-- manual notes below are kept when the file is regenerated -->"

func targets(res map[string]*peerResult, s settings) string {
	l, m, g, p := res[bench.Lifeline], res[bench.MCPGo], res[bench.GoSDK], res[bench.Plain]
	if l == nil || m == nil || g == nil || p == nil {
		return "Not evaluated: not every peer ran.\n"
	}
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "**missed**"
	}
	var b strings.Builder
	rm, rg := ratio(thr64(l), thr64(m)), ratio(thr64(l), thr64(g))
	fmt.Fprintf(&b, "- tools/call throughput at 64 sessions (JSON) ≥ 1.1x stock mcp-go: %.2fx, %s; ≥ 1.0x go-sdk: %.2fx, %s\n", rm, mark(rm >= 1.1), rg, mark(rg >= 1.0))
	gor := l.idle.GoroutinesPerStream - p.idle.GoroutinesPerStream
	fmt.Fprintf(&b, "- no goroutine per idle stream beyond net/http's: %.2f beyond the plain handler (stock %.2f, go-sdk %.2f), %s\n", gor,
		m.idle.GoroutinesPerStream-p.idle.GoroutinesPerStream, g.idle.GoroutinesPerStream-p.idle.GoroutinesPerStream, mark(gor < 0.05))
	hl, hm := l.idle.HeapPerStream-p.idle.HeapPerStream, m.idle.HeapPerStream-p.idle.HeapPerStream
	fmt.Fprintf(&b, "- heap per idle stream ≤ 0.5x stock (beyond the plain handler): %.2fx (%.1f KiB vs %.1f KiB), %s; including client and net/http: %.2fx\n",
		ratio(hl, hm), hl/1024, hm/1024, mark(ratio(hl, hm) <= 0.5), ratio(l.idle.HeapPerStream, m.idle.HeapPerStream))
	if l.lifeOK {
		p99 := l.life.DeleteClose.P99
		fmt.Fprintf(&b, "- DELETE until the stream closed, p99 ≤ 10 ms: %v, %s\n", p99.Round(time.Microsecond), mark(l.life.NotClosed == 0 && p99 <= 10*time.Millisecond))
	}
	if l.stallOK {
		lim := s.writeTime + time.Second
		fmt.Fprintf(&b, "- stalled reader, DELETE within write timeout + 1 s (%v): %v, %s; every goroutine released after %v\n", lim,
			l.stall.DeleteReturned.Round(time.Microsecond), mark(l.stall.DeleteReturned <= lim), l.stall.Released.Round(time.Microsecond))
	}
	return b.String()
}

const methodology = `
## How it measures

- Every peer runs in its own ` + "`http.Server`" + ` on its own 127.0.0.1 port, one after another, in the process that runs the
  clients (the idle phase excepted, see below); each serves ` + "`echo`" + `, ` + "`bench_progress`" + ` (three progress
  notifications on the call's own response), ` + "`bench_notify`" + ` (one ` + "`notifications/message`" + ` to the session, which belongs on the GET stream) and ` + "`bench_flood`" + `.
  Clients are raw HTTP/1.1 (` + "`bench/client.go`" + `): initialize pinning 2025-11-25, ` + "`notifications/initialized`" + `, then
  ` + "`Mcp-Session-Id`" + ` and ` + "`MCP-Protocol-Version`" + ` on every request, ` + "`Accept: application/json, text/event-stream`" + `.
- The Go SDK answers every POST as SSE unless ` + "`JSONResponse`" + ` is set, so its JSON rows use a second handler with
  ` + "`JSONResponse: true`" + ` on the same server; its SSE rows and everything else use the default handler.
- The Go SDK's heartbeat is ` + "`KeepAlive`" + `, a ping request per session from a goroutine per session; bench clients never
  answer, so ` + "`KeepAliveFailureThreshold`" + ` is raised to keep their sessions. Stock mcp-go's heartbeat writes pings on the
  GET stream; lifeline's one scheduler does the same for every stream.
- Throughput: N clients, each on its own session, call in a closed loop for the cell's duration; latency is per call
  (request sent until its response is parsed). Calls that fail count as errors, not in req/s.
- Idle streams: each peer's idle phase runs in a fresh process (the harness re-executes itself; the child starts the
  peer alike, measures, prints the result as JSON), so that every peer pays for its own goroutines' descriptors
  (` + "`g`" + ` structs, which the runtime never frees and would otherwise reuse from an earlier peer's run). Sessions are
  initialized, then every one opens a GET whose body is never read. Goroutines (` + "`runtime.NumGoroutine`" + `), heap
  (` + "`HeapAlloc`" + ` after two GCs) and goroutine stacks (` + "`StackInuse`" + `) are read before and after the GETs, so the stream
  columns exclude the session; the "heap + goroutine stacks" row adds ` + "`StackInuse`" + ` to the heap. The numbers
  include the client side (net/http's two transport goroutines and buffers per connection) and net/http's server
  connection; "beyond plain net/http" subtracts the same GETs held open by the plain
  handler, which blocks on the request context: what is left is what the transport itself adds per stream. RSS is the
  process's resident set delta. CPU is process CPU (getrusage) over the window with every stream idle.
- DELETE until closed: one session at a time with a GET stream read to EOF; time from sending DELETE until EOF, 1 s
  wait per stream, stopping after 3 streams that never closed.
- Notification delivery: one session with a GET stream; time from sending ` + "`tools/call bench_notify`" + ` until the event
  is parsed on the GET stream (300 ms wait each, stopping after 5 that never arrived).
- Stalled reader: a GET on a raw socket with a 4 KiB receive buffer that reads only the status line; ` + "`bench_flood`" + `
  sends 256 x 32 KiB notifications to the session (more than both socket buffers, within lifeline's queue of 512), then
  DELETE is sent and timed, capped; "released" is until the process's goroutine count is back to what it was before the
  GET (server handler, net/http connection, transport goroutines), within the same cap.
- Churn: 8 clients, each looping initialize + DELETE.
- The plain handler has no sessions: its session rows are n/a; its GET is the net/http baseline for the idle rows.
`
