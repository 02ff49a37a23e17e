package streamable

import (
	"github.com/mark3labs/mcp-go/mcp"
)

// A server-to-client request (sampling, elicitation, roots) whose caller
// gives up must not reach the client afterwards: the client would run it (an
// LLM call, a prompt to the user) for an answer nobody reads. So the call
// table follows each encoded request from its queue to its stream:
//
//   - queued: on a queue, in the carry-over or held by a pump; not written.
//   - taken: a writer took it off to write it (or, with replicas, forwarded
//     it to the replica holding the stream).
//   - withdrawn: its call ended while it was queued; the writer that takes it
//     skips it, and a full queue drops it to make room (compact).
//
// A call that ends after its request was taken, without an answer, sends
// notifications/cancelled on the same stream instead. Requests are known by
// the address of their encoding's first byte, which every queue, carry-over
// and pump passes along unchanged.

// outState is where a call's encoded request is.
type outState uint8

const (
	outQueued    outState = iota
	outTaken              // being written (or forwarded)
	outWritten            // written whole (or forwarded)
	outWithdrawn          // its call ended while it was queued
	outAbandoned          // its call ended while it was being written
)

// track records msg, the encoded request of call id, as queued. Callers
// hold t.sendMu.
func (t *callTable) track(msg []byte, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out == nil {
		t.out = make(map[*byte]outbound)
	}
	if _, ok := t.out[&msg[0]]; !ok {
		t.tracked.Add(1)
	}
	t.out[&msg[0]] = outbound{id: id, state: outQueued}
}

// outbound is a tracked request: its call's id and where it is.
type outbound struct {
	id    int64
	state outState
}

