package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lifeline-mcp/lifeline/bench"
)

// renderSVG draws two panels of horizontal bars: tools/call req/s at 64
// sessions (JSON), the median of the interleaved rounds, and heap per idle
// GET stream beyond the plain handler's, for the peers with sessions.
func renderSVG(res map[string]*peerResult, iv *interleaved) string {
	type panel struct {
		title string
		names []string
		unit  func(float64) string
		val   func(string, *peerResult) (float64, bool) // the peer's result is nil when it did not run
	}
	thrTitle := fmt.Sprintf("tools/call req/s, 64 sessions, JSON, median of %d interleaved rounds (higher is better)", len(iv.rounds))
	thrNames := []string{bench.Lifeline, bench.MCPGo, bench.GoSDK, bench.Floor}
	thr := func(name string, _ *peerResult) (float64, bool) {
		s := iv.rpsSpread(cellJSON64.key(), name)
		return s.med, s.n > 0
	}
	plain := res[bench.Plain]
	beyond := func(_ string, r *peerResult) (float64, bool) {
		if r == nil || plain == nil || !plain.idleOK {
			return 0, false
		}
		return r.idle.HeapPerStream - plain.idle.HeapPerStream, r.idleOK
	}
	streams := slices.DeleteFunc(slices.Clone(peers), func(p string) bool { return p == bench.Floor || p == bench.Plain })
	panels := []panel{
		{thrTitle, thrNames, func(v float64) string { return fmt.Sprintf("%.0f req/s", v) }, thr},
		{"heap per idle GET stream beyond plain net/http (lower is better)", streams,
			func(v float64) string { return fmt.Sprintf("%.1f KiB", v/1024) }, beyond},
	}
	colors := map[string]string{"lifeline": "#2b7a3d", "mcp-go": "#c0392b", "go-sdk": "#2c5aa0", "floor": "#d68910", "plain": "#888888"}
	const w, left, barW, barH, gap = 720, 110, 460, 22, 8
	panelH := func(n int) int { return 30 + n*(barH+gap) + 16 }
	height := 10
	for _, p := range panels {
		height += panelH(len(p.names))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="13">`+"\n", w, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	y0 := 10
	for _, p := range panels {
		fmt.Fprintf(&b, `<text x="10" y="%d" font-weight="bold">%s</text>`+"\n", y0+16, p.title)
		maxV := 0.0
		for _, name := range p.names {
			if v, ok := p.val(name, res[name]); ok && v > maxV {
				maxV = v
			}
		}
		for j, name := range p.names {
			y := y0 + 30 + j*(barH+gap)
			fmt.Fprintf(&b, `<text x="10" y="%d">%s</text>`+"\n", y+16, name)
			v, ok := p.val(name, res[name])
			if !ok || maxV <= 0 {
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#666">n/a</text>`+"\n", left, y+16)
				continue
			}
			bw := int(float64(barW) * v / maxV)
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, max(bw, 1), barH, colors[name])
			fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", left+max(bw, 1)+6, y+16, p.unit(v))
		}
		y0 += panelH(len(p.names))
	}
	b.WriteString("</svg>\n")
	return b.String()
}
