// Command profile runs one throughput cell against one peer for a while
// under a CPU (and optionally an allocation) profile: what issue 16 asks
// to look at before changing anything. The profile covers the whole
// process, the bench clients included; the peer's own frames are those
// under its package (streamable. for lifeline, server. for mcp-go).
//
//	cd bench && go run ./cmd/profile -peer lifeline -cell json -conc 64 -dur 10s -cpuprofile /tmp/ll.prof
//	go tool pprof -top -cum /tmp/ll.prof
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

func main() {
	peer := flag.String("peer", bench.Lifeline, "the peer: lifeline, mcp-go, go-sdk, floor")
	cell := flag.String("cell", "json", "json (tools/call answered as JSON), sse (3 progress notifications), churn (initialize + DELETE)")
	conc := flag.Int("conc", 64, "sessions, one client each (churn: clients)")
	dur := flag.Duration("dur", 10*time.Second, "how long the cell runs under the profile")
	warm := flag.Duration("warm", time.Second, "how long it runs before the profile starts")
	noLog := flag.Bool("no-event-log", false, "lifeline with resumability off")
	onRedis := flag.Bool("redis", false, "lifeline on the Redis store (starts a redis-server)")
	modern := flag.Bool("modern", false, "speak protocol 2026-07-28 (sessionless) to the peer")
	cpu := flag.String("cpuprofile", "", "write the CPU profile here")
	mem := flag.String("memprofile", "", "write an allocation profile (alloc_space) here")
	floorChecks := flag.Bool("floor-header-checks", false, "the floor runs MCPServer's own 2026-07-28 header checks (bench.Options.FloorHeaderChecks)")
	floorSession := flag.Bool("floor-session", false, "the floor gives each 2026-07-28 request a session (bench.Options.FloorSession)")
	flag.Parse()
	if *modern && *cell == "churn" {
		log.Fatal("-modern -cell churn: 2026-07-28 has no sessions, so no initialize + DELETE to churn")
	}

	o := bench.Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, DisableEventLog: *noLog, FloorHeaderChecks: *floorChecks, FloorSession: *floorSession}
	var rb *bench.RedisBackend
	if *onRedis {
		var err error
		rb, err = bench.StartRedis()
		if err != nil {
			log.Fatal(err)
		}
		defer rb.Close()
		o.Redis = rb
	}
	p, err := bench.StartPeer(*peer, o)
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	p = p.InEra(*modern)
	var lat bench.Latency // the last run's, for json and sse
	run := func(d time.Duration) (float64, error) {
		switch *cell {
		case "json", "sse":
			t, err := bench.MeasureThroughput(p, *conc, *cell == "sse", d, 10000000)
			lat = t.Lat
			if err == nil && t.Errors > 0 {
				// Stock mcp-go loses a progress notification now and then:
				// counted, not fatal.
				fmt.Fprintf(os.Stderr, "%d calls failed, the first: %s\n", t.Errors, t.FirstEr)
			}
			return t.RPS, err
		case "churn":
			return bench.MeasureChurn(p, *conc, d, 10000000)
		}
		return 0, fmt.Errorf("-cell must be json, sse or churn, not %q", *cell)
	}
	if _, err := run(*warm); err != nil {
		log.Fatal(err)
	}
	if *mem != "" {
		runtime.MemProfileRate = 64 << 10
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
	}
	if rb != nil {
		if err := rb.ResetStats(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
	cpu0, err := bench.ProcessCPU()
	if err != nil {
		log.Fatal(err)
	}
	rps, err := run(*dur)
	cpu1, cerr := bench.ProcessCPU()
	if cerr != nil {
		log.Fatal(cerr)
	}
	cpuPerOp := (cpu1 - cpu0).Seconds() / (rps * dur.Seconds())
	if *cpu != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		log.Fatal(err)
	}
	if *mem != "" {
		f, err := os.Create(*mem)
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			log.Fatal(err)
		}
	}
	if rb != nil {
		// What the cell asked of Redis, per call: each command's count
		// and its time inside redis-server.
		stats, err := rb.Info(context.Background(), "commandstats")
		if err != nil {
			log.Fatal(err)
		}
		printCommandStats(stats, rps*dur.Seconds())
	}
	fmt.Printf("PROFILE peer=%s cell=%s modern=%v conc=%d dur=%v rate=%.0f/s cpu_per_op=%.1fus (process CPU, clients included) p50=%.0fus p99=%.0fus\n",
		*peer, *cell, *modern, *conc, *dur, rps, cpuPerOp*1e6, lat.P50.Seconds()*1e6, lat.P99.Seconds()*1e6)
}

// printCommandStats prints INFO commandstats (lines such as
// "cmdstat_hget:calls=12,usec=30,...") as calls and redis-server
// microseconds per operation, ops of them.
func printCommandStats(stats string, ops float64) {
	for _, line := range strings.Split(stats, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var calls, usec float64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				calls = f
			case "usec":
				usec = f
			}
		}
		fmt.Printf("REDIS %-24s %6.2f calls/op %7.2f us/op in redis-server\n", strings.TrimPrefix(name, "cmdstat_"), calls/ops, usec/ops)
	}
}
