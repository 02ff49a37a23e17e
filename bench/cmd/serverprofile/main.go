// Command serverprofile measures what a JSON tools/call costs each server
// on the real net/http path, apart from its clients: the servers run in
// this process, and a client child (this command again, with driveFlag)
// drives one of them at a time from a process of its own, so this
// process's CPU time over a phase is the server's alone and the child's is
// the clients'. The phases alternate between the peers (their order
// reversed every other phase), each in a fresh child; per peer it prints
// calls a second and the server's and the clients' CPU time a call, and
// for the first peer against each other one, the per-phase-pair ratios'
// median and range. With -cpuprofile it writes a CPU profile of the
// servers' process per phase (merge one peer's with go tool pprof -proto).
//
// It reports; it bounds nothing. The machine's noise moves a phase's CPU
// time a call by up to 20% between phases: compare peers only within one
// run, over many phases.
//
//	cd bench && go run ./cmd/serverprofile                           # lifeline and the floor, session era, 64 sessions, 10 phases of 3 s
//	cd bench && go run ./cmd/serverprofile -modern -cpuprofile /tmp/sp
//	go tool pprof -proto /tmp/sp.lifeline.*.pprof > /tmp/lifeline.pprof
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
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// driveFlag, as the first argument, makes this process a client child.
const driveFlag = "-drive"

// settings are a run's flags.
type settings struct {
	peers      []string
	modern     bool
	conc       int
	phases     int
	dur, warm  time.Duration
	cpuprofile string // prefix of the per-phase profiles; "" for none
	// atWindow, when set, runs just before a phase's window opens (start)
	// and just after it closes, outside it: a test's look at the server.
	atWindow func(p *bench.Peer, start bool)
}

// phase is one peer's measurement in one phase.
type phase struct {
	peer          string
	calls         int
	elapsed       time.Duration // the child's calls, first start to last end
	server        time.Duration // this process's CPU time over the phase
	client        time.Duration // the child's, over its calls
	allocBytes    uint64        // what this process allocated over the phase
	allocObjects  uint64
	clientProcess int // the child's process id
}

// childReady is what a client child prints once its sessions are open
// and its clients warm.
type childReady struct {
	PID int `json:"pid"`
}

