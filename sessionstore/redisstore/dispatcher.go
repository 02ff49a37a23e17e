package redisstore

import (
	"context"
	"errors"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reconnection backoff of the dispatcher while Redis is unreachable.
const (
	minBackoff = 20 * time.Millisecond
	maxBackoff = 500 * time.Millisecond
)

// run is the dispatcher: the one goroutine that uses the bus's pub/sub
// connection. It subscribes and unsubscribes channels as local
// subscriptions come and go, routes messages to local subscriptions,
// pings the connection once it has been quiet for an interval (replacing
// it if the ping goes unanswered for opTimeout), rides out outages with a
// bounded backoff while go-redis reconnects and resubscribes, and
// re-checks the subscribed sessions after a reconnection and every
// interval, since messages published while disconnected, a termination
// frame included, are lost. It returns when the bus is closed.
func (b *bus) run() {
	defer close(b.exited)
	b.withTimeout(func(ctx context.Context) { _ = b.ps.Subscribe(ctx, b.wake) })
	var backoff time.Duration
	lost := false
	lastHeard, lastCheck := time.Now(), time.Now()
	var pingedAt time.Time // zero while no ping is outstanding
	for {
		b.sync()
		// Each read, with any connecting go-redis does within it, is
		// bounded by opTimeout.
		ctx, cancel := context.WithTimeout(b.ctx, b.opTimeout)
		msg, err := b.ps.ReceiveTimeout(ctx, min(b.opTimeout, b.interval))
		cancel()
		if b.ctx.Err() != nil {
			return
		}
		now := time.Now()
		switch {
		case err == nil:
			backoff, lastHeard, pingedAt = 0, now, time.Time{}
			if lost {
				// The connection is back and has resubscribed every channel:
				// whatever ended meanwhile can be seen now.
				lost = false
				b.recheck()
				lastCheck = time.Now()
			}
			b.handle(msg)
		case isTimeout(err) && (pingedAt.IsZero() || now.Sub(pingedAt) < b.opTimeout):
			if pingedAt.IsZero() && now.Sub(lastHeard) >= b.interval {
				// The Pong, or its absence, shows on a later read.
				pingedAt = now
				b.withTimeout(func(ctx context.Context) { _ = b.ps.Ping(ctx) })
			}
		default:
			if isTimeout(err) {
				b.replace() // the ping went unanswered: dead but not closed
			}
			b.mu.Lock()
			// Confirmations of SUBSCRIBEs sent on the broken connection will
			// not come; the resubscription's will, one per channel, and a
			// new local subscription waits for it.
			clear(b.acks)
			for name := range b.onWire {
				b.acks[name] = 1
			}
			b.mu.Unlock()
			lost, lastHeard, pingedAt = true, now, time.Time{}
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			if !b.pause(backoff) {
				return
			}
			continue
		}
		if time.Since(lastCheck) >= b.interval {
			b.recheck()
			lastCheck = time.Now()
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// withTimeout runs f with a context that ends after opTimeout or with the
// bus.
func (b *bus) withTimeout(f func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(b.ctx, b.opTimeout)
	defer cancel()
	f(ctx)
}

// pause waits for d, or reports false if the bus closes first.
func (b *bus) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-b.ctx.Done():
		return false
	}
}

// sync subscribes the dirty channels that have local subscriptions and
// unsubscribes those that have none. On failure go-redis still records
// the change, and applies it when it connects again.
func (b *bus) sync() {
	b.mu.Lock()
	var add, remove []string
	for name := range b.dirty {
		_, want := b.chans[name]
		_, have := b.onWire[name]
		switch {
		case want && !have:
			add = append(add, name)
			b.onWire[name] = struct{}{}
			b.acks[name]++
		case !want && have:
			remove = append(remove, name)
			delete(b.onWire, name)
		case want && b.acks[name] == 0:
			// Taken again while still subscribed (subscribe confirms that
			// itself; this is the safety net).
			b.confirmLocked(name)
		}
	}
	clear(b.dirty)
	b.mu.Unlock()
	if len(remove) > 0 {
		b.withTimeout(func(ctx context.Context) { _ = b.ps.Unsubscribe(ctx, remove...) })
	}
	if len(add) > 0 {
		b.withTimeout(func(ctx context.Context) { _ = b.ps.Subscribe(ctx, add...) })
	}
}

// replace closes the pub/sub connection and opens a new one, subscribed to
// the wake channel and every channel on the wire.
func (b *bus) replace() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return // close owns ps now
	}
	old := b.ps
	b.ps = b.client.Subscribe(b.ctx) // no channel: no I/O under mu
	names := append(slices.Collect(maps.Keys(b.onWire)), b.wake)
	b.mu.Unlock()
	_ = old.Close()
	b.withTimeout(func(ctx context.Context) { _ = b.ps.Subscribe(ctx, names...) })
}

// handle routes one thing read from the pub/sub connection.
func (b *bus) handle(msg any) {
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind == "subscribe" {
			b.confirm(m.Channel)
		}
	case *redis.Message:
		if m.Channel != b.wake { // a wake-up only makes the loop sync
			b.route(m.Channel, m.Payload)
		}
	}
}

// confirm counts a SUBSCRIBE confirmation for channel name; the last one
// expected marks the channel's state ready.
func (b *bus) confirm(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := b.acks[name]; n > 1 {
		b.acks[name] = n - 1
		return
	}
	delete(b.acks, name)
	b.confirmLocked(name)
}

func (b *bus) confirmLocked(name string) {
	if st := b.chans[name]; st != nil && !st.confirmed {
		st.confirmed = true
		close(st.ready)
	}
}

// route delivers a frame to the local subscriptions of channel name,
// without blocking: a subscription whose buffer is full misses the message.
func (b *bus) route(name, payload string) {
	if payload == frameTerminate {
		if name != b.broadcast { // a broadcast ends with its subscription only
			b.end(name)
		}
		return
	}
	data, ok := strings.CutPrefix(payload, frameData)
	if !ok {
		return // not a frame this version knows
	}
	msg := []byte(data)
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.chans[name]
	if st == nil {
		return
	}
	for sub := range st.subs {
		select {
		case sub.ch <- msg:
		default:
			b.dropped.Add(1)
			if name == b.broadcast {
				b.bcastDropped.Add(1)
			}
		}
	}
}

// recheck ends the local subscriptions of every session that is no longer
// live. On failure the next check tries again.
func (b *bus) recheck() {
	b.mu.Lock()
	names := make(map[string][]string, len(b.chans)) // session id -> its channels (topics included)
	for name := range b.chans {
		if name == b.broadcast {
			continue // no session's: it lives until closed
		}
		id, _, _ := strings.Cut(strings.TrimPrefix(name, b.prefix), " ")
		names[id] = append(names[id], name)
	}
	b.mu.Unlock()
	if len(names) == 0 {
		return
	}
	ids := make([]string, 0, len(names))
	for id := range names {
		ids = append(ids, id)
	}
	var dead []string
	b.withTimeout(func(ctx context.Context) { dead, _ = b.notLive(ctx, ids) })
	for _, id := range dead {
		for _, name := range names[id] {
			b.end(name)
		}
	}
}
