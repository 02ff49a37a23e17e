package main

import (
	"fmt"
	"strings"
)

// Bounds of issue 16's targets.
const (
	peerBound    = 1.0  // every cell at least this times stock mcp-go and the Go SDK
	floorBound   = 0.97 // JSON tools/call at 16 and 64 sessions at least this times the floor
	redisBound   = 1.5  // Redis mode's p50 latency at most this times memory mode's
	featureBound = 0.95 // the project's 5% rule for an optional feature that is on (resumability, metrics)
	// spanBound holds lifeline's always-sampled tracing to the cost of the
	// same span on the floor: what the SDK itself costs a call is no
	// transport's to trim (issue 13), lifeline's part beyond it is.
	spanBound = 0.97
)

// target is one of issue 16's targets as measured: a median of per-round
// ratios against a bound.
type target struct {
	what string
	got  spread
	// bound is the limit; atMost makes it an upper one (latency); none
	// says the line is reported without a bound, and why.
	bound  float64
	atMost bool
	none   string
	// absent, when set, says why it was not measured (the Redis cells
	// without a redis-server).
	absent string
}

// verdict is "met", "**missed**", or what stands for one when the target
// was not measured or has no bound.
func (t target) verdict() string {
	switch {
	case t.absent != "":
		return t.absent
	case t.got.n == 0:
		return "n/a: not measured"
	case t.none != "":
		return "reported: " + t.none
	case t.atMost && t.got.med <= t.bound, !t.atMost && t.got.med >= t.bound:
		return "met"
	}
	return "**missed**"
}

// boundText renders the bound as "≥ 1.00x" or "≤ 1.50x", or "—".
func (t target) boundText() string {
	switch {
	case t.none != "":
		return "—"
	case t.atMost:
		return fmt.Sprintf("≤ %.2fx", t.bound)
	}
	return fmt.Sprintf("≥ %.2fx", t.bound)
}

// targetsOf evaluates issue 16's targets on what the rounds measured:
// every cell against stock mcp-go and the Go SDK in both eras, JSON against
// the floor, Redis latency against memory, and the cost of each optional
// feature.
func targetsOf(iv *interleaved) []target {
	var ts []target
	vs := func(c cellSpec, a, b, peer string, bound float64) target {
		return target{what: fmt.Sprintf("%s vs %s", c.title(), peer), got: iv.ratioSpread(c.key(), a, b), bound: bound}
	}
	for _, c := range iv.cellsOf(allCells) {
		ts = append(ts, vs(c, vLifeline, vMCPGo, "stock mcp-go", peerBound), vs(c, vLifeline, vGoSDK, "go-sdk", peerBound))
	}
	for _, c := range iv.cellsOf(sessionlessCells) {
		ts = append(ts, vs(c, vLifelineModern, vMCPGoModern, "stock mcp-go, 2026-07-28", peerBound),
			vs(c, vLifelineModern, vGoSDKModern, "go-sdk, 2026-07-28", peerBound))
	}
	// The floor targets are read from the floor rounds when the run had
	// them (floorVariants): the main rounds' figures follow as references.
	fl := iv.floorOrMain()
	for _, c := range fl.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
		ts = append(ts, target{what: fmt.Sprintf("%s vs the mcp-go floor", c.title()), got: fl.ratioSpread(c.key(), vLifeline, vFloor), bound: floorBound})
	}
	// 2026-07-28 too: the era mcp-go's and the Go SDK's clients speak by
	// default, served by lifeline's own code, is held to the same bound.
	for _, c := range fl.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
		ts = append(ts, target{what: fmt.Sprintf("%s vs the mcp-go floor, 2026-07-28", c.title()),
			got: fl.ratioSpread(c.key(), vLifelineModern, vFloorModern), bound: floorBound})
	}
	// And the floor rounds' noise: the same floor on a second server
	// against the first, measured in the same rounds.
	if fl != iv {
		for _, c := range fl.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
			ts = append(ts, target{what: fmt.Sprintf("%s: a second floor server vs the floor, in the floor rounds (a ratio of equals)", c.title()),
				got: fl.ratioSpread(c.key(), vFloorTwin, vFloor), none: floorTwinNote})
		}
		for _, c := range iv.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
			for _, era := range []struct{ l, f, suffix string }{{vLifeline, vFloor, ""}, {vLifelineModern, vFloorModern, ", 2026-07-28"}} {
				ts = append(ts, target{what: fmt.Sprintf("%s vs the mcp-go floor%s, in the main rounds", c.title(), era.suffix),
					got: iv.ratioSpread(c.key(), era.l, era.f), none: mainRoundsNote})
			}
		}
	}
	// A reference beside them, not a target: the floor that also runs the
	// header checks MCPServer runs when mcp-go's own transport hands it the
	// headers, which the floor above skips (bench/floor_checks.go).
	for _, c := range iv.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
		t := vs(c, vLifelineModern, vFloorChecked, "the mcp-go floor with MCPServer's own header checks, 2026-07-28", floorBound)
		t.none = floorCheckedNote
		ts = append(ts, t)
	}
	// And the floor that gives each request a session, as a transport
	// that loses none of a tool's messages must (bench/floor_session.go):
	// what MCPServer charges for one, which the floor above does not pay.
	for _, c := range iv.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
		t := vs(c, vLifelineModern, vFloorSession, "the mcp-go floor with a session per request, 2026-07-28", floorBound)
		t.none = floorSessionNote
		ts = append(ts, t)
	}
	// What MCPServer charges for the session, the two floors side by side.
	for _, c := range iv.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
		ts = append(ts, target{what: fmt.Sprintf("%s: the mcp-go floor with a session per request vs the floor, 2026-07-28 "+
			"(what MCPServer charges for a session)", c.title()),
			got: iv.ratioSpread(c.key(), vFloorSession, vFloorModern), none: "a reference: the floor's own two variants"})
	}
	// And what the floor bound's noise is: the same floor on a second
	// server against the first, measured in the same rounds. Its median
	// would be 1.00x on a quiet machine; how far it strays, and its range,
	// is how far a ratio of equals strays here.
	for _, c := range iv.cellsOf([]cellSpec{cellJSON16, cellJSON64}) {
		ts = append(ts, target{what: fmt.Sprintf("%s: a second floor server vs the floor (the same handler on two servers: a ratio of equals), in the main rounds", c.title()),
			got: iv.ratioSpread(c.key(), vFloorTwin, vFloor), none: floorTwinNote})
	}
	// Every tools/call cell, SSE as well as JSON: an SSE call on Redis
	// records each event in the shared log before writing it.
	for _, c := range iv.cellsOf([]cellSpec{cellJSON1, cellJSON16, cellJSON64, cellSSE1, cellSSE16, cellSSE64}) {
		ts = append(ts, target{what: fmt.Sprintf("%s: p50 latency on Redis vs the memory store", c.title()),
			got: spreadOf(iv.ratios(c.key(), vRedis, vLifeline, p50Of)), bound: redisBound, atMost: true, absent: iv.absent[vRedis]})
	}
	if iv.measured(cellJSON64) {
		for _, c := range costs {
			t := target{what: fmt.Sprintf("%s: cost of %s, with / without", cellJSON64.title(), c.what),
				got: iv.ratioSpread(cellJSON64.key(), c.on, c.off), bound: featureBound, none: c.noBound}
			if t.none == sdkCostHeld {
				t.none = sdkCostVerdict(t.got)
			}
			ts = append(ts, t)
		}
		ts = append(ts, target{what: fmt.Sprintf("%s: cost of always-sample SDK tracing beyond the SDK's own "+
			"(lifeline's with / without over the floor's, the same span)", cellJSON64.title()),
			got: spreadOf(iv.costBeyond(cellJSON64.key(), vTracing, vLifeline, vFloorTracing, vFloor)), bound: spanBound})
	}
	return ts
}