// childResult is what a client child prints once its calls are over.
type childResult struct {
	Calls    int    `json:"calls"`
	Elapsed  int64  `json:"elapsed_ns"`
	CPU      int64  `json:"cpu_ns"`
	Errors   int    `json:"errors"`
	FirstErr string `json:"first_error,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == driveFlag {
		if err := driveChild(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			log.Fatalf("%s: %v", driveFlag, err)
		}
		return
	}
	peers := flag.String("peers", bench.Lifeline+","+bench.Floor, "comma-separated peers; the first is compared with each other one")
	modern := flag.Bool("modern", false, "speak protocol 2026-07-28 (sessionless) to the peers")
	conc := flag.Int("conc", 64, "sessions, one client each")
	phases := flag.Int("phases", 10, "phases; each measures every peer once")
	dur := flag.Duration("dur", 3*time.Second, "how long a peer is measured in a phase")
	warm := flag.Duration("warm", 500*time.Millisecond, "how long a child's clients call before the phase starts")
	cpu := flag.String("cpuprofile", "", "write a CPU profile of the servers' process per phase and peer, as PREFIX.<peer>.<phase>.pprof")
	flag.Parse()
	s := settings{peers: strings.Split(*peers, ","), modern: *modern, conc: *conc, phases: *phases, dur: *dur, warm: *warm, cpuprofile: *cpu}
	got, err := run(s, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(render(s, got))
}

// run starts the peers and measures them in s.phases phases, logging
// each measurement to progress; it returns each phase's measurements in
// the peers' order.
func run(s settings, progress io.Writer) ([][]phase, error) {
	if len(s.peers) < 1 || s.phases < 1 || s.conc < 1 || s.dur <= 0 {
		return nil, errors.New("need a peer, a phase, a client and a duration")
	}
	for i, name := range s.peers {
		if slices.Contains(s.peers[:i], name) {
			return nil, fmt.Errorf("peer %s named twice", name)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to run as the client child: %w", err)
	}
	servers := make([]*bench.Peer, len(s.peers))
	for i, name := range s.peers {
		p, err := bench.StartPeer(name, bench.Options{Heartbeat: 20 * time.Second, WriteTimeout: 10 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		defer p.Close()
		servers[i] = p.InEra(s.modern)
	}
	var got [][]phase
	for ph := range s.phases {
		order := slices.Clone(servers)
		if ph%2 == 1 {
			slices.Reverse(order)
		}
		row := make([]phase, len(servers))
		for _, p := range order {
			m, err := measure(exe, p, s, ph)
			if err != nil {
				return nil, fmt.Errorf("phase %d, %s: %w", ph, p.Name, err)
			}
			fmt.Fprintf(progress, "phase %d %s: %.0f calls/s, server %.2f µs a call, clients %.2f µs a call\n",
				ph, p.Name, rate(m.calls, m.elapsed), perCall(m.server, m.calls), perCall(m.client, m.calls))
			row[slices.Index(servers, p)] = m
		}
		got = append(got, row)
	}
	return got, nil
}

// measure runs one phase against p: a client child opens its sessions
// and warms up, then calls for s.dur while this process's CPU time and
// allocation (and, with s.cpuprofile, a CPU profile) are taken. The child
// is killed if it takes a minute longer than it should; its exit status
// is part of any error.
func measure(exe string, p *bench.Peer, s settings, ph int) (m phase, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.warm+s.dur+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, driveFlag, "-url", p.JSONURL, "-modern="+strconv.FormatBool(s.modern),
		"-conc", strconv.Itoa(s.conc), "-warm", s.warm.String(), "-dur", s.dur.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return phase{}, fmt.Errorf("the client child's stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return phase{}, fmt.Errorf("the client child's stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return phase{}, fmt.Errorf("starting the client child: %w", err)
	}
	defer func() {
		_ = stdin.Close() // the child ends its sessions and exits
		switch werr := cmd.Wait(); {
		case werr == nil:
		case err != nil:
			err = fmt.Errorf("%w (the client child: %v)", err, werr)
		default: // it reported, then failed to end its sessions
			m, err = phase{}, fmt.Errorf("the client child: %w", werr)
		}
	}()
	lines := bufio.NewReader(stdout)
	var ready childReady
	if err := readLine(lines, &ready); err != nil {
		return phase{}, fmt.Errorf("the client child did not get ready: %w", err)
	}
	// What the previous phase left to collect is collected before the
	// window, not in it.
	runtime.GC()
	if s.atWindow != nil {
		s.atWindow(p, true)
	}
	stop, err := startProfile(s.cpuprofile, p.Name, ph)
	if err != nil {
		return phase{}, err
	}
	bytes0, objects0 := allocated()
	cpu0, err := bench.ProcessCPU()
	var res childResult
	if err == nil {
		if _, err = io.WriteString(stdin, "go\n"); err == nil {
			err = readLine(lines, &res)
		}
	}
	cpu1, cerr := bench.ProcessCPU()
	bytes1, objects1 := allocated()
	if perr := stop(); err == nil {
		err = perr
	}
	if s.atWindow != nil {
		s.atWindow(p, false)
	}
	if err == nil {
		err = cerr
	}
	if err != nil {
		return phase{}, fmt.Errorf("the phase: %w", err)
	}
	if res.Errors > 0 {
		return phase{}, fmt.Errorf("%d calls failed, the first: %s", res.Errors, res.FirstErr)
	}
	if res.Calls == 0 {
		return phase{}, errors.New("no call answered")
	}
	return phase{peer: p.Name, calls: res.Calls, elapsed: time.Duration(res.Elapsed), server: cpu1 - cpu0,
		client: time.Duration(res.CPU), allocBytes: bytes1 - bytes0, allocObjects: objects1 - objects0,
		clientProcess: ready.PID}, nil
}

// readLine reads one line of JSON from r into v.
func readLine(r *bufio.Reader, v any) error {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading a line (%q so far): %w", line, err)
	}
	if err := json.Unmarshal(line, v); err != nil {
		return fmt.Errorf("the line %q: %w", line, err)
	}
	return nil
}

// allocated is what this process has allocated on the heap so far: bytes
// and objects.
func allocated() (bytes, objects uint64) {
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/allocs:objects"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64(), sample[1].Value.Uint64()
}

// startProfile starts a CPU profile into prefix.<peer>.<phase>.pprof, and
// returns what stops it; with no prefix it does nothing.
func startProfile(prefix, peer string, ph int) (stop func() error, err error) {
	if prefix == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(fmt.Sprintf("%s.%s.%d.pprof", prefix, peer, ph))
	if err != nil {
		return nil, fmt.Errorf("the CPU profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("the CPU profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		return f.Close()
	}, nil
}

// driveChild is a client child's main: it opens -conc clients' sessions
// with the peer at -url and has them call for -warm, prints its
// childReady, waits for a line on in, has them call for -dur and prints
// its childResult (its CPU time over the calls only); then it ends the
// sessions, once in closes or says more.
func driveChild(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet(driveFlag, flag.ContinueOnError)
	url := fs.String("url", "", "the peer's JSON endpoint")
	modern := fs.Bool("modern", false, "speak 2026-07-28")
	conc := fs.Int("conc", 64, "clients")
	warm := fs.Duration("warm", 500*time.Millisecond, "warm-up")
	dur := fs.Duration("dur", 3*time.Second, "the phase")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("the child's flags: %w", err)
	}
	p := &bench.Peer{Name: "peer", URL: *url, JSONURL: *url, Sessions: true, Modern: *modern}
	callers, err := bench.StartCallers(p, *conc, false)
	if err != nil {
		return fmt.Errorf("opening the sessions: %w", err)
	}
	defer callers.Close()
	if t := callers.Run(*warm, 1<<30); t.Errors > 0 {
		return fmt.Errorf("warming up: %d calls failed, the first: %s", t.Errors, t.FirstEr)
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(childReady{PID: os.Getpid()}); err != nil {
		return fmt.Errorf("saying ready: %w", err)
	}
	lines := bufio.NewReader(in)
	if _, err := lines.ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the phase: %w", err)
	}
	cpu0, err := bench.ProcessCPU()
	if err != nil {
		return fmt.Errorf("the clients' CPU time: %w", err)
	}
	t := callers.Run(*dur, 1<<30)
	cpu1, err := bench.ProcessCPU()
	if err != nil {
		return fmt.Errorf("the clients' CPU time: %w", err)
	}
	if err := enc.Encode(childResult{Calls: t.Lat.N, Elapsed: int64(t.Elapsed), CPU: int64(cpu1 - cpu0), Errors: t.Errors, FirstErr: t.FirstEr}); err != nil {
		return fmt.Errorf("reporting the phase: %w", err)
	}
	_, _ = io.Copy(io.Discard, lines) // the parent has read the result once it closes
	return nil
}

// perCall is d a call, in µs.
func perCall(d time.Duration, calls int) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(calls)
}

// rate is calls a second over d.
func rate(calls int, d time.Duration) float64 {
	return float64(calls) / d.Seconds()
}
