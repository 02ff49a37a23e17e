package main

import (
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/lifeline-mcp/lifeline/bench"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMedian checks odd, even and empty inputs, and that the input is left
// as it was.
func TestMedian(t *testing.T) {
	xs := []float64{3, 1, 2}
	if got := median(xs); got != 2 {
		t.Errorf("median(3,1,2) = %v, want 2", got)
	}
	if xs[0] != 3 {
		t.Errorf("median sorted its input: %v", xs)
	}
	if got := median([]float64{4, 1, 2, 3}); got != 2.5 {
		t.Errorf("median(4,1,2,3) = %v, want 2.5", got)
	}
	if got := median(nil); got != 0 {
		t.Errorf("median(nil) = %v, want 0", got)
	}
	if s := spreadOf([]float64{1.3, 1.1, 1.2}); s != (spread{med: 1.2, lo: 1.1, hi: 1.3, n: 3}) || s.ratioText() != "1.20x (1.10–1.30)" {
		t.Errorf("spreadOf = %+v, %q", s, s.ratioText())
	}
	if got := spreadOf([]float64{0.998, 0.99, 1.25}).verdictText(); got != "0.998x (0.99–1.25)" {
		t.Errorf("verdictText = %q", got)
	}
	if s := spreadOf(nil); s.n != 0 || s.ratioText() != "n/a" {
		t.Errorf("spreadOf(nil) = %+v, %q", s, s.ratioText())
	}
}

// TestShuffledOrder checks that each order is a permutation of the
// variants, and that over rounds a variant follows more than one other.
func TestShuffledOrder(t *testing.T) {
	vs := []string{"a", "b", "c", "d", "e"}
	rng := rand.New(rand.NewPCG(1, 0))
	before := map[string]bool{} // what "a" was measured after
	for range 20 {
		order := shuffledOrder(vs, rng)
		if got := slices.Sorted(slices.Values(order)); !slices.Equal(got, vs) {
			t.Fatalf("order %v is not a permutation of %v", order, vs)
		}
		if i := slices.Index(order, "a"); i > 0 {
			before[order[i-1]] = true
		}
	}
	if len(before) < 2 {
		t.Errorf("over 20 rounds, a followed only %v", before)
	}
	if !slices.Equal(vs, []string{"a", "b", "c", "d", "e"}) {
		t.Errorf("shuffledOrder changed its argument: %v", vs)
	}
	// The same seed draws the same orders (-order-seed replays a run).
	a, b := rand.New(rand.NewPCG(7, 0)), rand.New(rand.NewPCG(7, 0))
	for i := range 5 {
		if x, y := shuffledOrder(vs, a), shuffledOrder(vs, b); !slices.Equal(x, y) {
			t.Fatalf("draw %d from the same seed: %v and %v", i, x, y)
		}
	}
}

// TestApplies checks which cells each kind of variant is measured in.
func TestApplies(t *testing.T) {
	byLabel := map[string]variant{}
	for _, v := range allVariants {
		byLabel[v.label] = v
	}
	label := func(vs []variant) string {
		var out []string
		for _, v := range vs {
			out = append(out, v.label)
		}
		return strings.Join(out, ",")
	}
	if got := label(variantsOf(cellChurn, allVariants)); got != "lifeline,mcp-go,go-sdk,lifeline on Redis" {
		t.Errorf("churn: %s", got)
	}
	if got := label(variantsOf(cellSSE16, allVariants)); strings.Contains(got, vFloor) || strings.Contains(got, vMetrics) || !strings.Contains(got, vLifelineModern) {
		t.Errorf("sse-16: %s", got)
	}
	if got := variantsOf(cellJSON64, allVariants); len(got) != len(allVariants) {
		t.Errorf("json-64: %s, want every variant", label(got))
	}
	if got := label(variantsOf(cellJSON16, allVariants)); strings.Contains(got, vNoEventLog) || !strings.Contains(got, vFloor) || !strings.Contains(got, vFloorModern) {
		t.Errorf("json-16: %s", got)
	}
	// The floor answers JSON only, in either era; with MCPServer's header
	// checks, and with a session per request, it is measured where the
	// 2026-07-28 floor targets are.
	for _, c := range []cellSpec{cellSSE1, cellSSE16, cellSSE64, cellChurn} {
		if applies(c, byLabel[vFloorModern]) {
			t.Errorf("%s measured for %s", c.key(), vFloorModern)
		}
	}
	for _, c := range allCells {
		for _, v := range []string{vFloorChecked, vFloorSession, vFloorTwin} {
			if want := c == cellJSON16 || c == cellJSON64; applies(c, byLabel[v]) != want {
				t.Errorf("%s measured for %s: %v, want %v", c.key(), v, !want, want)
			}
		}
	}
	if got := label(selectVariants([]string{bench.Lifeline, bench.MCPGo}, true)); strings.Contains(got, vRedis) || strings.Contains(got, vGoSDK) || !strings.Contains(got, vMCPGoModern) {
		t.Errorf("selectVariants(lifeline, mcp-go, no redis): %s", got)
	}
}

// roundsOf builds an interleaved result of JSON at 64 sessions from req/s
// per round.
func roundsOf(rps ...map[string]float64) *interleaved {
	iv := &interleaved{cells: quickCells, absent: map[string]string{}}
	for _, r := range rps {
		rd := map[string]map[string]sample{cellJSON64.key(): {}}
		for label, v := range r {
			rd[cellJSON64.key()][label] = sample{rps: v, p50: time.Duration(1e9 / v)}
		}
		iv.rounds = append(iv.rounds, rd)
	}
	return iv
}

// TestRatiosAndRatioLine checks that a ratio is the median of the per-round
// ratios, skipping a round that missed a peer, and that the RATIO line keeps
// its old fields first and appends the new ones.
func TestRatiosAndRatioLine(t *testing.T) {
	iv := roundsOf(
		map[string]float64{vLifeline: 110, vMCPGo: 100, vGoSDK: 10, vFloor: 100},
		map[string]float64{vLifeline: 120, vMCPGo: 100, vFloor: 125},
		map[string]float64{vLifeline: 130, vMCPGo: 100, vGoSDK: 10, vFloor: 100},
	)
	if s := iv.ratioSpread(cellJSON64.key(), vLifeline, vMCPGo); s != (spread{med: 1.2, lo: 1.1, hi: 1.3, n: 3}) {
		t.Errorf("vs mcp-go = %+v, want median 1.2 of 3 rounds, range 1.1-1.3", s)
	}
	if s := iv.ratioSpread(cellJSON64.key(), vLifeline, vGoSDK); s.n != 2 || s.med != 12 {
		t.Errorf("vs go-sdk = %+v, want median 12 of 2 rounds", s)
	}
	if got := iv.rpsText(cellJSON64.key(), vGoSDK); got != "10 (2 rounds)" {
		t.Errorf("go-sdk req/s = %q", got)
	}
	res := map[string]*peerResult{
		bench.Lifeline: {idleOK: true, idle: bench.Idle{GoroutinesPerStream: 4, HeapPerStream: 3000}},
		bench.MCPGo:    {idleOK: true, idle: bench.Idle{GoroutinesPerStream: 6, HeapPerStream: 5000}},
		bench.Plain:    {idleOK: true, idle: bench.Idle{GoroutinesPerStream: 4, HeapPerStream: 1000}},
	}
	want := "RATIO throughput_vs_mcpgo=1.20 throughput_vs_gosdk=12.00 goroutines_per_idle_stream=0.00 heap_per_idle_stream_vs_mcpgo=0.50 " +
		"sse_vs_mcpgo=0.00 churn_vs_mcpgo=0.00 json_vs_floor=1.10 json_vs_floor_main=1.10"
	if got := ratioLine(res, iv); got != want {
		t.Errorf("ratio line\n got %q\nwant %q", got, want)
	}
}

// TestTargets checks the verdicts: a lower bound, an upper bound (Redis
// latency), a cost over its bound, a cost without a bound, a reference
// (the second floor server), and the Redis lines when redis-server was not
// found.
func TestTargets(t *testing.T) {
	iv := roundsOf(
		map[string]float64{vLifeline: 100, vMCPGo: 101, vGoSDK: 30, vFloor: 104, vRedis: 50, vNoEventLog: 100, vMetrics: 96, vTracing: 83, vFloorTracing: 90, vFloorTwin: 99},
		map[string]float64{vLifeline: 100, vMCPGo: 99, vGoSDK: 30, vFloor: 102, vRedis: 80, vNoEventLog: 101, vMetrics: 94, vTracing: 87, vFloorTracing: 92, vFloorTwin: 97},
		map[string]float64{vLifeline: 100, vMCPGo: 102, vGoSDK: 30, vFloor: 101, vRedis: 70, vNoEventLog: 99, vMetrics: 95, vTracing: 84, vFloorTracing: 91, vFloorTwin: 95},
	)
	verdicts := map[string]string{}
	for _, tg := range targetsOf(iv) {
		verdicts[tg.what] = tg.verdict()
	}
	want := map[string]string{
		cellJSON64.title() + " vs stock mcp-go":                                "**missed**", // 0.99
		cellJSON64.title() + " vs go-sdk":                                      "met",
		cellJSON64.title() + " vs the mcp-go floor":                            "met", // 0.98
		cellJSON64.title() + ": p50 latency on Redis vs the memory store":      "met", // 100/70
		cellJSON64.title() + ": cost of " + costs[1].what + ", with / without": "met", // 0.95
		cellJSON64.title() + ": cost of " + costs[2].what + ", with / without": "reported: misses issue 13's 5% at 0.840x; what the SDK itself costs is the next line, and lifeline's part beyond it is held by the last",
		cellJSON64.title() + ": cost of " + costs[3].what + ", with / without": "reported: " + costs[3].noBound,
		cellSSE64.title() + " vs stock mcp-go":                                 "n/a: not measured",
		// Below the floor's bound (0.95x), and reported, not counted: a
		// reference, not a target.
		cellJSON64.title() + ": a second floor server vs the floor (the same handler on two servers: a ratio of equals), in the main rounds": "reported: " + floorTwinNote,
	}
	for what, v := range want {
		if verdicts[what] != v {
			t.Errorf("%s: %q, want %q", what, verdicts[what], v)
		}
	}
	// Tracing beyond the SDK's own: per round (83/100)/(90/104),
	// (87/100)/(92/102), (84/100)/(91/101); the median, 0.959, is between
	// issue 13's 0.95 and the bound, 0.97.
	last := targetsOf(iv)[len(targetsOf(iv))-1]
	if want := 0.83 / (90.0 / 104); !strings.Contains(last.what, "beyond the SDK's own") || last.verdict() != "**missed**" ||
		last.got.n != 3 || math.Abs(last.got.med-want) > 1e-9 {
		t.Errorf("tracing beyond the SDK's own: %q %+v %q, want missed at %.4f of 3 rounds", last.what, last.got, last.verdict(), want)
	}
	iv.absent[vRedis] = noRedisServer
	for _, tg := range targetsOf(iv) {
		if strings.Contains(tg.what, "Redis") && tg.verdict() != noRedisServer {
			t.Errorf("%s without redis-server: %q", tg.what, tg.verdict())
		}
	}
	if out := renderTargets(targetsOf(iv)); !strings.HasPrefix(out, "4 met, 2 missed: "+cellJSON64.title()+" vs stock mcp-go") ||
		!strings.Contains(strings.SplitN(out, "\n", 2)[0], "; reported, not counted: "+cellJSON64.title()+": cost of "+costs[2].what) {
		t.Errorf("targets:\n%s", out)
	}
	if out := renderRedis(iv); !strings.Contains(out, noRedisServer) || strings.Contains(out, "| cell |") {
		t.Errorf("Redis table without redis-server:\n%s", out)
	}
}

// TestModernFloor checks 2026-07-28 against the floor: JSON at 16 and 64
// sessions held to the floor's bound, as the session era's, and the
// 2026-07-28 table's floor columns.
func TestModernFloor(t *testing.T) {
	iv := roundsOf(
		map[string]float64{vLifelineModern: 90, vFloorModern: 100, vLifeline: 100, vMCPGoModern: 80},
		map[string]float64{vLifelineModern: 91, vFloorModern: 100, vLifeline: 100, vMCPGoModern: 80},
		map[string]float64{vLifelineModern: 89, vFloorModern: 100, vLifeline: 100, vMCPGoModern: 80},
	)
	const what = "tools/call JSON (echo), 64 sessions vs the mcp-go floor, 2026-07-28"
	var found bool
	for _, tg := range targetsOf(iv) {
		if tg.what != what {
			continue
		}
		found = true
		if tg.verdict() != "**missed**" || tg.got.n != 3 || math.Abs(tg.got.med-0.90) > 1e-9 {
			t.Errorf("%s: %q %+v, want missed at 0.90 of 3 rounds", what, tg.verdict(), tg.got)
		}
	}
	if !found {
		t.Fatalf("no target %q", what)
	}
	out := renderModernEra(iv)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var header, row []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "| cell |"):
			header = strings.Split(l, "|")
		case strings.HasPrefix(l, "| "+cellJSON64.title()+" |"):
			row = strings.Split(l, "|")
		}
	}
	if len(header) == 0 || len(row) != len(header) || !strings.Contains(out, "| lifeline vs floor |") {
		t.Fatalf("2026-07-28 table: header %d cells, JSON-64 row %d:\n%s", len(header), len(row), out)
	}
	for i, h := range header {
		if strings.TrimSpace(h) == "lifeline vs floor" && !strings.HasPrefix(strings.TrimSpace(row[i]), "0.90x") {
			t.Errorf("lifeline vs floor: %q, want 0.90x", row[i])
		}
		if strings.TrimSpace(h) == "mcp-go floor" && strings.TrimSpace(row[i]) != "100" {
			t.Errorf("floor req/s: %q, want 100", row[i])
		}
	}
}

