package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// sample is one measurement of one variant in one cell of one round.
type sample struct {
	rps float64       // req/s (cycles/s for churn)
	p50 time.Duration // median call latency; 0 for churn
}

// cellErr is what went wrong in one cell for one variant, over the rounds.
type cellErr struct {
	rounds int    // rounds with an error
	first  string // the first one
}

// interleaved is what the interleaved rounds measured.
type interleaved struct {
	variants []variant  // started, in allVariants' order
	cells    []cellSpec // in report order
	// rounds holds, per round, cell key -> variant label -> sample; a
	// variant is missing from a cell of a round where its measurement
	// failed.
	rounds []map[string]map[string]sample
	dur    time.Duration
	// absent says, per variant label, why it was not measured at all
	// (e.g. "n/a: redis-server not found").
	absent map[string]string
	// errs are the measurements' errors, per "cell variant".
	errs map[string]*cellErr
	// err is set when the phase could not run at all.
	err error
	// seed is what the variants' order was drawn from (shuffledOrder).
	seed uint64
	// floor, when the run had them, are the floor rounds: the floor
	// targets' variants alone, in rounds of their own (floorVariants).
	floor *interleaved
}

// floorVariants are the variants of the floor rounds: the floor targets'
// two pairs, lifeline and the floor in either era, and the second floor
// server, whose ratio to the first is those rounds' noise. The main
// rounds measure a floor cell for 11 to 16 variants in turn, so that the
// measurements of lifeline and of the floor lie seconds apart, and two
// equal floor servers read up to 6% apart in one run's median (runs
// 53-62); measured alone, in many short rounds, they lie at most about a
// second apart, and the many rounds' median weighs a burst of noise less.
var floorVariants = []string{vLifeline, vFloor, vLifelineModern, vFloorModern, vFloorTwin}

// floorOrMain is what the floor targets are read from: the floor rounds
// when the run had them, the main rounds otherwise. (Floor rounds all of
// whose measurements of a pair failed read n/a, and say why in the run's
// errors: the main rounds' figures are still in the references.)
func (iv *interleaved) floorOrMain() *interleaved {
	if iv.floor != nil && len(iv.floor.rounds) > 0 {
		return iv.floor
	}
	return iv
}

// runInterleaved starts every variant of vs at once and measures each cell
// of cells s.rounds times for s.roundDur, each cell's variants in each
// round in an order of their own (shuffledOrder, from s.orderSeed or a
// seed drawn here, kept in seed); then, with s.floorRounds set, the floor
// rounds (floorVariants in s.floorCells, kept in floor). A variant that
// cannot start is noted in absent and left out. It closes every peer it
// started before it returns.
func runInterleaved(vs []variant, cells []cellSpec, s settings, be *backends) *interleaved {
	iv := &interleaved{cells: cells, dur: s.roundDur, absent: map[string]string{}, errs: map[string]*cellErr{}, seed: s.orderSeed}
	if iv.seed == 0 {
		iv.seed = rand.Uint64() | 1
	}
	peers := map[string]*bench.Peer{}
	defer func() {
		for _, p := range peers {
			p.Close()
		}
	}()
	for _, v := range vs {
		p, err := be.start(v, s)
		if err != nil {
			iv.absent[v.label] = err.Error()
			logf("interleaved rounds: %s: %v", v.label, err)
			continue
		}
		peers[v.label] = p
		iv.variants = append(iv.variants, v)
	}
	if _, ok := peers[vLifeline]; !ok || len(iv.variants) < 2 {
		iv.err = errors.New("needs lifeline and at least one other peer (-peers)")
		return iv
	}
	logf("interleaved rounds: order seed %d (-order-seed replays it)", iv.seed)
	rng := rand.New(rand.NewPCG(iv.seed, 0))
	iv.measureRounds(peers, s.rounds, s, rng, "round")
	iv.floor = runFloorRounds(iv, peers, s, rng)
	return iv
}

// runFloorRounds measures the floor rounds, s.floorRounds of
// s.floorRoundDur, on the peers the main rounds iv measured, continuing
// their order's rng: floorVariants in s.floorCells. It returns nil, having
// measured nothing, without floor rounds to run or without a pair a floor
// target compares (lifeline and the floor, in either era) among iv's
// variants: -peers without the floor, say.
func runFloorRounds(iv *interleaved, peers map[string]*bench.Peer, s settings, rng *rand.Rand) *interleaved {
	if s.floorRounds <= 0 || len(s.floorCells) == 0 {
		return nil
	}
	fl := &interleaved{cells: s.floorCells, dur: s.floorRoundDur, absent: map[string]string{}, errs: map[string]*cellErr{}, seed: iv.seed}
	has := map[string]bool{}
	for _, v := range iv.variants {
		if slices.Contains(floorVariants, v.label) {
			fl.variants = append(fl.variants, v)
			has[v.label] = true
		}
	}
	if !(has[vLifeline] && has[vFloor]) && !(has[vLifelineModern] && has[vFloorModern]) {
		return nil
	}
	fs := s
	fs.roundDur = s.floorRoundDur
	fl.measureRounds(peers, s.floorRounds, fs, rng, "floor round")
	return fl
}

