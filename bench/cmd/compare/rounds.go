package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// interleavedTitle heads the interleaved rounds' table.
const interleavedTitle = "tools/call JSON at 64 sessions, interleaved rounds"

// interleaved is the headline measured again in interleaved rounds: every
// peer up at once, tools/call JSON at 64 sessions measured for each in turn,
// so that two peers' numbers of a round are seconds apart, not minutes.
type interleaved struct {
	peers []string // in rotation order
	// rounds holds req/s per peer, a map per round; a peer is missing from
	// a round where its measurement failed.
	rounds []map[string]float64
	dur    time.Duration
	errs   []string
	// err is set when the phase could not run at all.
	err error
}

// roundPeers are the peers of run that the interleaved rounds measure: every
// one but the plain handler, in report order.
func roundPeers(run []string) []string {
	var out []string
	for _, p := range peers {
		if p != bench.Plain && slices.Contains(run, p) {
			out = append(out, p)
		}
	}
	return out
}

// runInterleaved starts the peers names at once and measures each s.rounds
// times for s.roundDur, round r starting at peer r mod len(names). It closes
// every peer it started before it returns.
func runInterleaved(names []string, s settings) *interleaved {
	iv := &interleaved{peers: names, dur: s.roundDur}
	if !slices.Contains(names, bench.Lifeline) || len(names) < 2 {
		iv.err = errors.New("needs lifeline and at least one other peer (-peers)")
		return iv
	}
	ps, err := startAll(names, s)
	if err != nil {
		iv.err = err
		logf("interleaved rounds: %v", err)
		return iv
	}
	defer closeAll(ps)
	for r := range s.rounds {
		iv.rounds = append(iv.rounds, iv.measureRound(ps, r, s))
	}
	return iv
}