// TestMeasureMirrored checks a round's measuring of one cell: every variant
// in order and then in reverse, each sample the mean of its two halves, a
// variant whose half failed outright left out, one whose half failed in
// part kept, and for each variant with an error the one that decided its
// round noted once, with its half.
func TestMeasureMirrored(t *testing.T) {
	order := []variant{{label: "a"}, {label: "b"}, {label: "c"}, {label: "d"}, {label: "e"}}
	var calls []string
	down, refused, gone := errors.New("down"), errors.New("refused"), errors.New("gone")
	partly := &partialError{calls: 1, first: "x"}
	results := map[string][]struct {
		rps float64
		err error
	}{
		"a": {{100, nil}, {200, nil}},
		"b": {{10, nil}, {0, down}},
		"c": {{50, partly}, {70, &partialError{calls: 2, first: "y"}}},
		"d": {{0, refused}, {40, nil}},
		"e": {{30, partly}, {0, gone}},
	}
	measure := func(v variant) (sample, error) {
		calls = append(calls, v.label)
		r := results[v.label][0]
		results[v.label] = results[v.label][1:]
		return sample{rps: r.rps, p50: time.Duration(r.rps) * time.Millisecond}, r.err
	}
	type noted struct {
		half int
		err  error
	}
	got := map[string][]noted{}
	out := measureMirrored(order, measure, func(v variant, half int, err error) { got[v.label] = append(got[v.label], noted{half, err}) })
	if want := []string{"a", "b", "c", "d", "e", "e", "c", "b", "a"}; !slices.Equal(calls, want) {
		t.Errorf("measured %v, want %v (d not again after it failed)", calls, want)
	}
	if s := out["a"]; s.rps != 150 || s.p50 != 150*time.Millisecond {
		t.Errorf("a = %+v, want the mean of its halves, 150/s and 150ms", s)
	}
	if s, ok := out["c"]; !ok || s.rps != 60 {
		t.Errorf("c = %+v (%v), want 60/s: partly failed halves count", s, ok)
	}
	for _, l := range []string{"b", "d", "e"} {
		if _, ok := out[l]; ok {
			t.Errorf("%s kept, want it left out: a half failed", l)
		}
	}
	want := map[string][]noted{"b": {{2, down}}, "c": {{1, partly}}, "d": {{1, refused}}, "e": {{2, gone}}}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("noted %v, want %v (e: the failure that left it out, not its first partial error)", got, want)
	}
}

