package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/bench"
)

// TestMain makes the test binary a server child when measure starts it
// as one (measure re-executes its own binary with serveFlag), and checks
// for leaked goroutines otherwise.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == serveFlag {
		if err := serveChild(os.Args[2:]); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// A smoke run of the harness, the server in a child process: a few idle
// streams of each kind against lifeline and plain, each figure read from
// the child, and the table rendered. It reports; it gates on no number.
func TestSmallScaleRun(t *testing.T) {
	const n = 20
	var rows []row
	for _, kind := range []string{"get", "listen"} {
		for _, peer := range []string{bench.Lifeline, bench.Plain} {
			idle, err := measure(peer, kind, n, 200*time.Millisecond, time.Second)
			if err != nil {
				t.Fatalf("%s %s: %v", peer, kind, err)
			}
			if idle.Opened != n {
				t.Fatalf("%s %s: %d of %d streams opened", peer, kind, idle.Opened, n)
			}
			rows = append(rows, row{peer: peer, kind: kind, heartbeat: time.Second, idle: idle})
		}
	}
	out := render(rows, n, 200*time.Millisecond)
	if !strings.Contains(out, "| lifeline | get | 1s | 20 |") || !strings.Contains(out, "| plain | listen |") {
		t.Fatalf("table:\n%s", out)
	}
}
