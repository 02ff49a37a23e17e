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
// time a call by up to 15% between phases: compare peers only within one
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
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
}

// phase is one peer's measurement in one phase.
type phase struct {
	peer   string
	calls  int
	server time.Duration // this process's CPU time over the phase
	client time.Duration // the client child's
}

// childResult is what a client child prints once its phase is over.
type childResult struct {
	Calls    int    `json:"calls"`
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
	out, err := run(s, os.Stderr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(out)
}

// run starts the peers, measures them in s.phases phases (logging each
// measurement to progress) and returns the report.
func run(s settings, progress io.Writer) (string, error) {
	if len(s.peers) < 1 || s.phases < 1 || s.conc < 1 || s.dur <= 0 {
		return "", errors.New("need a peer, a phase, a client and a duration")
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program to run as the client child: %w", err)
	}
	servers := make([]*bench.Peer, len(s.peers))
	for i, name := range s.peers {
		p, err := bench.StartPeer(name, bench.Options{Heartbeat: 20 * time.Second, WriteTimeout: 10 * time.Second})
		if err != nil {
			return "", fmt.Errorf("starting %s: %w", name, err)
		}
		defer p.Close()
		servers[i] = p.InEra(s.modern)
	}
	var got [][]phase // per phase, in the peers' order
	for ph := range s.phases {
		order := slices.Clone(servers)
		if ph%2 == 1 {
			slices.Reverse(order)
		}
		row := make([]phase, len(servers))
		for _, p := range order {
			m, err := measure(exe, p, s, ph)
			if err != nil {
				return "", fmt.Errorf("phase %d, %s: %w", ph, p.Name, err)
			}
			fmt.Fprintf(progress, "phase %d %s: %.0f calls/s, server %.2f µs a call, clients %.2f µs a call\n",
				ph, p.Name, float64(m.calls)/s.dur.Seconds(), perCall(m.server, m.calls), perCall(m.client, m.calls))
			row[slices.Index(servers, p)] = m
		}
		got = append(got, row)
	}
	return render(s, got), nil
}

// measure runs one phase against p: a client child warms up, then calls
// for s.dur while this process's CPU time (and, with s.cpuprofile, a CPU
// profile) is taken. The child is killed if it takes a minute longer
// than it should.
func measure(exe string, p *bench.Peer, s settings, ph int) (phase, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.warm+s.dur+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, driveFlag, "-url", p.JSONURL, "-modern="+strconv.FormatBool(s.modern),
		"-conc", strconv.Itoa(s.conc), "-warm", s.warm.String(), "-dur", s.dur.String())
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return phase{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return phase{}, err
	}
	if err := cmd.Start(); err != nil {
		return phase{}, fmt.Errorf("starting the client child: %w", err)
	}
	defer func() {
		_ = stdin.Close()
		_ = cmd.Wait()
	}()
	lines := bufio.NewReader(stdout)
	if line, err := lines.ReadString('\n'); err != nil || line != "ready\n" {
		return phase{}, fmt.Errorf("the client child did not get ready: %q, %v", line, err)
	}
	stop, err := startProfile(s.cpuprofile, p.Name, ph)
	if err != nil {
		return phase{}, err
	}
	cpu0 := processCPU()
	_, err = io.WriteString(stdin, "go\n")
	var line []byte
	if err == nil {
		line, err = lines.ReadBytes('\n')
	}
	server := processCPU() - cpu0
	if perr := stop(); err == nil {
		err = perr
	}
	if err != nil {
		return phase{}, fmt.Errorf("the client child's phase: %w", err)
	}
	var res childResult
	if err := json.Unmarshal(line, &res); err != nil {
		return phase{}, fmt.Errorf("the client child's result %q: %w", line, err)
	}
	if res.Errors > 0 {
		return phase{}, fmt.Errorf("%d calls failed, the first: %s", res.Errors, res.FirstErr)
	}
	if res.Calls == 0 {
		return phase{}, errors.New("no call answered")
	}
	return phase{peer: p.Name, calls: res.Calls, server: server, client: time.Duration(res.CPU)}, nil
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

// driveChild is a client child's main: its clients call the peer at -url
// for -warm, then it prints "ready", waits for a line on in, calls for
// -dur and prints its childResult. Its clients' sessions are set up and
// ended inside the phase (an initialize and a DELETE each in the session
// era), a few dozen requests against the thousands a phase makes.
func driveChild(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet(driveFlag, flag.ContinueOnError)
	url := fs.String("url", "", "the peer's JSON endpoint")
	modern := fs.Bool("modern", false, "speak 2026-07-28")
	conc := fs.Int("conc", 64, "clients")
	warm := fs.Duration("warm", 500*time.Millisecond, "warm-up")
	dur := fs.Duration("dur", 3*time.Second, "the phase")
	if err := fs.Parse(args); err != nil {
		return err
	}
	p := &bench.Peer{Name: "peer", URL: *url, JSONURL: *url, Sessions: true, Modern: *modern}
	if _, err := bench.MeasureThroughput(p, *conc, false, *warm, 1<<30); err != nil {
		return fmt.Errorf("warming up: %w", err)
	}
	if _, err := io.WriteString(out, "ready\n"); err != nil {
		return err
	}
	if _, err := bufio.NewReader(in).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the phase: %w", err)
	}
	cpu0 := processCPU()
	t, err := bench.MeasureThroughput(p, *conc, false, *dur, 1<<30)
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(childResult{Calls: t.Lat.N, CPU: int64(processCPU() - cpu0), Errors: t.Errors, FirstErr: t.FirstEr})
}

// processCPU is this process's CPU time, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// perCall is d a call, in µs.
func perCall(d time.Duration, calls int) float64 {
	return float64(d.Nanoseconds()) / 1e3 / float64(calls)
}