// TestFloorRounds checks that the floor targets, and the RATIO line's
// json_vs_floor, are read from the floor rounds when the run had them,
// with the main rounds' figures for the same ratios reported beside them,
// and the floor rounds' table.
func TestFloorRounds(t *testing.T) {
	iv := roundsOf(
		map[string]float64{vLifeline: 90, vFloor: 100, vLifelineModern: 80, vFloorModern: 100, vFloorTwin: 100, vMCPGo: 90},
		map[string]float64{vLifeline: 91, vFloor: 100, vLifelineModern: 81, vFloorModern: 100, vFloorTwin: 100, vMCPGo: 90},
	)
	iv.floor = roundsOf(
		map[string]float64{vLifeline: 98, vFloor: 100, vLifelineModern: 96, vFloorModern: 100, vFloorTwin: 101},
		map[string]float64{vLifeline: 99, vFloor: 100, vLifelineModern: 95, vFloorModern: 100, vFloorTwin: 99},
		map[string]float64{vLifeline: 97, vFloor: 100, vLifelineModern: 97, vFloorModern: 100, vFloorTwin: 100},
	)
	iv.floor.dur = 500 * time.Millisecond
	got := map[string]target{}
	for _, tg := range targetsOf(iv) {
		got[tg.what] = tg
	}
	title := cellJSON64.title()
	for what, want := range map[string]struct {
		med     float64
		n       int
		verdict string
	}{
		title + " vs the mcp-go floor":                                                          {0.98, 3, "met"},
		title + " vs the mcp-go floor, 2026-07-28":                                              {0.96, 3, "**missed**"},
		title + " vs the mcp-go floor, in the main rounds":                                      {0.905, 2, "reported: " + mainRoundsNote},
		title + " vs the mcp-go floor, 2026-07-28, in the main rounds":                          {0.805, 2, "reported: " + mainRoundsNote},
		title + ": a second floor server vs the floor, in the floor rounds (a ratio of equals)": {1.00, 3, "reported: " + floorTwinNote},
	} {
		tg, ok := got[what]
		if !ok {
			t.Errorf("no target %q", what)
			continue
		}
		if math.Abs(tg.got.med-want.med) > 1e-9 || tg.got.n != want.n || tg.verdict() != want.verdict {
			t.Errorf("%s: %+v %q, want median %.3f of %d rounds, %q", what, tg.got, tg.verdict(), want.med, want.n, want.verdict)
		}
	}
	if line := ratioLine(map[string]*peerResult{}, iv); !strings.HasSuffix(line, " json_vs_floor=0.98 json_vs_floor_main=0.91") {
		t.Errorf("ratio line %q, want json_vs_floor of the floor rounds, 0.98, and json_vs_floor_main of the main rounds, 0.91", line)
	}
	table := renderFloorRounds(iv)
	if !strings.Contains(table, "3 rounds of 500ms") ||
		!strings.Contains(table, "| "+title+" | 98 | 100 | 96 | 100 | 100 | 0.98x (0.97–0.99) | 0.96x (0.95–0.97) | 1.00x (0.99–1.01) |") {
		t.Errorf("floor rounds table:\n%s", table)
	}
	// Without floor rounds: the floor targets of the main rounds, no
	// references, no table.
	iv.floor = nil
	for _, tg := range targetsOf(iv) {
		if strings.HasSuffix(tg.what, "in the main rounds") && strings.Contains(tg.what, "vs the mcp-go floor") {
			t.Errorf("without floor rounds: %q reported", tg.what)
		}
		if tg.what == title+" vs the mcp-go floor" && math.Abs(tg.got.med-0.905) > 1e-9 {
			t.Errorf("without floor rounds: %s %+v, want the main rounds' 0.905", tg.what, tg.got)
		}
	}
	if got := renderFloorRounds(iv); got != "" {
		t.Errorf("floor rounds table without floor rounds: %q", got)
	}
}

