package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
// answers calls in every phase, the servers' and the clients' CPU time is
// read for each, a profile is written per phase and peer, and the report
// compares the first peer with the second. It reports; it gates on no
// number.
func TestSmallRun(t *testing.T) {
	for _, modern := range []bool{false, true} {
		prefix := filepath.Join(t.TempDir(), "sp")
		s := settings{peers: []string{bench.Lifeline, bench.Floor}, modern: modern, conc: 4, phases: 2,
			dur: 200 * time.Millisecond, warm: 50 * time.Millisecond, cpuprofile: prefix}
		var progress bytes.Buffer
		out, err := run(s, &progress)
		if err != nil {
			t.Fatalf("modern %v: %v\n%s", modern, err, progress.String())
		}
		// Both phases measured both peers, the second in the other order.
		for _, want := range []string{"phase 0 lifeline:", "phase 0 floor:", "phase 1 floor:", "phase 1 lifeline:"} {
			if !strings.Contains(progress.String(), want) {
				t.Errorf("modern %v: no %q in the progress:\n%s", modern, want, progress.String())
			}
		}
		if i, j := strings.Index(progress.String(), "phase 1 floor:"), strings.Index(progress.String(), "phase 1 lifeline:"); i > j {
			t.Errorf("modern %v: phase 1 measured lifeline first:\n%s", modern, progress.String())
		}
		for _, peer := range s.peers {
			for ph := range s.phases {
				fi, err := os.Stat(fmt.Sprintf("%s.%s.%d.pprof", prefix, peer, ph))
				if err != nil || fi.Size() == 0 {
					t.Errorf("modern %v: %s's profile of phase %d: %v", modern, peer, ph, err)
				}
			}
		}
		if !strings.Contains(out, "| lifeline | ") || !strings.Contains(out, "| floor | ") ||
			!strings.Contains(out, "lifeline against floor, the median of 2 phases' ratios") {
			t.Fatalf("modern %v: report:\n%s", modern, out)
		}
		rows := tableRow.FindAllStringSubmatch(out, -1)
		if len(rows) != len(s.peers) {
			t.Fatalf("modern %v: %d rows for %d peers in the report:\n%s", modern, len(rows), len(s.peers), out)
		}
		for _, row := range rows {
			for _, v := range row[2:] {
				if f, err := strconv.ParseFloat(v, 64); err != nil || !(f > 0) {
					t.Errorf("modern %v: %s: a figure is %q, want a positive number:\n%s", modern, row[1], v, out)
				}
			}
		}
		if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("modern %v: a ratio is undefined:\n%s", modern, out)
		}
	}
}

// tableRow is a peer's row of the report's table: its name, calls/s, and
// the server's and the clients' CPU a call.
var tableRow = regexp.MustCompile(`\| (\S+) \| (\S+) \| (\S+) µs \| (\S+) µs \|`)

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
