package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/bench"
)

// TestMain makes the test binary a client child when measure starts it
// as one (measure re-executes its own binary with driveFlag), and checks
// for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == driveFlag {
		if err := driveChild(os.Args[2:], os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// A smoke run in either era, the clients in child processes: each peer
// answers calls in every phase from a process other than this one, with
// its sessions opened before the phase's window and ended after it, the
// servers' and the clients' CPU time and the servers' allocation are read
// for each, a profile is written per phase and peer, and the report
// compares the first peer with the second. It reports; it gates on no
// number.
func TestSmallRun(t *testing.T) {
	for _, modern := range []bool{false, true} {
		prefix := filepath.Join(t.TempDir(), "sp")
		s := settings{peers: []string{bench.Lifeline, bench.Floor}, modern: modern, conc: 4, phases: 2,
			dur: 200 * time.Millisecond, warm: 50 * time.Millisecond, cpuprofile: prefix}
		// The window holds calls only: lifeline's sessions (session era)
		// are all open when it opens and still open when it closes.
		var windowSessions []int
		s.atWindow = func(p *bench.Peer, _ bool) {
			if p.Handler != nil && !modern {
				windowSessions = append(windowSessions, p.Handler.Stats().Sessions)
			}
		}
		var progress bytes.Buffer
		got, err := run(s, &progress)
		if err != nil {
			t.Fatalf("modern %v: %v\n%s", modern, err, progress.String())
		}
		if len(got) != s.phases {
			t.Fatalf("modern %v: %d phases measured, want %d", modern, len(got), s.phases)
		}
		for ph, row := range got {
			for i, m := range row {
				if m.peer != s.peers[i] {
					t.Errorf("modern %v: phase %d's measurement %d is %s's, want %s's", modern, ph, i, m.peer, s.peers[i])
				}
				if m.calls <= 0 || m.elapsed <= 0 || m.server <= 0 || m.client <= 0 || m.allocBytes == 0 || m.allocObjects == 0 {
					t.Errorf("modern %v: phase %d, %s: a figure is not positive: %+v", modern, ph, m.peer, m)
				}
				if m.clientProcess == 0 || m.clientProcess == os.Getpid() {
					t.Errorf("modern %v: phase %d, %s: the clients ran in process %d, this one is %d", modern, ph, m.peer, m.clientProcess, os.Getpid())
				}
				fi, err := os.Stat(fmt.Sprintf("%s.%s.%d.pprof", prefix, m.peer, ph))
				if err != nil || fi.Size() == 0 {
					t.Errorf("modern %v: %s's profile of phase %d: %v", modern, m.peer, ph, err)
				}
			}
		}
		if !modern && (len(windowSessions) != 2*s.phases || slices.ContainsFunc(windowSessions, func(n int) bool { return n != s.conc })) {
			t.Errorf("lifeline's live sessions at its windows' edges: %v, want %d at each of %d", windowSessions, s.conc, 2*s.phases)
		}
		// The second phase measured the peers in the other order.
		if i, j := strings.Index(progress.String(), "phase 1 floor:"), strings.Index(progress.String(), "phase 1 lifeline:"); i < 0 || j < 0 || i > j {
			t.Errorf("modern %v: phase 1 did not measure the floor, then lifeline:\n%s", modern, progress.String())
		}
		out := render(s, got)
		if !strings.Contains(out, "| lifeline | ") || !strings.Contains(out, "| floor | ") ||
			!strings.Contains(out, "lifeline against floor, the median of 2 phases' ratios") ||
			strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Fatalf("modern %v: report:\n%s", modern, out)
		}
	}
}

// A peer named twice is refused before anything starts.
func TestPeerNamedTwice(t *testing.T) {
	s := settings{peers: []string{bench.Lifeline, bench.Lifeline}, conc: 1, phases: 1, dur: time.Millisecond}
	if _, err := run(s, io.Discard); err == nil || !strings.Contains(err.Error(), "named twice") {
		t.Fatalf("run with a peer named twice: %v", err)
	}
}

// The ratios' median and range.
func TestSpread(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want string
	}{
		{[]float64{1}, "1.000x (1.00-1.00)"},
		{[]float64{1.1, 0.9, 1.0}, "1.000x (0.90-1.10)"},
		{[]float64{0.9, 1.0, 1.2, 0.95}, "0.975x (0.90-1.20)"},
	} {
		if got := spread(c.v); got != c.want {
			t.Errorf("spread(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
