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
// -peers lifeline,floor measures the same pair for the mcp-go floor too,
// given the least telemetry the MCP conventions ask for (one span, one
// duration record, nothing parsed): what the SDK itself costs a request,
// in the same rounds, so the two ratios compare.
//
//	cd bench && go run ./cmd/otelcost [-rounds 9] [-dur 2s] [-conc 64] [-with both] [-peers lifeline,floor]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lifeline-mcp/lifeline/bench"
)

// dropExporter is a span exporter that drops what it is given.
type dropExporter struct{}

func (dropExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (dropExporter) Shutdown(context.Context) error                             { return nil }

// dropProcessor is a span processor that drops every span as it ends.
type dropProcessor struct{}

func (dropProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropProcessor) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropProcessor) Shutdown(context.Context) error                  { return nil }
func (dropProcessor) ForceFlush(context.Context) error                { return nil }

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

func main() {
	rounds := flag.Int("rounds", 9, "rounds")
	dur := flag.Duration("dur", 2*time.Second, "measurement per peer per round")
	conc := flag.Int("conc", 64, "sessions, one client each")
	with := flag.String("with", "both", "what the SDK peer installs: metrics, traces or both")
	processor := flag.String("processor", "batch", "the TracerProvider's span processor: batch (WithBatcher to a dropping exporter), none (a processor that drops each ended span at once)")
	peerList := flag.String("peers", bench.Lifeline, "comma-separated: lifeline, floor (the mcp-go floor with the least telemetry the conventions ask for: what the SDK alone costs)")
	flag.Parse()

	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithSampler(sdktrace.AlwaysSample())}
	switch *processor {
	case "batch":
		tpOpts = append(tpOpts, sdktrace.WithBatcher(dropExporter{}))
	case "none":
		tpOpts = append(tpOpts, sdktrace.WithSpanProcessor(dropProcessor{}))
	default:
		log.Fatalf("-processor must be batch or none, not %q", *processor)
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
		_ = mp.Shutdown(ctx)
	}()
	o := bench.Options{Heartbeat: time.Second, WriteTimeout: 10 * time.Second}
	withSDK := o
	switch *with {
	case "metrics":
		withSDK.MeterProvider = mp
	case "traces":
		withSDK.TracerProvider = tp
	case "both":
		withSDK.MeterProvider, withSDK.TracerProvider = mp, tp
	default:
		log.Fatalf("-with must be metrics, traces or both, not %q", *with)
	}
	var pairs []*pair
	for _, name := range strings.Split(*peerList, ",") {
		def, err := bench.StartPeer(name, o)
		if err != nil {
			log.Fatal(err)
		}
		defer def.Close()
		sdk, err := bench.StartPeer(name, withSDK)
		if err != nil {
			log.Fatal(err)
		}
		defer sdk.Close()
		pairs = append(pairs, &pair{name: name, def: def, sdk: sdk})
	}
	for r := range *rounds {
		for i := range pairs {
			pr := pairs[(r+i)%len(pairs)]
			order := []*bench.Peer{pr.def, pr.sdk}
			if r%2 == 1 {
				order = []*bench.Peer{pr.sdk, pr.def}
			}
			got := map[*bench.Peer]float64{}
			for _, p := range order {
				t, err := bench.MeasureThroughput(p, *conc, false, *dur, 5000000)
				if err != nil {
					log.Fatalf("round %d, %s: %v", r, pr.name, err)
				}
				if t.Errors > 0 {
					log.Fatalf("round %d, %s: %d errors, the first: %s", r, pr.name, t.Errors, t.FirstEr)
				}
				got[p] = t.RPS
			}
			pr.defRPS, pr.sdkRPS = append(pr.defRPS, got[pr.def]), append(pr.sdkRPS, got[pr.sdk])
			pr.ratios = append(pr.ratios, got[pr.sdk]/got[pr.def])
			fmt.Printf("round %d %s: default %.0f req/s, SDK %.0f req/s, ratio %.3f\n", r, pr.name, got[pr.def], got[pr.sdk], got[pr.sdk]/got[pr.def])
		}
	}
	for _, pr := range pairs {
		fmt.Printf("OTELCOST peer=%s with=%s conc=%d rounds=%d dur=%v default=%.0f sdk=%.0f ratio=%.3f (min %.3f, max %.3f)\n",
			pr.name, *with, *conc, *rounds, *dur, median(pr.defRPS), median(pr.sdkRPS), median(pr.ratios), slices.Min(pr.ratios), slices.Max(pr.ratios))
	}
}

// pair is one peer without and with the SDK, and what the rounds measured.
type pair struct {
	name                   string
	def, sdk               *bench.Peer
	defRPS, sdkRPS, ratios []float64
}