// take is called by a writer that took msg off a queue (or the carry-over)
// to write it: it reports false for a withdrawn request, which the writer
// skips (and which is forgotten). Any other message is written.
func (t *callTable) take(msg []byte) bool {
	if len(msg) == 0 {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.out[&msg[0]]
	switch {
	case !ok:
		return true
	case o.state == outWithdrawn:
		t.forgetLocked(msg)
		t.withdrawn--
		return false
	}
	o.state = outTaken
	t.out[&msg[0]] = o
	return true
}

// wrote records that msg, taken, was written whole (or forwarded to the
// replica holding the stream). Any other message is left alone.
func (t *callTable) wrote(msg []byte) {
	if len(msg) == 0 || t.tracked.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch o, ok := t.out[&msg[0]]; {
	case ok && o.state == outTaken:
		o.state = outWritten
		t.out[&msg[0]] = o
	case ok && o.state == outAbandoned:
		t.forgetLocked(msg)
	}
}

// keepAfterFailure records that the write of msg, taken, failed, and
// reports whether it is to be kept for the next stream: it is put back in
// the queued state, unless its call ended meanwhile (then it is forgotten,
// and dropped). Any other message is kept.
func (t *callTable) keepAfterFailure(msg []byte) (keep bool) {
	if len(msg) == 0 || t.tracked.Load() == 0 {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch o, ok := t.out[&msg[0]]; {
	case ok && o.state == outTaken:
		o.state = outQueued
		t.out[&msg[0]] = o
	case ok && o.state == outAbandoned:
		t.forgetLocked(msg)
		return false
	}
	return true
}

// lost forgets msg, which nothing will write any more (its request's
// stream failed).
func (t *callTable) lost(msg []byte) {
	if len(msg) == 0 || t.tracked.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.out[&msg[0]]; ok {
		if o.state == outWithdrawn {
			t.withdrawn--
		}
		t.forgetLocked(msg)
	}
}

// forgetLocked drops msg's entry. Callers hold t.mu.
func (t *callTable) forgetLocked(msg []byte) {
	delete(t.out, &msg[0])
	t.tracked.Add(-1)
}

// settle ends the tracking of a call's request when the call ends: a
// request still queued is withdrawn (writers skip it); one being written
// is abandoned (forgotten once its write ends, and not kept if it fails);
// one written is forgotten. It reports whether the request was taken,
// that is written or being written.
func (t *callTable) settle(msg []byte) (taken bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.out[&msg[0]]
	switch {
	case !ok:
		return false
	case o.state == outQueued:
		o.state = outWithdrawn
		t.out[&msg[0]] = o
		t.withdrawn++
		return false
	case o.state == outTaken:
		o.state = outAbandoned
		t.out[&msg[0]] = o
		return true
	case o.state == outWritten:
		t.forgetLocked(msg)
		return true
	}
	return false
}

// untrack forgets a request that never made it onto its queue.
func (t *callTable) untrack(msg []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(msg)
}

// withdrawnDropped reports whether msg is a withdrawn request, and forgets
// it if so: whoever holds it drops it.
func (t *callTable) withdrawnDropped(msg []byte) bool {
	if len(msg) == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.out[&msg[0]]; ok && o.state == outWithdrawn {
		t.forgetLocked(msg)
		t.withdrawn--
		return true
	}
	return false
}

// anyWithdrawn reports whether some withdrawn request waits somewhere.
func (t *callTable) anyWithdrawn() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.withdrawn > 0
}

// prune drops the withdrawn requests from msgs (a pump's held messages),
// keeping the order of the rest.
func (t *callTable) prune(msgs []carried) []carried {
	if !t.anyWithdrawn() {
		return msgs
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if !t.withdrawnDropped(m.msg) {
			kept = append(kept, m)
		}
	}
	clear(msgs[len(kept):])
	return kept
}

// enqueue puts msg, the encoded request of call id, on queue without
// blocking, and tracks it. A full queue that holds withdrawn requests is
// compacted first. It reports false if the queue is still full.
func (t *callTable) enqueue(queue chan []byte, msg []byte, id int64) bool {
	t.sendMu.Lock()
	defer t.sendMu.Unlock()
	t.track(msg, id)
	select {
	case queue <- msg:
		return true
	default:
	}
	t.compact(queue)
	select {
	case queue <- msg:
		return true
	default:
		t.untrack(msg)
		return false
	}
}

// compact takes every request off a full queue and puts back those not
// withdrawn, in order, so that requests whose callers gave up make room.
// Callers hold t.sendMu: only enqueue sends on a requests queue, so the
// queue has room for what is put back. A writer taking from the queue
// meanwhile may write a later request before an earlier one put back;
// server-to-client requests carry no order between them.
func (t *callTable) compact(queue chan []byte) {
	if !t.anyWithdrawn() {
		return
	}
	kept := make([][]byte, 0, len(queue))
take:
	for n := len(queue); n > 0; n-- {
		select {
		case m := <-queue:
			if !t.withdrawnDropped(m) {
				kept = append(kept, m)
			}
		default:
			break take // a writer emptied it meanwhile
		}
	}
	for _, m := range kept {
		select {
		case queue <- m:
		default:
			// Cannot happen (see above); the request's call times out.
			t.untrack(m)
		}
	}
}

// cancelledNotification tells the client that the server no longer waits
// for the answer to its request id.
func cancelledNotification(id int64, reason string) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationCancelled),
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"requestId": id, "reason": reason}},
	}}
}

// undeliverable fails the call whose request msg is, dropped because no
// stream could write it (maxWriteAttempts): its caller learns it at once
// instead of waiting for an answer that cannot come, and nothing cancels a
// request the client never got whole. It reports whether msg was such a
// request of this replica's; any other message is left alone.
func (t *callTable) undeliverable(msg []byte, err error) (tracked bool) {
	if len(msg) == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	o, ok := t.out[&msg[0]]
	if !ok {
		return false
	}
	t.forgetLocked(msg)
	if o.state == outWithdrawn {
		t.withdrawn--
		return true
	}
	if ch := t.waiting[o.id]; ch != nil {
		delete(t.waiting, o.id)
		ch <- callResult{err: err}
	}
	return true
}

// dropQueued forgets msg if it is still queued (nothing took it), and
// reports whether it did: its stream will never write it.
func (t *callTable) dropQueued(msg []byte) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.out[&msg[0]]; ok && o.state == outQueued {
		t.forgetLocked(msg)
		return true
	}
	return false
}
