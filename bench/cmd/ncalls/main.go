// Command ncalls makes exactly -n tools/call requests (JSON answers, echo)
// against one peer, from -conc clients, and exits. It is for counting
// tools whose totals do not depend on the machine's speed: run it twice
// under one, with two values of -n, and the difference of the totals over
// the difference of -n is a per-call figure, start-up and set-up cancelled
// out. It prints what the run allocated (the whole process's bytes and
// objects, and its collections), a count of the same kind. With valgrind's cachegrind (instructions, and simulated L1
// instruction-cache misses with --cache-sim=yes) it compares what lifeline
// and the mcp-go floor execute per call; with strace -c, their system
// calls.
//
//	cd bench && CGO_ENABLED=0 go build -o /tmp/ncalls ./cmd/ncalls
//	GODEBUG=asyncpreemptoff=1 valgrind --tool=cachegrind --cache-sim=yes \
//	  --I1=32768,8,64 --D1=32768,8,64 --LL=6291456,12,64 /tmp/ncalls -peer floor -n 2000
//
// (Built without cgo and run without asynchronous preemption: valgrind's
// callgrind does not follow Go's preemption signals, and cachegrind gives
// steadier totals without them.)
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"runtime"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/lifeline-mcp/lifeline/bench"
)

func main() {
	peer := flag.String("peer", bench.Lifeline, "the peer: lifeline, mcp-go, go-sdk, floor")
	n := flag.Int("n", 1000, "how many calls, in all")
	conc := flag.Int("conc", 16, "sessions, one client each")
	modern := flag.Bool("modern", false, "speak protocol 2026-07-28 (sessionless) to the peer")
	floorChecks := flag.Bool("floor-header-checks", false, "the floor runs MCPServer's own 2026-07-28 header checks (bench.Options.FloorHeaderChecks)")
	floorSession := flag.Bool("floor-session", false, "the floor gives each 2026-07-28 request a session (bench.Options.FloorSession)")
	metrics := flag.Bool("metrics", false, "install an SDK MeterProvider (a ManualReader), as cmd/otelcost's metrics peer")
	flag.Parse()
	o := bench.Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, FloorHeaderChecks: *floorChecks, FloorSession: *floorSession}
	if *metrics {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = mp.Shutdown(context.Background()) }()
		o.MeterProvider = mp
	}
	p, err := bench.StartPeer(*peer, o)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	// A duration no count of calls reaches: -n ends the run.
	t, err := bench.MeasureThroughput(p.InEra(*modern), *conc, false, time.Hour, *n)
	runtime.ReadMemStats(&after)
	if err != nil {
		log.Fatal(err)
	}
	if t.Errors > 0 {
		log.Fatalf("%d calls failed, the first: %s", t.Errors, t.FirstEr)
	}
	// What the run allocated, sessions' set-up included, over -n; the
	// difference between two -n is a per-call figure.
	fmt.Printf("NCALLS peer=%s modern=%v conc=%d n=%d alloc_bytes=%d allocs=%d gcs=%d\n", *peer, *modern, *conc, *n,
		after.TotalAlloc-before.TotalAlloc, after.Mallocs-before.Mallocs, after.NumGC-before.NumGC)
}
