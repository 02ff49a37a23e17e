package main

import (
	"fmt"
	"slices"
	"strings"
)

// mdTable renders a markdown table: the first column left-aligned, the
// others right-aligned.
func mdTable(headers []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(headers, " | ") + " |\n|---" + strings.Repeat("|---:", len(headers)-1) + "|\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// rpsText renders variant label's median req/s in cell key, with the number
// of rounds when some round missed it; n/a when none measured it.
func (iv *interleaved) rpsText(key, label string) string {
	s := iv.rpsSpread(key, label)
	switch {
	case s.n == 0:
		return "n/a"
	case s.n < len(iv.rounds):
		return fmt.Sprintf("%.0f (%d rounds)", s.med, s.n)
	}
	return fmt.Sprintf("%.0f", s.med)
}

// measured reports whether the run measured cell c.
func (iv *interleaved) measured(c cellSpec) bool { return slices.Contains(iv.cells, c) }

// cellsOf are the cells of want that the run measured, in report order.
func (iv *interleaved) cellsOf(want []cellSpec) []cellSpec {
	return slices.DeleteFunc(slices.Clone(want), func(c cellSpec) bool { return !iv.measured(c) })
}

// renderCells renders every interleaved table: the session era against
// every peer, 2026-07-28, the Redis store, and what the optional features
// cost; and a line per variant that was not measured, with the reason.
func renderCells(iv *interleaved) string {
	var b strings.Builder
	b.WriteString("## Throughput, interleaved rounds\n\n")
	if iv.err != nil {
		fmt.Fprintf(&b, "Not measured: %v.\n", iv.err)
		return b.String()
	}
	fmt.Fprintf(&b, "Every variant below runs at once, each on its own port; each round measures every cell for each variant in turn, "+
		"twice for %v each, in the round's order and then in reverse (a variant's sample is the mean of its two halves, so a drift of the machine's speed "+
		"across the cell slows every variant alike), the order drawn anew for each cell of each round, for %d rounds. "+
		"A req/s is the median over the rounds; a ratio is the median of the per-round ratios, with its range over the rounds "+
		"in brackets, so a reader can tell a win from noise.\n\n", iv.dur/2, len(iv.rounds))
	b.WriteString(renderSessionEra(iv))
	b.WriteString(renderModernEra(iv))
	b.WriteString(renderFloorRounds(iv))
	b.WriteString(renderRedis(iv))
	b.WriteString(renderCosts(iv))
	if len(iv.absent) > 0 {
		b.WriteString("\nNot measured:\n\n")
		for _, v := range allVariants {
			if why, ok := iv.absent[v.label]; ok {
				fmt.Fprintf(&b, "- %s: %s\n", v.label, why)
			}
		}
	}
	return b.String()
}

// renderSessionEra is the 2025-11-25 table: lifeline against stock mcp-go,
// the Go SDK and the floor.
func renderSessionEra(iv *interleaved) string {
	cols := []string{vLifeline, vMCPGo, vGoSDK, vFloor}
	headers := []string{"cell", "lifeline", "stock mcp-go", "go-sdk", "mcp-go floor", "lifeline vs stock", "lifeline vs go-sdk", "lifeline vs floor"}
	var rows [][]string
	for _, c := range iv.cellsOf(allCells) {
		row := []string{c.title()}
		for _, v := range cols {
			row = append(row, iv.rpsText(c.key(), v))
		}
		for _, v := range cols[1:] {
			row = append(row, iv.ratioSpread(c.key(), vLifeline, v).ratioText())
		}
		rows = append(rows, row)
	}
	return "### Session era (2025-11-25), memory store: req/s\n\n" + mdTable(headers, rows) +
		"\nThe floor answers JSON tools/call only (no sessions, no SSE): its other cells are n/a.\n"
}

// renderModernEra is the 2026-07-28 table: lifeline against stock mcp-go,
// the Go SDK and the floor in the sessionless era, and lifeline's
// 2026-07-28 over its own session era.
func renderModernEra(iv *interleaved) string {
	headers := []string{"cell", "lifeline", "stock mcp-go", "go-sdk", "mcp-go floor", "lifeline vs stock", "lifeline vs go-sdk",
		"lifeline vs floor", "lifeline 2026-07-28 vs 2025-11-25"}
	var rows [][]string
	for _, c := range iv.cellsOf(sessionlessCells) {
		k := c.key()
		rows = append(rows, []string{c.title(), iv.rpsText(k, vLifelineModern), iv.rpsText(k, vMCPGoModern), iv.rpsText(k, vGoSDKModern),
			iv.rpsText(k, vFloorModern), iv.ratioSpread(k, vLifelineModern, vMCPGoModern).ratioText(),
			iv.ratioSpread(k, vLifelineModern, vGoSDKModern).ratioText(), iv.ratioSpread(k, vLifelineModern, vFloorModern).ratioText(),
			iv.ratioSpread(k, vLifelineModern, vLifeline).ratioText()})
	}
	if iv.measured(cellChurn) {
		rows = append(rows, []string{cellChurn.title(), "n/a: 2026-07-28 has no sessions (no initialize, no DELETE)", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a", "n/a"})
	}
	return "\n### Protocol 2026-07-28 (sessionless): req/s\n\n" + mdTable(headers, rows) +
		"\nThe floor is the same handler in both eras, mcp-go's HandleMessage on the body: it checks none of the headers a " +
		"2026-07-28 request must carry (HandleMessage runs those checks only behind mcp-go's own handler), so it costs less " +
		"than any transport serving the version as the specification asks. JSON only. The targets also report lifeline against " +
		"the floor running those checks as MCPServer runs them for its own transport (`bench/floor_checks.go`, 16 and 64 sessions): " +
		"a reference, not a bound; and against the floor giving each request the least session MCPServer takes, as a transport " +
		"that loses none of a tool's progress and log messages must (`bench/floor_session.go`, 16 and 64 sessions), paying what " +
		"MCPServer does for a request with one: a reference too.\n"
}

// renderFloorRounds is the floor rounds' table: req/s of the floor
// targets' variants and the ratios the floor targets are read from, with
// the second floor server's (a ratio of equals) beside them; none when the
// run had no floor rounds.
func renderFloorRounds(iv *interleaved) string {
	fl := iv.floor
	if fl == nil || len(fl.rounds) == 0 {
		return ""
	}
	headers := []string{"cell", "lifeline", "floor", "lifeline 2026-07-28", "floor 2026-07-28", "a second floor",
		"lifeline vs floor", "lifeline vs floor, 2026-07-28", "second floor vs floor"}
	var rows [][]string
	for _, c := range fl.cells {
		k := c.key()
		rows = append(rows, []string{c.title(), fl.rpsText(k, vLifeline), fl.rpsText(k, vFloor), fl.rpsText(k, vLifelineModern),
			fl.rpsText(k, vFloorModern), fl.rpsText(k, vFloorTwin), fl.ratioSpread(k, vLifeline, vFloor).ratioText(),
			fl.ratioSpread(k, vLifelineModern, vFloorModern).ratioText(), fl.ratioSpread(k, vFloorTwin, vFloor).ratioText()})
	}
	return fmt.Sprintf("\n### The floor rounds: the floor targets' variants alone, %d rounds of %v per variant and cell: req/s\n\n", len(fl.rounds), fl.dur) +
		mdTable(headers, rows) +
		"\nAfter the main rounds, the same servers, the floor targets' variants alone: each round measures each of them in turn, " +
		"in two halves as the main rounds do, so that lifeline's and the floor's measurements lie at most about a second apart " +
		"instead of several, over many short rounds. The floor targets are read from these rounds; the main rounds' figures for " +
		"the same ratios are in the tables above and, as references, in the targets.\n"
}

// renderRedis is lifeline on a real redis-server against lifeline on the
// memory store: req/s and median latency, each a median of per-round
// ratios.
func renderRedis(iv *interleaved) string {
	const title = "\n### lifeline on the Redis store (`sessionstore/redisstore`, a real redis-server on 127.0.0.1) vs the memory store\n\n"
	if why, ok := iv.absent[vRedis]; ok {
		return title + why + "\n"
	}
	headers := []string{"cell", "memory req/s", "Redis req/s", "Redis vs memory, req/s", "memory p50", "Redis p50", "Redis vs memory, p50 latency", "Redis vs stock mcp-go, req/s"}
	var rows [][]string
	for _, c := range iv.cellsOf(allCells) {
		k := c.key()
		p50Mem, p50Redis, p50Ratio := "n/a", "n/a", "n/a"
		if c.work != churn {
			p50Mem = msText(median(iv.values(k, vLifeline, p50Of)))
			p50Redis = msText(median(iv.values(k, vRedis, p50Of)))
			p50Ratio = spreadOf(iv.ratios(k, vRedis, vLifeline, p50Of)).ratioText()
		}
		rows = append(rows, []string{c.title(), iv.rpsText(k, vLifeline), iv.rpsText(k, vRedis), iv.ratioSpread(k, vRedis, vLifeline).ratioText(),
			p50Mem, p50Redis, p50Ratio, iv.ratioSpread(k, vRedis, vMCPGo).ratioText()})
	}
	return title + mdTable(headers, rows) +
		"\nLatency is each measurement's median call latency (p50); its ratio is the median of the per-round ratios (below 1 is better).\n"
}

// msText renders milliseconds, n/a for 0.
func msText(v float64) string {
	if v == 0 {
		return "n/a"
	}
	return ms(v)
}

// costs are the optional features whose cost is measured on JSON at 64
// sessions: the label of the variant with the feature on, and of the one
// with it off; noBound, when set, says why its cost has no target.
var costs = []struct {
	what    string
	on, off string
	noBound string
}{
	{"resumability (the event log; off: Options.DisableEventLog)", vLifeline, vNoEventLog, ""},
	{"SDK metrics (Options.MeterProvider, a ManualReader)", vMetrics, vLifeline, ""},
	{"always-sample SDK tracing (Options.TracerProvider, batching to a dropping exporter)", vTracing, vLifeline,
		sdkCostHeld},
	{"the same SDK tracing on the mcp-go floor, one span with the same attributes and nothing parsed (what the SDK itself costs a call)",
		vFloorTracing, vFloor, "a reference: the least any transport's span costs"},
}

// renderCosts is what each optional feature costs on JSON at 64 sessions:
// req/s with it over req/s without it, a median of per-round ratios.
func renderCosts(iv *interleaved) string {
	if !iv.measured(cellJSON64) {
		return ""
	}
	k := cellJSON64.key()
	headers := []string{"feature", "req/s with it", "req/s without it", "with / without, median of rounds (range)"}
	var rows [][]string
	for _, c := range costs {
		rows = append(rows, []string{c.what, iv.rpsText(k, c.on), iv.rpsText(k, c.off), iv.ratioSpread(k, c.on, c.off).ratioText()})
	}
	return "\n### What resumability and telemetry cost, tools/call JSON at 64 sessions\n\n" + mdTable(headers, rows) +
		"\nEach is lifeline with the feature over lifeline without it, both measured in every round (below 1 is its cost).\n"
}
