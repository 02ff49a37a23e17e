package streamable

import "time"

// Lingering before a resumable response opens. With an event log in
// another process (the Redis store's), each write of a resumable POST
// response waits for the round trip that records it first. A request that
// sends notifications (progress, say) and answers soon after would wait
// for two: the opening's (its priming event and the notifications) and
// the answer's. So the writer holds a response's first notifications back
// for up to openLinger: a request that answers meanwhile has its priming
// event, the notifications and the answer recorded in one call and written
// in one write (respond); otherwise they go out when the linger ends, as
// they would have at once. Nothing else is held: a batch that carries a
// request to the client (sampling, elicitation, whose caller waits for
// the client's answer) goes out at once, behind what was held, and a
// keep-alive or a let-go sends what is held first. The memory log costs no
// round trip, and a response on it lingers for localLinger only: long
// enough for a request that answers at once to have its response written
// whole, in one write with its end (openLast), instead of a write and a
// flush for its opening, another for each later batch, and the end.

// openLinger is how long a resumable response on a log in another process
// may hold its first notifications back, waiting for its answer: a few of
// Redis's round trips, and well under what a person notices.
const openLinger = 5 * time.Millisecond

// localLinger is openLinger for the process's own log, which costs no
// round trip: long enough for a request that answers at once to be
// written whole.
const localLinger = time.Millisecond

// lingerFor is the linger of a response on a log that is the process's
// own (local) or not.
func lingerFor(local bool) time.Duration {
	if local {
		return localLinger
	}
	return openLinger
}

// lingers reports whether the writer may still hold notifications back:
// the response is resumable and has not opened (on any log: lingerFor
// says for how long).
func (p *postStream) lingers() bool {
	return p.resumable && p.sse == nil
}

// heldBack is what a lingering response holds back, and the timer that
// ends the linger: made for a response that lingers, so that a response
// that never does carries one nil pointer.
type heldBack struct {
	msgs  [][]byte
	timer *time.Timer
}

// deliver sends batch, one write's worth that sendBatch took from the
// queues, or holds it back while the response lingers and batch is only
// notifications (hasRequest false). What was held goes ahead of it.
func (p *postStream) deliver(batch [][]byte, hasRequest bool) {
	if p.held == nil && (hasRequest || !p.lingers()) {
		// Nothing held, nothing to hold: sent as it is, a frame less deep
		// under net/http's header writing on the writer's stack.
		p.send(batch...)
		p.sent(batch)
		return
	}
	if !hasRequest && p.lingers() && p.heldCount()+len(batch) <= maxBatch {
		if p.held == nil {
			p.held = &heldBack{timer: time.NewTimer(p.h.openLinger)}
		}
		p.held.msgs = append(p.held.msgs, batch...) // a copy: sendBatch reuses batch
		return
	}
	p.sendAfterHeld(batch)
}

// sendAfterHeld sends what is held back, if anything, then msgs, in one
// write, ending the linger.
func (p *postStream) sendAfterHeld(msgs [][]byte) {
	if p.held != nil {
		msgs = append(p.takeHeld(), msgs...)
	}
	if len(msgs) == 0 {
		return
	}
	p.send(msgs...)
	p.sent(msgs)
}

// heldCount is how many messages are held back.
func (p *postStream) heldCount() int {
	if p.held == nil {
		return 0
	}
	return len(p.held.msgs)
}

// lingerOver is the channel of the linger's end, nil when nothing is held.
func (p *postStream) lingerOver() <-chan time.Time {
	if p.held == nil {
		return nil
	}
	return p.held.timer.C
}

// flushHeld sends what the writer holds back, if anything: at the
// linger's end, and before the writer does anything else with the
// response.
func (p *postStream) flushHeld() { p.sendAfterHeld(nil) }

// leaveHeldToAnswer ends the linger of a writer that exits, the request
// having returned: respond takes what is held, with the answer.
func (p *postStream) leaveHeldToAnswer() {
	if p.held != nil {
		p.held.timer.Stop()
	}
}

// takeHeld returns what is held back and ends the linger. p.held is not
// nil.
func (p *postStream) takeHeld() [][]byte {
	msgs := p.held.msgs
	p.held.timer.Stop()
	p.held = nil
	return msgs
}
