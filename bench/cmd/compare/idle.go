package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// The idle phase of each peer runs in a fresh child process, the compare
// binary itself started with idleChildFlag as its first argument. The runtime
// never frees goroutine descriptors (g structs, on the heap): in a shared
// process the first peer to hold N streams would pay for new ones and every
// later peer would reuse them, so heap per stream would depend on the order
// the peers run in.
const (
	idleChildFlag = "-idle-child"
	// idleChildTimeout bounds a child: the full run's 9000 streams and CPU
	// window take well under a minute.
	idleChildTimeout = 5 * time.Minute
)

// isIdleChild reports whether this process was started by measureIdle.
func isIdleChild() bool { return len(os.Args) > 1 && os.Args[1] == idleChildFlag }

// idleChildMain is main for a child measureIdle started: it exits non-zero,
// the error on stderr, when the measurement failed.
func idleChildMain() {
	if err := runIdleChild(os.Args[2:]); err != nil {
		log.Fatalf("%s: %v", idleChildFlag, err)
	}
}

// idleChildArgs is the command line of the child that measures peer name:
// n idle GET streams, or n idle 2026-07-28 listen streams when listen is
// set.
func idleChildArgs(name string, listen bool, n int, window, heartbeat, writeTime time.Duration) []string {
	return []string{idleChildFlag, name,
		"-n", strconv.Itoa(n),
		"-window", window.String(),
		"-heartbeat", heartbeat.String(),
		"-write-timeout", writeTime.String(),
		"-listen=" + strconv.FormatBool(listen),
	}
}

// measureIdle runs bench.MeasureIdle for peer name in a fresh child process
// and returns what it measured. The child's stderr goes to ours.
func measureIdle(name string, s settings) (bench.Idle, error) {
	return measureIdleChild(name, false, s.idleN, s.cpuWindow, s.heartbeat, s.writeTime)
}

// measureIdleChild runs bench.MeasureIdle (bench.MeasureListenIdle when
// listen is set) for peer name with n streams in a fresh child process and
// returns what it measured. The child's stderr goes to ours.
func measureIdleChild(name string, listen bool, n int, window, heartbeat, writeTime time.Duration) (bench.Idle, error) {
	exe, err := os.Executable()
	if err != nil {
		return bench.Idle{}, fmt.Errorf("idle child: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), idleChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, idleChildArgs(name, listen, n, window, heartbeat, writeTime)...)
	stderr := &tail{max: 512}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.Output()
	if err != nil {
		return bench.Idle{}, fmt.Errorf("idle child for %s: %w (%s)", name, err, stderr.lastLine())
	}
	var idle bench.Idle
	if err := json.Unmarshal(out, &idle); err != nil {
		return bench.Idle{}, fmt.Errorf("idle child for %s: parsing %q: %w", name, out, err)
	}
	return idle, nil
}

// tail copies everything to os.Stderr and keeps the last max bytes.
type tail struct {
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return os.Stderr.Write(p)
}

// lastLine is the last non-empty line kept, or "no stderr".
func (t *tail) lastLine() string {
	lines := strings.Split(string(bytes.TrimSpace(t.buf)), "\n")
	if l := lines[len(lines)-1]; l != "" {
		return l
	}
	return "no stderr"
}

// runIdleChild is the child's main: it parses the arguments idleChildArgs
// made, starts the peer as runPeer does, measures it with bench.MeasureIdle
// (bench.MeasureListenIdle with -listen)
// and writes the bench.Idle as JSON on stdout.
func runIdleChild(args []string) error {
	if len(args) == 0 {
		return errors.New("no peer name")
	}
	name := args[0]
	fs := flag.NewFlagSet(idleChildFlag, flag.ContinueOnError)
	n := fs.Int("n", 0, "idle streams")
	window := fs.Duration("window", 0, "CPU window")
	heartbeat := fs.Duration("heartbeat", 0, "heartbeat interval")
	writeTime := fs.Duration("write-timeout", 0, "lifeline write timeout")
	listen := fs.Bool("listen", false, "idle 2026-07-28 listen streams instead of GET streams")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	p, err := bench.StartPeer(name, bench.Options{Heartbeat: *heartbeat, WriteTimeout: *writeTime})
	if err != nil {
		return err
	}
	defer p.Close()
	measure := bench.MeasureIdle
	if *listen {
		measure = bench.MeasureListenIdle
	}
	idle, err := measure(p, *n, *window)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(idle); err != nil {
		return fmt.Errorf("writing the result: %w", err)
	}
	return nil
}

// idlePhase measures peer name's idle streams (in a child process) into r.
func idlePhase(name string, s settings, r *peerResult, fail func(string, error)) {
	var err error
	if r.idle, err = measureIdle(name, s); err != nil {
		fail("idle", err)
		return
	}
	r.idleOK = true
	logf("%-8s idle %d/%d: %.2f goroutines/stream %.0f B heap/stream %.0f B stack/stream, %.2f goroutines/session %.0f B heap/session, %.2f CPU s/min",
		name, r.idle.Opened, r.idle.N, r.idle.GoroutinesPerStream, r.idle.HeapPerStream, r.idle.StackPerStream,
		r.idle.GoroutinesPerSess, r.idle.HeapPerSession, r.idle.CPUPerMin)
}
