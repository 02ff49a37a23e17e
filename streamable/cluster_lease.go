package streamable

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
)

// Stream leases with replicas. A GET stream's lease is what tells the other
// replicas that its client is served here; when the replica dies it must
// lapse soon, so that the client's reconnect elsewhere is admitted within
// seconds, not heartbeats. So the lease is short (sharedLeaseTTL at most)
// and renewed often (every third of it) by a leaseRenewer, on a timer of its
// own and off the stream's goroutine: a stream blocked in a slow write keeps
// its lease (and a second GET elsewhere is answered 409) until the write's
// deadline ends it.

// sharedLeaseTTL caps a shared store's stream lease: a crashed replica's
// streams are taken over by a GET on another replica at most this long
// (plus a renewal period's slack) after its last renewal.
const sharedLeaseTTL = 3 * time.Second

// errLeaseLost ends a stream whose lease another stream took, or whose
// session ended in the store.
var errLeaseLost = errors.New("stream lease lost")

// leaseRenewEvery is how often a shared store's stream lease is renewed:
// three times per lease, so that one slow or failed renewal does not let it
// lapse.
func (h *Handler) leaseRenewEvery() time.Duration {
	return h.leaseTTL() / 3
}

// leaseRenewer renews one GET stream's lease on its own timer (a shared
// store only). Each renewal runs on the timer's goroutine, one at a time:
// the next is scheduled when one ends. A lease lost to another stream, or a
// session ended in the store, closes the stream; a store outage leaves it
// serving on its old lease (renewLease logs it once).
type leaseRenewer struct {
	h     *Handler
	g     *getStream
	every time.Duration

	// down: the last renewal could not reach the store, or one is in
	// flight. Pongs POSTed to other replicas travel through the store, so
	// meanwhile a missing pong says nothing about the client.
	down    atomic.Bool
	outage  bool // the last renewal failed for an outage; renewal goroutine only
	mu      sync.Mutex
	lease   sessionstore.Lease
	timer   *time.Timer
	stopped bool
	running bool          // a renewal is in flight
	idle    chan struct{} // made by stop when it must wait for the renewal in flight
}

// startRenewer starts renewing g's lease, every leaseRenewEvery.
func (h *Handler) startRenewer(g *getStream) *leaseRenewer {
	r := &leaseRenewer{h: h, g: g, every: h.leaseRenewEvery(), lease: g.lease}
	r.mu.Lock()
	r.timer = time.AfterFunc(r.every, r.renew)
	r.mu.Unlock()
	return r
}

// renew runs one renewal and schedules the next.
func (r *leaseRenewer) renew() {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return
	}
	r.running = true
	r.down.Store(true)
	lease := r.lease
	r.mu.Unlock()

	l, err := r.h.renewLease(r.g, lease)
	outage := r.g.renewFailing
	if r.outage && !outage {
		// Pongs POSTed to other replicas were lost while the store was
		// down: judge the client from now on.
		r.g.tracker.Forgive()
	}
	r.outage = outage
	r.down.Store(outage)

	r.mu.Lock()
	r.lease = l
	r.running = false
	if r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
	stopped := r.stopped
	if !stopped && err == nil {
		r.timer.Reset(r.every)
	}
	r.mu.Unlock()
	if err != nil && !stopped && r.g.ctx.Err() == nil {
		r.h.log.Warn("lifeline: stream lease lost; closing the stream", "session", logID(r.g.sess.id), "err", err)
		r.g.close(errLeaseLost)
	}
}

// storeDown reports whether the store is down for the stream's renewals:
// the last one failed for an outage, or one is still in flight.
func (r *leaseRenewer) storeDown() bool {
	return r != nil && r.down.Load()
}

// stop ends the renewals, waits for one in flight (the caller has closed the
// stream, which cuts its store calls short), and returns the lease to
// release.
func (r *leaseRenewer) stop() sessionstore.Lease {
	r.mu.Lock()
	r.stopped = true
	r.timer.Stop()
	var wait chan struct{}
	if r.running {
		r.idle = make(chan struct{})
		wait = r.idle
	}
	r.mu.Unlock()
	if wait != nil {
		<-wait
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lease
}