// TestRunInterleavedFloorRounds runs the main rounds and the floor rounds
// on real servers, briefly: every floor variant is measured in every floor
// round, and no other variant is.
func TestRunInterleavedFloorRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers and measures them: not in -short")
	}
	iv := briefRounds([]string{bench.Lifeline, bench.MCPGo, bench.Floor}, 60*time.Millisecond, 40*time.Millisecond)
	if iv.err != nil || iv.floor == nil {
		t.Fatalf("err %v, floor rounds %v", iv.err, iv.floor)
	}
	if len(iv.floor.rounds) != 2 || iv.floor.dur != 40*time.Millisecond || iv.dur != 60*time.Millisecond {
		t.Fatalf("%d floor rounds of %v after main rounds of %v, want 2 of 40ms after 60ms", len(iv.floor.rounds), iv.floor.dur, iv.dur)
	}
	for i, rd := range iv.floor.rounds {
		got := slices.Sorted(maps.Keys(rd[cellJSON16.key()]))
		if want := slices.Sorted(slices.Values(floorVariants)); !slices.Equal(got, want) {
			t.Errorf("floor round %d measured %v, want %v", i+1, got, want)
		}
	}
	if _, ok := iv.rounds[0][cellJSON16.key()][vMCPGo]; !ok {
		t.Errorf("main round: stock mcp-go not measured: %v", slices.Sorted(maps.Keys(iv.rounds[0][cellJSON16.key()])))
	}
}

