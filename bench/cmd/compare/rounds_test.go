package main

import (
	"errors"
	"strings"
	"testing"

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
}

// TestHeadline checks that the headline takes the median of the per-round
// ratios, skipping a round that missed a peer, and falls back to the
// per-peer cells when the rounds did not run.
func TestHeadline(t *testing.T) {
	res := map[string]*peerResult{
		bench.Lifeline: {thr: map[string]bench.Throughput{"json-64": {RPS: 300}}},
		bench.MCPGo:    {thr: map[string]bench.Throughput{"json-64": {RPS: 100}}},
		bench.GoSDK:    {thr: map[string]bench.Throughput{"json-64": {RPS: 150}}},
	}
	iv := &interleaved{peers: []string{bench.Lifeline, bench.MCPGo, bench.GoSDK}, rounds: []map[string]float64{
		{bench.Lifeline: 110, bench.MCPGo: 100, bench.GoSDK: 10},
		{bench.Lifeline: 120, bench.MCPGo: 100},
		{bench.Lifeline: 130, bench.MCPGo: 100, bench.GoSDK: 10},
	}}
	h := headlineOf(res, iv)
	if h.mcpgo.n != 3 || h.mcpgo.v != 1.2 || h.mcpgo.lo != 1.1 || h.mcpgo.hi != 1.3 {
		t.Errorf("vs mcp-go = %+v, want median 1.2 of 3 rounds, range 1.1-1.3", h.mcpgo)
	}
	if h.gosdk.n != 2 || h.gosdk.v != 12 {
		t.Errorf("vs go-sdk = %+v, want median 12 of 2 rounds", h.gosdk)
	}
	if !strings.Contains(renderInterleaved(iv), "| stock mcp-go | 100 (3 rounds) | 1.20x | 1.10x – 1.30x |") {
		t.Errorf("interleaved table:\n%s", renderInterleaved(iv))
	}
	h = headlineOf(res, &interleaved{err: errors.New("boom")})
	if h.mcpgo.n != 0 || h.mcpgo.v != 3 || h.gosdk.v != 2 || !strings.Contains(h.mcpgo.describe(true), "per-peer cells") {
		t.Errorf("fallback = %+v", h)
	}
	if got := ratioLine(res, h); !strings.HasPrefix(got, "RATIO throughput_vs_mcpgo=3.00 throughput_vs_gosdk=2.00 ") {
		t.Errorf("ratio line = %q", got)
	}
}
