package streamable

import "sync"

// postSignals tells the resumers of POST streams (resume_post.go) when the
// stream they follow got a new event here, and whether its request still
// runs here. An entry exists only while its request runs here or a
// resumer follows it, so the map is bounded by running requests and open
// resumers.
type postSignals struct {
	mu sync.Mutex
	m  map[string]*postSignal
}

type postSignal struct {
	changed  chan struct{} // closed (and replaced) on each change while watched
	running  int           // requests here recording on the stream (0 or 1)
	watchers int           // resumers here following it
	settled  bool          // a record behind its write ended here, landed or failed (post_behind.go)
}

// signalKey names one stream of one session in postSignals.
func signalKey(sessionID, stream string) string { return sessionID + "\x00" + stream }

// add changes the stream's counts by running and watchers, dropping its
// entry once both are zero. A change of running is a change watchers see.
func (ps *postSignals) add(key string, running, watchers int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e := ps.m[key]
	if e == nil {
		if ps.m == nil {
			ps.m = make(map[string]*postSignal)
		}
		e = &postSignal{changed: make(chan struct{})}
		ps.m[key] = e
	}
	e.running += running
	e.watchers += watchers
	if running != 0 {
		e.signalLocked()
	}
	if e.running <= 0 && e.watchers <= 0 {
		delete(ps.m, key)
	}
}

// changedOn tells the stream's watchers it got a new event.
func (ps *postSignals) changedOn(key string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if e := ps.m[key]; e != nil {
		e.signalLocked()
	}
}

func (e *postSignal) signalLocked() {
	if e.watchers > 0 {
		close(e.changed)
		e.changed = make(chan struct{})
	}
}

// settle counts the stream's request out as add(key, -1, 0) does, once
// its record behind its write ended (landed or failed), and keeps that
// known to the resumers that watch it meanwhile.
func (ps *postSignals) settle(key string) {
	ps.mu.Lock()
	if e := ps.m[key]; e != nil {
		e.settled = true
	}
	ps.mu.Unlock()
	ps.add(key, -1, 0)
}

// next returns, for a watcher of the stream (add(key, 0, 1) first), the
// channel the next change closes, whether its request runs here, and
// whether a record behind its write ended here while watched (settle).
func (ps *postSignals) next(key string) (changed <-chan struct{}, local, settled bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e := ps.m[key]
	return e.changed, e.running > 0, e.settled
}

// watched reports whether a resumer here follows the stream.
func (ps *postSignals) watched(key string) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	e := ps.m[key]
	return e != nil && e.watchers > 0
}