// measureRounds measures each of iv.cells for each of iv.variants (on
// peers) in n rounds of s.roundDur per variant and cell, appending them to
// iv.rounds; what names the rounds in the progress lines.
func (iv *interleaved) measureRounds(peers map[string]*bench.Peer, n int, s settings, rng *rand.Rand, what string) {
	for r := range n {
		began := time.Now()
		round := map[string]map[string]sample{}
		halfRound := s
		halfRound.roundDur = s.roundDur / 2
		for _, c := range iv.cells {
			measure := func(v variant) (sample, error) {
				smp, err := measureCell(peers[v.label], c, halfRound)
				if err != nil {
					logf("%s %d/%d %-7s %-28s %v", what, r+1, n, c.key(), v.label, err)
				} else {
					logf("%s %d/%d %-7s %-28s %8.0f/s p50 %v", what, r+1, n, c.key(), v.label, smp.rps, smp.p50)
				}
				return smp, err
			}
			note := func(v variant, half int, err error) {
				iv.noteErr(c, v, fmt.Sprintf("%s %d, half %d: %v", what, r+1, half, err))
			}
			round[c.key()] = measureMirrored(shuffledOrder(variantsOf(c, iv.variants), rng), measure, note)
		}
		iv.rounds = append(iv.rounds, round)
		logf("%s %d/%d took %.1f s", what, r+1, n, time.Since(began).Seconds())
	}
}

// measureMirrored measures each variant of order twice, for half a round
// each: in order, then in reverse order. A variant's sample is the mean of
// its two halves, so that a machine whose speed drifts while a cell is
// measured slows every variant alike (the two halves of each are centred on
// the cell's middle), and a burst of noise weighs half. A variant is left
// out of the round when either half failed, unless only some of its calls
// did (a partialError: that half counts). note gets, once per variant with
// an error, the error that decided its round: the failure that left it
// out, else its first partial one; half is 1 or 2.
func measureMirrored(order []variant, measure func(variant) (sample, error), note func(v variant, half int, err error)) map[string]sample {
	halves := map[string][]sample{}
	type noted struct {
		half int
		err  error
	}
	errs := map[string]noted{}
	failed := map[string]bool{}
	backward := slices.Clone(order)
	slices.Reverse(backward)
	for i, v := range slices.Concat(order, backward) {
		if failed[v.label] {
			continue
		}
		half := 1 + i/len(order)
		smp, err := measure(v)
		if err != nil {
			_, partial := errors.AsType[*partialError](err)
			if _, ok := errs[v.label]; !ok || !partial {
				errs[v.label] = noted{half, err}
			}
			if !partial {
				failed[v.label] = true
				continue
			}
		}
		halves[v.label] = append(halves[v.label], smp)
	}
	for _, v := range order {
		if e, ok := errs[v.label]; ok {
			note(v, e.half, e.err)
		}
	}
	out := map[string]sample{}
	for label, hs := range halves {
		if failed[label] || len(hs) != 2 {
			continue
		}
		out[label] = sample{rps: (hs[0].rps + hs[1].rps) / 2, p50: (hs[0].p50 + hs[1].p50) / 2}
	}
	return out
}

// noteErr records an error of cell c for variant v.
func (iv *interleaved) noteErr(c cellSpec, v variant, msg string) {
	k := c.key() + " " + v.label
	if e, ok := iv.errs[k]; ok {
		e.rounds++
		return
	}
	iv.errs[k] = &cellErr{rounds: 1, first: msg}
}

// measureCell measures cell c on p for s.roundDur. A measurement some of
// whose calls failed still counts (its req/s counts the successes): it is
// returned with a *partialError.
func measureCell(p *bench.Peer, c cellSpec, s settings) (sample, error) {
	if c.work == churn {
		rate, err := bench.MeasureChurn(p, c.conc, s.roundDur, s.maxReq)
		return sample{rps: rate}, err
	}
	t, err := bench.MeasureThroughput(p, c.conc, c.work == sseCall, s.roundDur, s.maxReq)
	if err != nil {
		return sample{}, err
	}
	if t.Lat.N == 0 && t.Errors > 0 {
		return sample{}, fmt.Errorf("every call failed (%d), the first: %s", t.Errors, t.FirstEr)
	}
	smp := sample{rps: t.RPS, p50: t.Lat.P50}
	if t.Errors > 0 {
		return smp, &partialError{calls: t.Errors, first: t.FirstEr}
	}
	return smp, nil
}

// partialError says that some calls of a measurement failed; the
// measurement itself counts.
type partialError struct {
	calls int
	first string
}

// Error says how many calls failed and how the first did.
func (e *partialError) Error() string {
	return fmt.Sprintf("%d calls failed, the first: %s", e.calls, e.first)
}
