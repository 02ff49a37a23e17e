// Command otelcost measures what OpenTelemetry costs lifeline: tools/call
// answered as JSON at -conc sessions (64), on two lifeline peers in one
// process, measured in turn for -dur each, -rounds rounds, the order
// alternating: one with nothing installed (the default: the globals, no
// provider), one with an SDK MeterProvider (a ManualReader, which
// aggregates every measurement in memory) and an SDK TracerProvider that
// samples every span (AlwaysSample) and batches them to an exporter that
// drops them. It prints the median req/s of each and the median of the
// per-round ratios (SDK / default): the rule is that the ratio
// stays above 0.95.
//
//	cd bench && go run ./cmd/otelcost [-rounds 9] [-dur 2s] [-conc 64]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifeline-mcp/lifeline/bench"
)

// dropExporter is a span exporter that drops what it is given.
type dropExporter struct{}

func (dropExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropExporter) Shutdown(context.Context) error                             { return nil }

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func main() {
	rounds := flag.Int("rounds", 9, "rounds")
	dur := flag.Duration("dur", 2*time.Second, "measurement per peer per round")
	conc := flag.Int("conc", 64, "sessions, one client each")
	with := flag.String("with", "both", "what the SDK peer installs: metrics, traces or both")
	flag.Parse()

	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(dropExporter{}))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	}()
	o := bench.Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second}
	def, err := bench.StartPeer(bench.Lifeline, o)
	if err != nil {
		log.Fatal(err)
	}
	defer def.Close()
	switch *with {
	case "metrics":
		o.MeterProvider = mp
	case "traces":
		o.TracerProvider = tp
	case "both":
		o.MeterProvider, o.TracerProvider = mp, tp
	default:
		log.Fatalf("-with must be metrics, traces or both, not %q", *with)
	}
	otel, err := bench.StartPeer(bench.Lifeline, o)
	if err != nil {
		log.Fatal(err)
	}
	defer otel.Close()

	var defRPS, otelRPS, ratios []float64
	for r := range *rounds {
		order := []*bench.Peer{def, otel}
		if r%2 == 1 {
			order = []*bench.Peer{otel, def}
		}
		got := map[*bench.Peer]float64{}
		for _, p := range order {
			t, err := bench.MeasureThroughput(p, *conc, false, *dur, 5000000)
			if err != nil {
				log.Fatalf("round %d: %v", r, err)
			}
			if t.Errors > 0 {
				log.Fatalf("round %d: %d errors, the first: %s", r, t.Errors, t.FirstEr)
			}
			got[p] = t.RPS
		}
		defRPS, otelRPS = append(defRPS, got[def]), append(otelRPS, got[otel])
		ratios = append(ratios, got[otel]/got[def])
		fmt.Printf("round %d: default %.0f req/s, SDK %.0f req/s, ratio %.3f\n", r, got[def], got[otel], got[otel]/got[def])
	}
	fmt.Printf("OTELCOST with=%s conc=%d rounds=%d dur=%v default=%.0f sdk=%.0f ratio=%.3f (min %.3f, max %.3f)\n",
		*with, *conc, *rounds, *dur, median(defRPS), median(otelRPS), median(ratios), slices.Min(ratios), slices.Max(ratios))
}