// TestRunErrors checks that the errors of both phases are listed, each
// with its phase and its rounds.
func TestRunErrors(t *testing.T) {
	iv := roundsOf(map[string]float64{vLifeline: 1})
	iv.errs = map[string]*cellErr{}
	iv.noteErr(cellJSON64, variant{label: vMCPGo}, "round 1, half 1: down")
	iv.floor = roundsOf(map[string]float64{vLifeline: 1}, map[string]float64{vLifeline: 1})
	iv.floor.errs = map[string]*cellErr{}
	iv.floor.noteErr(cellJSON64, variant{label: vFloor}, "floor round 2, half 2: refused")
	got := runErrors(report{res: map[string]*peerResult{}, iv: iv})
	want := []string{
		"- interleaved rounds, json-64 mcp-go: 1 of 1 rounds; round 1, half 1: down",
		"- floor rounds, json-64 floor: 1 of 2 rounds; floor round 2, half 2: refused",
	}
	if !slices.Equal(got, want) {
		t.Errorf("run errors\n got %q\nwant %q", got, want)
	}
}

// TestNoFloorRoundsWithoutAPair checks that a run whose variants hold no
// pair a floor target compares (-peers without the floor) measures no
// floor rounds.
func TestNoFloorRoundsWithoutAPair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers: not in -short")
	}
	iv := briefRounds([]string{bench.Lifeline, bench.MCPGo}, 40*time.Millisecond, 40*time.Millisecond)
	if iv.err != nil || len(iv.rounds) != 1 {
		t.Fatalf("main rounds: err %v, %d rounds", iv.err, len(iv.rounds))
	}
	if iv.floor != nil {
		t.Errorf("floor rounds measured without the floor: %d rounds", len(iv.floor.rounds))
	}
}

