// Command lifeline-soak runs lifeline-demo replicas under load and faults
// for a while and prints one summary line of what the clients lost.
//
//	go run ./cmd/lifeline-soak [-clients 4] [-replicas 1|3] [-duration 1m]
//	    [-cuts on|off] [-kills on|off] [-drains on|off] [-store redis|memory]
//	    [-seed 1] [-cut-mean 32768] [-kill-every 20s] [-drain-every 30s] [-v]
//
// It builds the demo, starts a redis-server (it must be on PATH unless
// -store memory, which needs -replicas 1) and the replicas behind a
// round-robin fault proxy, all on 127.0.0.1, then runs -clients resuming
// raw MCP clients (testutil.ResumingClient) for -duration: each calls
// lifeline_progress (5 progress and 5 log notifications on the call's own
// stream) and lifeline_notify_session (10 notifications on the session's
// GET stream, each tagged with the call and a sequence number) in turn.
// The clients resume a cut GET stream, and a cut call's stream, with
// Last-Event-ID, and re-initialize on 404. With -cuts on the proxy cuts
// connections at seeded random points (exponential, mean -cut-mean bytes
// from the server); with -kills on a replica is killed with SIGKILL every
// -kill-every and restarted a second later; with -drains on one is sent
// SIGTERM every -drain-every and restarted once it exited (a rolling
// restart). At the end it waits up to 15 s for notifications still on
// their way, deletes the sessions, and prints:
//
//	lifeline-soak: replicas=3 store=redis clients=4 duration=5m0s cuts=on kills=on drains=on
//	  | calls=… failures=… hung=… retries=… reinits=… post_resumes=… get_reconnects=…
//	  | notifications sent=… received=… lost=… duplicated=… unexpected=… refused=…
//	  | faults proxy_cuts=… kills=… drains=… fault_errors=…
//	  | replicas goroutines=start->end heap=start->end
//
// (one line). calls counts tool calls; failures those that ended without a
// result; hung those with no answer within 30 s; retries requests sent
// again after getting no answer at all (a new request: a tool's first run
// may have happened, and notifications it sent count as unexpected, not
// as duplicates); reinits sessions the server had lost (404).
// Notifications: sent is what the calls that answered said they sent,
// received those of them that arrived (each counted once), lost the rest,
// duplicated the arrivals beyond the first, refused those the server
// refused to queue. Goroutines and heap (HeapAlloc after a GC) are summed
// over the replicas, read from their /debug/pprof/ at the start and at the
// end (after the sessions were deleted; a replica restarted meanwhile
// starts afresh).
//
// The exit status is 1 if anything was lost, duplicated, refused, hung or
// failed, 2 if the soak itself could not run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/lifeline-mcp/lifeline/internal/soak"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run parses args, runs the soak and prints its summary line on stdout;
// it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lifeline-soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o soak.Options
	fs.IntVar(&o.Clients, "clients", 4, "concurrent clients")
	fs.IntVar(&o.Replicas, "replicas", 1, "demo replicas (1 or more; 3 for a cluster)")
	fs.DurationVar(&o.Duration, "duration", time.Minute, "how long the load runs")
	cuts := fs.String("cuts", "off", "on: the proxy cuts connections at random points")
	kills := fs.String("kills", "off", "on: replicas are killed with SIGKILL and restarted")
	drains := fs.String("drains", "off", "on: replicas are drained with SIGTERM and restarted, one by one")
	store := fs.String("store", "redis", "redis (shared, needs redis-server on PATH) or memory (one replica)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the random cuts")
	fs.Int64Var(&o.CutMeanBytes, "cut-mean", soak.DefaultCutMeanBytes, "mean bytes from the server before a random cut")
	fs.DurationVar(&o.KillEvery, "kill-every", soak.DefaultKillEvery, "time between kills")
	fs.DurationVar(&o.DrainEvery, "drain-every", soak.DefaultDrainEvery, "time between drains")
	verbose := fs.Bool("v", false, "log each fault and each client's trouble on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var err error
	if o.Cuts, err = onOff("-cuts", *cuts); err == nil {
		if o.Kills, err = onOff("-kills", *kills); err == nil {
			o.Drains, err = onOff("-drains", *drains)
		}
	}
	switch {
	case err != nil:
	case *store != "redis" && *store != "memory":
		err = fmt.Errorf("-store must be redis or memory, not %q", *store)
	case o.Clients < 1 || o.Replicas < 1 || o.Duration <= 0:
		err = fmt.Errorf("-clients and -replicas must be at least 1 and -duration positive")
	}
	if err != nil {
		fmt.Fprintln(stderr, "lifeline-soak:", err)
		return 2
	}
	o.Memory = *store == "memory"
	if *verbose {
		l := log.New(stderr, "", log.Ltime|log.Lmicroseconds)
		o.Logf = l.Printf
	}
	sum, err := soak.Run(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "lifeline-soak:", err)
		return 2
	}
	fmt.Fprintln(stdout, sum)
	if !sum.OK() {
		return 1
	}
	return 0
}

func onOff(flagName, v string) (bool, error) {
	switch v {
	case "on":
		return true, nil
	case "off":
		return false, nil
	}
	return false, fmt.Errorf("%s must be on or off, not %q", flagName, v)
}