// mainRoundsNote says what the floor targets' figures from the main
// rounds are: the same ratios, measured among every variant, reported
// beside the counted ones of the floor rounds.
const mainRoundsNote = "a reference: the same ratio among every variant in the main rounds; the floor target above is read from the floor rounds"

// floorCheckedNote says why the floor with MCPServer's header checks is a
// reference and not the 2026-07-28 floor target's: MCPServer's way of
// checking (decoding the message again for them) costs more than a
// transport's need, so it bounds nothing; the floor without them is the
// most a transport can reach.
const floorCheckedNote = "a reference: what MCPServer spends on the specification's header checks when its own transport hands it the headers; the floor above skips them"

// floorSessionNote says what the floor with a session per request is: a
// reference beside the 2026-07-28 floor target, reported without a bound,
// not a target of its own.
const floorSessionNote = "a reference: the floor handing MCPServer the least session a transport that loses none of a tool's messages must give it, and paying what MCPServer does for one; the floor above gives none"

// floorTwinNote says what the second floor server's line is: a ratio of
// two equal servers, so its distance from 1.00x is the rounds' noise, the
// yardstick for reading the floor targets above.
const floorTwinNote = "a reference: two equal servers, so what strays from 1.00x is noise, beside the floor bound's 3%"

// sdkCostHeld marks a cost (always-sampled tracing's) that is reported
// against issue 13's 5% and held, as a target, to its part beyond what the
// SDK itself costs the floor (the last target); sdkCostVerdict words it.
const sdkCostHeld = "held beyond the SDK's own cost"

// sdkCostVerdict says whether a cost marked sdkCostHeld is within issue 13's
// 5%, and where it is held.
func sdkCostVerdict(got spread) string {
	if got.n > 0 && got.med < featureBound {
		return fmt.Sprintf("misses issue 13's 5%% at %.3fx; what the SDK itself costs is the next line, and lifeline's part beyond it is held by the last", got.med)
	}
	return "within issue 13's 5%; lifeline's part beyond what the SDK itself costs (the next line) is also held by the last"
}

// renderTargets renders the targets as a table, a summary line first.
func renderTargets(ts []target) string {
	var b strings.Builder
	met, missed := 0, []string{}
	rows := make([][]string, 0, len(ts))
	for _, t := range ts {
		v := t.verdict()
		switch v {
		case "met":
			met++
		case "**missed**":
			missed = append(missed, t.what)
		}
		rows = append(rows, []string{t.what, t.boundText(), t.got.verdictText(), fmt.Sprint(t.got.n), v})
	}
	fmt.Fprintf(&b, "%d met, %d missed", met, len(missed))
	if len(missed) > 0 {
		b.WriteString(": " + strings.Join(missed, "; "))
	}
	for _, t := range ts {
		if strings.HasPrefix(t.none, "misses") {
			fmt.Fprintf(&b, "; reported, not counted: %s %s", t.what, t.none)
		}
	}
	b.WriteString(". Each is a median of per-round ratios of the interleaved rounds (range in brackets), the floor targets' of the floor rounds when the run had them; " +
		"lifeline on the Redis store is held to its latency bound against the memory store, not to the peers' req/s; " +
		"a resumability or metrics cost is held to the project's 5% rule; tracing's to the same span's cost on the mcp-go floor " +
		"(what the OpenTelemetry SDK itself costs a call, which can exceed issue 13's 5%: the floor's line shows it).\n\n")
	b.WriteString(mdTable([]string{"target", "bound", "measured: median of rounds (range)", "rounds", "verdict"}, rows))
	return b.String()
}
