// Command cells measures lifeline's session-era tools/call cells (JSON and
// SSE at 1, 16 and 64 sessions) against stock mcp-go, the two measured in
// turn for -dur each, -rounds rounds per cell, in one process, and prints
// per cell lifeline's median req/s and the median of the per-round
// lifeline/stock ratios. The ratio of two measurements seconds apart moves
// far less than either on a shared machine, so it is the figure to compare
// between two versions of lifeline: it uses only bench.StartPeer and
// bench.MeasureThroughput, so the directory can be copied into an older
// checkout and run there, alternately with this one (-no-event-log needs
// this checkout's bench.Options: in a checkout older than the event log,
// run that checkout's own cells, the same otherwise).
//
//	cd bench && go run ./cmd/cells
//	cd bench && go run ./cmd/cells -no-event-log   # lifeline with resumability off
package main

import (
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// median is the middle of xs (the upper middle for an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func main() {
	rounds := flag.Int("rounds", 5, "rounds per cell")
	dur := flag.Duration("dur", 700*time.Millisecond, "measurement per peer per round")
	noLog := flag.Bool("no-event-log", false, "lifeline with resumability off (Config.DisableEventLog)")
	flag.Parse()
	o := bench.Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second, DisableEventLog: *noLog}
	l, err := bench.StartPeer(bench.Lifeline, o)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	m, err := bench.StartPeer(bench.MCPGo, o)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	for _, sse := range []bool{false, true} {
		for _, conc := range []int{1, 16, 64} {
			var rps, ratios []float64
			for r := range *rounds {
				order := []*bench.Peer{l, m}
				if r%2 == 1 {
					order = []*bench.Peer{m, l}
				}
				got := map[string]float64{}
				for _, p := range order {
					t, err := bench.MeasureThroughput(p, conc, sse, *dur, 500000)
					if err != nil {
						log.Fatalf("%s sse=%v conc=%d: %v", p.Name, sse, conc, err)
					}
					got[p.Name] = t.RPS
				}
				rps = append(rps, got[bench.Lifeline])
				if got[bench.MCPGo] > 0 {
					ratios = append(ratios, got[bench.Lifeline]/got[bench.MCPGo])
				}
			}
			if len(ratios) == 0 {
				ratios = []float64{0}
			}
			fmt.Printf("CELL sse=%v conc=%d lifeline=%.0f ratio=%.3f\n", sse, conc, median(rps), median(ratios))
		}
	}
}
