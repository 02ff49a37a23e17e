// Command heapprof profiles what idle GET streams hold: it initializes n
// sessions on one peer, writes a heap profile, opens a GET stream on each
// and writes another, every allocation sampled (runtime.MemProfileRate 1).
// It prints the heap per stream; the difference of the two profiles names
// what each stream holds (server and clients, in one process):
//
//	cd bench && go run ./cmd/heapprof -peer lifeline -n 2000
//	go tool pprof -sample_index=inuse_space -base /tmp/heap-sessions.prof -top /tmp/heap-streams.prof
//
// Compare a peer's figure with -peer plain's: that is net/http's own cost of
// a held stream, which the harness's heap-per-stream ratio subtracts.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

func main() {
	runtime.MemProfileRate = 1
	peer := flag.String("peer", bench.Lifeline, "the peer: lifeline, mcp-go, go-sdk, plain")
	n := flag.Int("n", 2000, "sessions, each with one GET stream")
	before := flag.String("before", "/tmp/heap-sessions.prof", "the profile with the sessions only")
	after := flag.String("after", "/tmp/heap-streams.prof", "the profile with the streams open")
	heartbeat := flag.Duration("heartbeat", 20*time.Second, "the peers' heartbeat interval")
	wait := flag.Duration("wait", 0, "how long the streams stay open before the second profile (heartbeats run meanwhile)")
	flag.Parse()
	if err := run(*peer, *n, *heartbeat, *wait, *before, *after); err != nil {
		log.Fatal(err)
	}
}

func run(peer string, n int, heartbeat, wait time.Duration, before, after string) error {
	p, err := bench.StartPeer(peer, bench.Options{Heartbeat: heartbeat, WriteTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer p.Close()
	ctx := context.Background()
	tr := bench.NewTransport(64)
	defer tr.CloseIdleConnections()
	clients := make([]*bench.Client, n)
	for i := range clients {
		clients[i] = bench.NewClient(p.URL, tr)
		if p.Sessions {
			if err := clients[i].Initialize(ctx); err != nil {
				return fmt.Errorf("initialize session %d: %w", i, err)
			}
		}
	}
	heap0, err := writeHeap(before)
	if err != nil {
		return err
	}
	getTr := bench.NewTransport(0)
	defer getTr.CloseIdleConnections()
	bodies := make([]*http.Response, 0, n)
	defer func() {
		for _, b := range bodies {
			b.Body.Close()
		}
	}()
	for _, c := range clients {
		g := &bench.Client{URL: c.URL, SessionID: c.SessionID, HTTP: &http.Client{Transport: getTr}}
		resp, err := g.OpenGet(ctx)
		if err != nil {
			return fmt.Errorf("open a GET stream: %w", err)
		}
		bodies = append(bodies, resp)
	}
	time.Sleep(wait) // the streams idle, their heartbeats running
	heap1, err := writeHeap(after)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d streams, heap per stream %.0f B (server and client); profiles %s, %s\n",
		peer, n, (float64(heap1)-float64(heap0))/float64(n), before, after)
	return nil
}

// writeHeap collects garbage twice, writes the heap profile to path and
// returns HeapAlloc.
func writeHeap(path string) (uint64, error) {
	runtime.GC()
	time.Sleep(100 * time.Millisecond) // lets finalizers and the clients' reads settle; not a synchronisation
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f, err := os.Create(path)
	if err != nil {
		return 0, fmt.Errorf("heap profile: %w", err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		return 0, fmt.Errorf("heap profile %s: %w", path, err)
	}
	return ms.HeapAlloc, f.Close()
}
