package testutil

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Fault is a cut or a stall a FaultProxy makes on the connections that
// carry matching requests; see FaultProxy.Arm.
type Fault struct {
	// Match picks the requests the fault is for, from the connection as
	// it is when the request's head has arrived (its Method, Target and
	// Header are that request's); nil picks every request. For "the next
	// connection", match ConnInfo.Requests == 1.
	Match func(ConnInfo) bool
	// After is how many bytes go from backend to client, counted from
	// the matching request's head (so the response's status line and
	// headers count), before the fault. 0 faults at once, before the
	// request's head reaches the backend. It must not be negative.
	After int64
	// MidEvent, after the After bytes, forwards on until the stream is
	// inside a server-sent event's data line, and faults there: the
	// client gets the event's first field lines and part of its first
	// data line ("data:" and about half of its value, as far as the
	// backend has sent it), never the line's end. The proxy looks for
	// "data:" at the start of a line in the raw bytes (chunked transfer
	// coding included).
	MidEvent bool
	// Stall stalls the connection (see FaultProxy.Stall) instead of
	// cutting it; FaultProxy.Resume lets it go on from that byte.
	Stall bool
	// Times is how many requests the fault hits: 0 or 1 once, n > 1 the
	// next n matching requests, a negative number every matching request
	// until disarmed.
	Times int
}

// armedFault is a Fault armed on a proxy, with the hits it has left
// (negative: no limit; 0: used up or disarmed). Guarded by the proxy's mu.
type armedFault struct {
	f    Fault
	left int
}

// Arm arms f: each request it matches, on a connection open now or later,
// has its connection cut or stalled after f.After bytes of the answer, as
// f says, until f has hit f.Times requests or disarm is called. A later
// matching request on the same connection (keep-alive) re-arms it with
// its own count. When several armed faults match a request, the first
// armed wins. Random cuts (FaultProxyConfig.Random) apply as well: the
// first fault due wins. A fault armed on a connection stays with it until
// it is made (a response shorter than After leaves it for the next
// one). Match may be called from several goroutines at once. Arm panics
// if f.After is negative.
func (p *FaultProxy) Arm(f Fault) (disarm func()) {
	if f.After < 0 {
		panic(fmt.Sprintf("fault proxy: Fault.After %d is negative", f.After))
	}
	a := &armedFault{f: f, left: f.Times}
	if a.left == 0 {
		a.left = 1
	}
	p.mu.Lock()
	p.faults = append(p.faults, a)
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		a.left = 0
		p.faults = slices.DeleteFunc(p.faults, func(b *armedFault) bool { return b == a })
	}
}

// ArmConns arms f on each live connection match picks (all if match is
// nil) and returns how many: each is cut or stalled once f.After more
// bytes have gone from backend to client, as f says (f.Match and f.Times
// are not used). With f.After 0 and not f.MidEvent the fault is made at
// once, as Cut or Stall would. After counts from the bytes the
// connection had forwarded when ArmConns was called: bytes the proxy was
// forwarding at that moment may count towards it. A fault armed this way
// replaces one armed on the connection before and not yet made.
func (p *FaultProxy) ArmConns(match func(ConnInfo) bool, f Fault) int {
	if f.After < 0 {
		panic(fmt.Sprintf("fault proxy: Fault.After %d is negative", f.After))
	}
	n := 0
	for _, c := range p.matching(match) {
		if c.isEnded() {
			continue
		}
		switch c.arm(f) {
		case actCut:
			c.cut(false)
		case actStall:
			c.stall()
		}
		n++
	}
	return n
}

// faultFor returns the first armed fault matching ci, a request head just
// seen, and uses one of its hits. Match runs without the proxy's lock.
func (p *FaultProxy) faultFor(ci ConnInfo) (Fault, bool) {
	p.mu.Lock()
	faults := slices.Clone(p.faults)
	p.mu.Unlock()
	for _, a := range faults {
		if a.f.Match != nil && !a.f.Match(ci) {
			continue
		}
		p.mu.Lock()
		ok := a.left != 0
		if a.left > 0 {
			a.left--
			if a.left == 0 {
				p.faults = slices.DeleteFunc(p.faults, func(b *armedFault) bool { return b == a })
			}
		}
		p.mu.Unlock()
		if ok {
			return a.f, true
		}
	}
	return Fault{}, false
}

// RandomCuts cuts connections at random points for soak tests. Each
// connection is cut once the backend has sent it MinBytes plus an
// exponentially distributed number of bytes of mean MeanBytes, drawn from
// a generator seeded with Seed and the connection's accept order: the
// same seed cuts the n-th connection at the same byte in every run, however
// the bytes are split into TCP segments. (A cut after exponentially many
// bytes is a cut with the same small probability at every byte: about
// c/MeanBytes for each chunk of c bytes.) Cuts are made as
// FaultProxyConfig.Cut says and counted in FaultStats.Cuts.
type RandomCuts struct {
	Seed      uint64
	MeanBytes int64 // 0 turns random cuts off
	MinBytes  int64 // bytes every connection gets before it may be cut
}

// At returns the number of backend-to-client bytes after which the
// connection accepted id-th (from 0) is cut, and false if random cuts are
// off.
func (r RandomCuts) At(id int) (int64, bool) {
	if r.MeanBytes <= 0 {
		return 0, false
	}
	rng := rand.New(rand.NewPCG(r.Seed, uint64(id)))
	return r.MinBytes + int64(rng.ExpFloat64()*float64(r.MeanBytes)), true
}

// sseData is the field name MidEvent faults look for at a line start.
const sseData = "data:"

// sseScan finds, in a byte stream fed to it piece by piece, a point
// inside a server-sent event's data line.
type sseScan struct {
	lineStart bool // the previous byte ended a line
	matched   int  // bytes of sseData matched at the current line's start
}

// find returns how many bytes of p to deliver so that the stream ends
// inside a data line, and true; or len(p) and false if p holds no such
// point yet (the scan goes on in the next p).
func (s *sseScan) find(p []byte) (int, bool) {
	for i, b := range p {
		switch {
		case b == '\n' || b == '\r':
			s.lineStart, s.matched = true, 0
		case (s.lineStart || s.matched > 0) && b == sseData[s.matched]:
			s.lineStart = false
			s.matched++
			if s.matched < len(sseData) {
				continue
			}
			rest := p[i+1:]
			end := bytes.IndexAny(rest, "\r\n")
			if end < 0 {
				return len(p), true // the line goes on past p: cut at p's end
			}
			return i + 1 + (end+1)/2, true
		default:
			s.lineStart, s.matched = false, 0
		}
	}
	return len(p), false
}
