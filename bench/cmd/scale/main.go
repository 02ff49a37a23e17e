// Command scale measures idle streams at scale, with the server and its
// clients in separate processes (each process under this machine's file
// descriptor limit, 20,000 here, while one holding both could not reach
// 10,000 streams): for each peer, a child process serves it and reports
// its own goroutines, heap, goroutine stacks, resident set and CPU; this
// process initializes the sessions, opens the streams (each on its own
// connection, its body never read after the opening) and reads the
// child's figures before and after, then over a window with every stream
// idle and the heartbeat on. It prints a markdown table: memory per
// stream and per session (the server's alone), sessions per GiB, CPU
// seconds per minute, and each beyond plain net/http holding the same
// number of bare GETs.
//
//	cd bench && go run ./cmd/scale                       # 10,000 GET and listen streams, heartbeat 20 s and 1 s (~6 min)
//	cd bench && go run ./cmd/scale -n 1000 -window 3s    # smaller
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// serveFlag, as the first argument, makes this process a server child.
const serveFlag = "-serve"

// childInfo is what a server child prints on its first line of stdout.
type childInfo struct {
	URL      string `json:"url"`
	Stats    string `json:"stats"`
	Sessions bool   `json:"sessions"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == serveFlag {
		if err := serveChild(os.Args[2:]); err != nil {
			log.Fatalf("%s: %v", serveFlag, err)
		}
		return
	}
	n := flag.Int("n", 10000, "idle streams per peer and kind")
	window := flag.Duration("window", 20*time.Second, "CPU window, every stream idle")
	beats := flag.String("heartbeats", "20s,1s", "comma-separated heartbeat intervals to measure at (lifeline's default is 20s)")
	peerList := flag.String("peers", strings.Join([]string{bench.Lifeline, bench.MCPGo, bench.GoSDK, bench.Plain}, ","), "peers (plain is the baseline)")
	kinds := flag.String("kinds", "get,listen", "get (session-era GET streams), listen (2026-07-28 subscriptions/listen)")
	flag.Parse()
	peers := strings.Split(*peerList, ",")
	var rows []row
	for _, hb := range strings.Split(*beats, ",") {
		heartbeat, err := time.ParseDuration(hb)
		if err != nil {
			log.Fatalf("-heartbeats: %v", err)
		}
		for _, kind := range strings.Split(*kinds, ",") {
			for _, peer := range peers {
				if kind == "listen" && peer == bench.GoSDK {
					continue // no subscriptions/listen
				}
				idle, err := measure(peer, kind, *n, *window, heartbeat)
				if err != nil {
					log.Printf("%s %s heartbeat %v: %v", peer, kind, heartbeat, err)
					rows = append(rows, row{peer: peer, kind: kind, heartbeat: heartbeat, err: err})
					continue
				}
				log.Printf("%s %s heartbeat %v: %d/%d opened, %.0f B heap + %.0f B stack per stream (%.0f B stack after the window, before a GC), %.2f CPU s/min",
					peer, kind, heartbeat, idle.Opened, idle.N, idle.HeapPerStream, idle.StackPerStream, idle.StackAfterWindow, idle.CPUPerMin)
				rows = append(rows, row{peer: peer, kind: kind, heartbeat: heartbeat, idle: idle})
			}
		}
	}
	fmt.Print(render(rows, *n, *window))
}

// row is one peer's measurement of one kind of stream at one heartbeat.
type row struct {
	peer, kind string
	heartbeat  time.Duration
	idle       bench.Idle
	err        error
}

// measure starts peer in a server child and measures n idle streams of
// kind against it.
func measure(peer, kind string, n int, window, heartbeat time.Duration) (bench.Idle, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		return bench.Idle{}, err
	}
	cmd := exec.CommandContext(ctx, exe, serveFlag, peer, "-heartbeat", heartbeat.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // the child exits when it closes
	if err != nil {
		return bench.Idle{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return bench.Idle{}, err
	}
	if err := cmd.Start(); err != nil {
		return bench.Idle{}, err
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		return bench.Idle{}, fmt.Errorf("the server child said nothing: %w", err)
	}
	var info childInfo
	if err := json.Unmarshal(line, &info); err != nil {
		return bench.Idle{}, fmt.Errorf("the server child's first line %q: %w", line, err)
	}
	p := &bench.Peer{Name: peer, URL: info.URL, JSONURL: info.URL, Sessions: info.Sessions}
	probe := bench.RemoteProbe(info.Stats)
	if kind == "listen" && peer != bench.Plain { // plain's baseline is bare GETs
		return bench.MeasureListenIdleWith(p, n, window, probe)
	}
	return bench.MeasureIdleWith(p, n, window, probe)
}

// serveChild is a server child's main: it serves peer and its stats, says
// where on stdout, and returns when stdin ends (its parent closed it or
// died).
func serveChild(args []string) error {
	if len(args) == 0 {
		return errors.New("no peer name")
	}
	fs := flag.NewFlagSet(serveFlag, flag.ContinueOnError)
	heartbeat := fs.Duration("heartbeat", 20*time.Second, "heartbeat interval")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	p, err := bench.StartPeer(args[0], bench.Options{Heartbeat: *heartbeat, WriteTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	stats := &http.Server{Handler: bench.StatsHandler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- stats.Serve(l) }()
	defer func() {
		_ = stats.Close()
		<-served
	}()
	info := childInfo{URL: p.URL, Stats: "http://" + l.Addr().String() + "/", Sessions: p.Sessions}
	if err := json.NewEncoder(os.Stdout).Encode(info); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// render is the markdown table of rows: per stream and per session, and
// each peer's stream figures beyond plain net/http's at the same kind and
// heartbeat.
func render(rows []row, n int, window time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Idle streams at scale: %d per peer, server and clients in separate processes, figures of the server's process alone; "+
		"heap is HeapAlloc after two GCs, stacks StackInuse, CPU over %v with every stream idle; plain is net/http holding as many bare GETs.\n\n", n, window)
	b.WriteString("| peer | streams | heartbeat | opened | heap + stacks per stream | beyond plain | stacks per stream after the window, before a GC | RSS per stream | CPU s per minute | beyond plain | heap per session | sessions per GiB (heap) |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	plain := map[string]bench.Idle{}
	for _, r := range rows {
		if r.peer == bench.Plain && r.err == nil {
			plain[r.kind+r.heartbeat.String()] = r.idle
		}
	}
	kib := func(x float64) string { return fmt.Sprintf("%.1f KiB", x/1024) }
	for _, r := range rows {
		if r.err != nil {
			fmt.Fprintf(&b, "| %s | %s | %v | failed: %v | | | | | | | | |\n", r.peer, r.kind, r.heartbeat, r.err)
			continue
		}
		i := r.idle
		mem := i.HeapPerStream + i.StackPerStream
		beyondMem, beyondCPU := "", ""
		if pl, ok := plain[r.kind+r.heartbeat.String()]; ok && r.peer != bench.Plain {
			beyondMem = kib(mem - pl.HeapPerStream - pl.StackPerStream)
			beyondCPU = fmt.Sprintf("%.2f", i.CPUPerMin-pl.CPUPerMin)
		}
		perSess, perGiB := "n/a", "n/a"
		if i.HeapPerSession > 0 {
			perSess = kib(i.HeapPerSession)
			perGiB = fmt.Sprintf("%.0f", float64(1<<30)/i.HeapPerSession)
		}
		fmt.Fprintf(&b, "| %s | %s | %v | %d | %s | %s | %s | %s | %.2f | %s | %s | %s |\n",
			r.peer, r.kind, r.heartbeat, i.Opened, kib(mem), beyondMem, kib(i.StackAfterWindow), kib(i.RSSPerStream), i.CPUPerMin, beyondCPU, perSess, perGiB)
	}
	return b.String()
}