// TestFloorRoundsOf checks how -floor-rounds and -cpuprofile decide how
// many floor rounds a run measures.
func TestFloorRoundsOf(t *testing.T) {
	for _, c := range []struct {
		flagged, def int
		profiled     bool
		want         int
	}{{0, 40, false, 40}, {12, 40, false, 12}, {-1, 40, false, 0}, {0, 40, true, 0}, {12, 4, true, 0}} {
		if got := floorRoundsOf(c.flagged, c.def, c.profiled); got != c.want {
			t.Errorf("floorRoundsOf(%d, %d, %v) = %d, want %d", c.flagged, c.def, c.profiled, got, c.want)
		}
	}
}

// briefRounds runs the interleaved rounds on real servers of the peers
// run (no Redis), briefly: one main round of JSON at 16 sessions of
// mainDur, then two floor rounds of floorDur.
func briefRounds(run []string, mainDur, floorDur time.Duration) *interleaved {
	vs := selectVariants(run, true)
	s := quickSettings
	s.rounds, s.roundDur, s.cells = 1, mainDur, []cellSpec{cellJSON16}
	s.floorRounds, s.floorRoundDur, s.floorCells = 2, floorDur, []cellSpec{cellJSON16}
	be := startBackends(vs)
	defer be.close()
	return runInterleaved(vs, s.cells, s, be)
}
