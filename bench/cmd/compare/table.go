package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/lifeline-mcp/lifeline/bench"
)

// cell is one measured value; ok false prints n/a; text overrides the number.
type cell struct {
	v    float64
	ok   bool
	text string
}

// row is one metric of the table, a cell per peer.
type row struct {
	name   string
	higher bool // higher is better
	cells  map[string]cell
	fmtv   func(float64) string
}

// ms formats milliseconds.
func ms(v float64) string { return fmt.Sprintf("%.2f ms", v) }

// num formats a count.
func num(v float64) string { return fmt.Sprintf("%.0f", v) }

// f2 formats with two decimals.
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// kib formats bytes as KiB.
func kib(v float64) string { return fmt.Sprintf("%.1f KiB", v/1024) }

// dms is d in milliseconds.
func dms(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

// tablePeers are the peers of the per-peer table (the floor has only
// throughput cells, which the interleaved tables carry).
var tablePeers = []string{bench.Lifeline, bench.MCPGo, bench.GoSDK, bench.Plain}

// buildRows makes the table's rows from every peer's results; a peer that
// did not run, or a measurement that failed or does not apply, is n/a.
func buildRows(res map[string]*peerResult, s settings) []row {
	var rows []row
	add := func(name string, higher bool, f func(float64) string, get func(*peerResult) cell) {
		r := row{name: name, higher: higher, cells: map[string]cell{}, fmtv: f}
		for _, p := range tablePeers {
			if pr, ok := res[p]; ok {
				r.cells[p] = get(pr)
			}
		}
		rows = append(rows, r)
	}
	plain := res[bench.Plain]
	beyond := func(p *peerResult, f func(bench.Idle) float64) cell {
		if !p.idleOK || plain == nil || !plain.idleOK {
			return cell{}
		}
		return cell{v: f(p.idle) - f(plain.idle), ok: true}
	}
	n := fmt.Sprintf("%d", s.idleN)
	add("idle GET stream ("+n+"): goroutines per stream, client+server", false, f2, func(p *peerResult) cell {
		return cell{v: p.idle.GoroutinesPerStream, ok: p.idleOK}
	})
	add("idle GET stream: goroutines per stream beyond plain net/http", false, f2, func(p *peerResult) cell {
		return beyond(p, func(i bench.Idle) float64 { return i.GoroutinesPerStream })
	})
	add("idle GET stream: heap per stream, client+server", false, kib, func(p *peerResult) cell {
		return cell{v: p.idle.HeapPerStream, ok: p.idleOK}
	})
	add("idle GET stream: heap per stream beyond plain net/http", false, kib, func(p *peerResult) cell {
		return beyond(p, func(i bench.Idle) float64 { return i.HeapPerStream })
	})
	add("idle GET stream: heap + goroutine stacks per stream beyond plain net/http", false, kib, func(p *peerResult) cell {
		return beyond(p, func(i bench.Idle) float64 { return i.HeapPerStream + i.StackPerStream })
	})
	add("idle GET stream: RSS per stream, client+server", false, kib, func(p *peerResult) cell {
		return cell{v: p.idle.RSSPerStream, ok: p.idleOK}
	})
	add("idle session without stream: goroutines per session", false, f2, func(p *peerResult) cell {
		return cell{v: p.idle.GoroutinesPerSess, ok: p.idleOK && p != plain}
	})
	add("idle session without stream: heap per session, client+server", false, kib, func(p *peerResult) cell {
		return cell{v: p.idle.HeapPerSession, ok: p.idleOK && p != plain}
	})
	add(fmt.Sprintf("idle streams + sessions, heartbeat %v: process CPU s per minute", s.heartbeat), false, f2, func(p *peerResult) cell {
		return cell{v: p.idle.CPUPerMin, ok: p.idleOK}
	})
	closed := func(p *peerResult, l bench.Latency) cell {
		if !p.lifeOK {
			return cell{}
		}
		if p.life.NotClosed > 0 {
			return cell{v: 1e9, ok: true, text: fmt.Sprintf("never (%d of %d streams open > %v)", p.life.NotClosed, p.life.NotClosed+l.N, p.life.Timeout)}
		}
		return cell{v: dms(l.P99), ok: true}
	}
	add("DELETE until the GET stream closed: p50", false, ms, func(p *peerResult) cell {
		c := closed(p, p.life.DeleteClose)
		if c.ok && c.text == "" {
			c.v = dms(p.life.DeleteClose.P50)
		}
		return c
	})
	add("DELETE until the GET stream closed: p99", false, ms, func(p *peerResult) cell { return closed(p, p.life.DeleteClose) })
	add("DELETE response: p99", false, ms, func(p *peerResult) cell {
		return cell{v: dms(p.life.DeleteReturn.P99), ok: p.lifeOK && p.life.DeleteReturn.N > 0}
	})
	nt := func(p *peerResult, v time.Duration) cell {
		if !p.notOK {
			return cell{}
		}
		c := cell{v: dms(v), ok: p.notify.N > 0}
		if p.notify.N < p.tried {
			c.ok, c.v = true, dms(v)
			c.text = fmt.Sprintf("%s (%d of %d arrived)", ms(dms(v)), p.notify.N, p.tried)
			if p.notify.N == 0 {
				c.text, c.v = fmt.Sprintf("none arrived (0 of %d)", p.tried), 1e9
			}
		}
		return c
	}
	add("notification on the GET stream, call until event: p50", false, ms, func(p *peerResult) cell { return nt(p, p.notify.P50) })
	add("notification on the GET stream, call until event: p99", false, ms, func(p *peerResult) cell { return nt(p, p.notify.P99) })
	capped := func(p *peerResult, d time.Duration) cell {
		if !p.stallOK {
			return cell{}
		}
		if d > p.stall.Cap {
			return cell{v: 1e9, ok: true, text: fmt.Sprintf("> %v", p.stall.Cap)}
		}
		return cell{v: dms(d), ok: true}
	}
	add("stalled reader: DELETE returns", false, ms, func(p *peerResult) cell { return capped(p, p.stall.DeleteReturned) })
	add("stalled reader: every goroutine released", false, ms, func(p *peerResult) cell { return capped(p, p.stall.Released) })
	return rows
}

// columnTitle is peer name's column heading.
func columnTitle(name string) string {
	switch name {
	case bench.MCPGo:
		return "stock mcp-go"
	case bench.Floor:
		return "mcp-go floor"
	case bench.Plain:
		return "limit (plain net/http)"
	}
	return name
}

// ratioTitle is the heading of lifeline's ratio to peer name.
func ratioTitle(name string) string {
	if name == bench.Plain {
		return "lifeline vs limit"
	}
	return "lifeline vs " + name
}

// tableHeader is the table's two header lines: metric, a column per peer,
// and lifeline's ratio to each other peer.
func tableHeader() string {
	titles := []string{"metric"}
	for _, p := range tablePeers {
		titles = append(titles, columnTitle(p))
	}
	for _, p := range tablePeers[1:] {
		titles = append(titles, ratioTitle(p))
	}
	return "| " + strings.Join(titles, " | ") + " |\n|---" + strings.Repeat("|---:", len(titles)-1) + "|\n"
}

// renderTable renders every row with a column per peer and lifeline's ratios.
func renderTable(res map[string]*peerResult, s settings) string {
	var b strings.Builder
	b.WriteString(tableHeader())
	for _, r := range buildRows(res, s) {
		b.WriteString("| " + r.name)
		for _, p := range tablePeers {
			c, ok := r.cells[p]
			switch {
			case !ok || !c.ok:
				b.WriteString(" | n/a")
			case c.text != "":
				b.WriteString(" | " + c.text)
			default:
				b.WriteString(" | " + r.fmtv(c.v))
			}
		}
		l := r.cells[bench.Lifeline]
		for _, p := range tablePeers[1:] {
			c := r.cells[p]
			if !l.ok || !c.ok || l.text != "" || c.text != "" || c.v == 0 {
				b.WriteString(" | n/a")
				continue
			}
			b.WriteString(fmt.Sprintf(" | %.2fx", l.v/c.v))
		}
		b.WriteString(" |\n")
	}
	b.WriteString("\nRatios are lifeline's value over the other's: every row is a cost or a delay, so below 1 is better for lifeline.\n")
	return b.String()
}
