package soak_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/soak"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// The soak runs briefly with connection cuts against one replica and
// against three (kills and drains have tests of their own, and the long
// runs are in BENCHMARKS.md), loses nothing, and reports its figures on
// one line.
func TestSoakBrief(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH (Debian package redis-server): %v", err)
	}
	for _, run := range []struct {
		replicas int
		cuts     bool
	}{{1, true}, {3, true}} {
		replicas := run.replicas
		ctx := testutil.Context(t, 2*wait)
		sum, err := soak.Run(ctx, soak.Options{
			Clients: 2, Replicas: replicas, Duration: 3 * time.Second, Cuts: run.cuts, Seed: 12,
			Binary: demoBinary, Dir: t.TempDir(), Logf: t.Logf,
		})
		if err != nil {
			t.Fatal(err)
		}
		line := sum.String()
		t.Log(line)
		if !sum.OK() || sum.Calls == 0 || sum.NotesSent == 0 || sum.NotesReceived != sum.NotesSent {
			t.Errorf("%d replicas: %s; want calls made and nothing lost, duplicated, refused, failed or hung", replicas, line)
		}
		if run.cuts && sum.ProxyCuts == 0 {
			t.Errorf("%d replicas: the proxy cut no connection: %s", replicas, line)
		}
		if strings.Contains(line, "\n") || !strings.Contains(line, "goroutines=") || !strings.Contains(line, "heap=") {
			t.Errorf("the summary is not one line with the replicas' figures: %q", line)
		}
		if sum.Start.Goroutines == 0 || sum.End.HeapAlloc == 0 {
			t.Errorf("%d replicas: figures not read from /debug/pprof/: start %+v end %+v", replicas, sum.Start, sum.End)
		}
	}
}
