package main

import (
	"fmt"
	"slices"
)

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

// spread is a median with its range over n rounds; n 0 means not measured.
type spread struct {
	med, lo, hi float64
	n           int
}

// spreadOf summarizes xs.
func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	return spread{med: median(xs), lo: slices.Min(xs), hi: slices.Max(xs), n: len(xs)}
}

// ratioText renders a ratio spread as "1.03x (0.82–1.17)", or n/a.
func (s spread) ratioText() string {
	if s.n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx (%.2f–%.2f)", s.med, s.lo, s.hi)
}

// verdictText renders a ratio spread as ratioText does, the median with
// three decimals: next to a bound, 0.998x must not read as 1.00x.
func (s spread) verdictText() string {
	if s.n == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3fx (%.2f–%.2f)", s.med, s.lo, s.hi)
}

// rpsOf is a sample's req/s.
func rpsOf(s sample) float64 { return s.rps }

// p50Of is a sample's median latency in milliseconds, 0 when it has none.
func p50Of(s sample) float64 { return dms(s.p50) }

// values is metric f of variant label in cell key, one per round that
// measured it.
func (iv *interleaved) values(key, label string, f func(sample) float64) []float64 {
	var out []float64
	for _, rd := range iv.rounds {
		if s, ok := rd[key][label]; ok {
			out = append(out, f(s))
		}
	}
	return out
}

// ratios is metric f of variant a over that of variant b in cell key, one
// per round that measured both (and where b's is not 0).
func (iv *interleaved) ratios(key, a, b string, f func(sample) float64) []float64 {
	var out []float64
	for _, rd := range iv.rounds {
		x, xok := rd[key][a]
		y, yok := rd[key][b]
		if xok && yok && f(y) > 0 {
			out = append(out, f(x)/f(y))
		}
	}
	return out
}

// rpsSpread is variant label's req/s in cell key.
func (iv *interleaved) rpsSpread(key, label string) spread {
	return spreadOf(iv.values(key, label, rpsOf))
}

// ratioSpread is variant a's req/s over b's in cell key, per round.
func (iv *interleaved) ratioSpread(key, a, b string) spread {
	return spreadOf(iv.ratios(key, a, b, rpsOf))
}

// costBeyond is, per round that measured all four, the cost of a feature
// to variant a (aOn over aOff, req/s) over its cost to variant b (bOn over
// bOff): below 1 is what a pays beyond what b does.
func (iv *interleaved) costBeyond(key, aOn, aOff, bOn, bOff string) []float64 {
	var out []float64
	for _, rd := range iv.rounds {
		v := rd[key]
		x, y, u, w := v[aOn], v[aOff], v[bOn], v[bOff]
		if x.rps > 0 && y.rps > 0 && u.rps > 0 && w.rps > 0 {
			out = append(out, (x.rps/y.rps)/(u.rps/w.rps))
		}
	}
	return out
}