// startAll starts every peer of names; on an error it closes the ones it
// started.
func startAll(names []string, s settings) ([]*bench.Peer, error) {
	ps := make([]*bench.Peer, 0, len(names))
	for _, name := range names {
		p, err := bench.StartPeer(name, bench.Options{Heartbeat: s.heartbeat, WriteTimeout: s.writeTime})
		if err != nil {
			closeAll(ps)
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// closeAll closes every peer of ps.
func closeAll(ps []*bench.Peer) {
	for _, p := range ps {
		p.Close()
	}
}

// measureRound measures round r (0-based): each peer of ps in turn, starting
// at peer r mod len(ps), and returns req/s per peer measured.
func (iv *interleaved) measureRound(ps []*bench.Peer, r int, s settings) map[string]float64 {
	got := map[string]float64{}
	for i := range ps {
		p := ps[(r+i)%len(ps)]
		t, err := bench.MeasureThroughput(p, 64, false, s.roundDur, s.maxReq)
		if err != nil {
			iv.errs = append(iv.errs, fmt.Sprintf("round %d, %s: %v", r+1, p.Name, err))
			logf("round %d/%d %-8s json-64: %v", r+1, s.rounds, p.Name, err)
			continue
		}
		if t.Errors > 0 {
			iv.errs = append(iv.errs, fmt.Sprintf("round %d, %s: %d errors, first: %s", r+1, p.Name, t.Errors, t.FirstEr))
		}
		got[p.Name] = t.RPS
		logf("round %d/%d %-8s json-64 %8.0f req/s p50 %v p99 %v errors %d", r+1, s.rounds, p.Name, t.RPS, t.Lat.P50, t.Lat.P99, t.Errors)
	}
	return got
}

// rps is peer name's req/s of every round that measured it.
func (iv *interleaved) rps(name string) []float64 {
	var out []float64
	for _, rd := range iv.rounds {
		if v, ok := rd[name]; ok {
			out = append(out, v)
		}
	}
	return out
}

// ratios is lifeline's req/s over peer name's, one per round that measured
// both.
func (iv *interleaved) ratios(name string) []float64 {
	var out []float64
	for _, rd := range iv.rounds {
		l, lok := rd[bench.Lifeline]
		v, ok := rd[name]
		if lok && ok && v > 0 {
			out = append(out, l/v)
		}
	}
	return out
}

// median is the median of xs (the mean of the middle two for an even
// count), 0 for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// renderInterleaved renders the interleaved rounds as a markdown section:
// per peer the median req/s and lifeline's median per-round ratio with its
// range.
func renderInterleaved(iv *interleaved) string {
	var b strings.Builder
	b.WriteString("## " + interleavedTitle + "\n\n")
	if iv.err != nil {
		fmt.Fprintf(&b, "Not measured: %v.\n", iv.err)
		return b.String()
	}
	fmt.Fprintf(&b, "The table above measures each peer's cells minutes apart, and on a shared machine two such measurements "+
		"differ by about ±10%%; here %s run at once and are measured in turn, seconds apart, for %d rounds of %v each "+
		"(the starting peer rotating each round), and each ratio is the median of the per-round ratios.\n\n",
		joinAnd(iv.peers), len(iv.rounds), iv.dur)
	b.WriteString("| peer | median req/s | lifeline vs peer, median of per-round ratios | range over rounds |\n|---|---:|---:|---:|\n")
	for _, name := range iv.peers {
		med, rat, rng := "n/a", "", ""
		if v := iv.rps(name); len(v) > 0 {
			med = fmt.Sprintf("%.0f (%d rounds)", median(v), len(v))
		}
		if name != bench.Lifeline {
			rat, rng = "n/a", "n/a"
			if rs := iv.ratios(name); len(rs) > 0 {
				rat = fmt.Sprintf("%.2fx", median(rs))
				rng = fmt.Sprintf("%.2fx – %.2fx", slices.Min(rs), slices.Max(rs))
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", columnTitle(name), med, rat, rng)
	}
	return b.String()
}

// joinAnd joins names as "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// headline is the throughput target: lifeline's tools/call req/s at
// 64 sessions (JSON) over stock mcp-go's and over the Go SDK's.
type headline struct {
	mcpgo, gosdk headRatio
}

// headRatio is one headline ratio: the median of the interleaved rounds'
// per-round ratios when there are any, else the per-peer cells' ratio.
type headRatio struct {
	v float64
	// lo and hi are the range over the rounds; n is how many rounds, 0
	// when v is from the per-peer cells, for the reason in fallback.
	lo, hi   float64
	n        int
	fallback string
}

// headlineOf takes the headline ratios from the interleaved rounds, falling
// back to the per-peer cells of res for a ratio the rounds did not measure.
func headlineOf(res map[string]*peerResult, iv *interleaved) headline {
	return headline{mcpgo: headRatioOf(res, iv, bench.MCPGo), gosdk: headRatioOf(res, iv, bench.GoSDK)}
}

// headRatioOf is lifeline's headline ratio over peer name.
func headRatioOf(res map[string]*peerResult, iv *interleaved, name string) headRatio {
	if iv.err != nil {
		return headRatio{v: ratio(thr64(res[bench.Lifeline]), thr64(res[name])), fallback: "interleaved rounds not measured: " + iv.err.Error()}
	}
	rs := iv.ratios(name)
	if len(rs) == 0 {
		return headRatio{v: ratio(thr64(res[bench.Lifeline]), thr64(res[name])), fallback: "no interleaved round measured both lifeline and " + name}
	}
	return headRatio{v: median(rs), lo: slices.Min(rs), hi: slices.Max(rs), n: len(rs)}
}

// describe says where h comes from, for the targets line; withRange adds
// the range over the rounds.
func (h headRatio) describe(withRange bool) string {
	if h.n == 0 {
		return "per-peer cells of the table, " + h.fallback
	}
	d := fmt.Sprintf("median of %d interleaved rounds", h.n)
	if withRange {
		d += fmt.Sprintf("; range %.2f–%.2fx", h.lo, h.hi)
	}
	return d
}
