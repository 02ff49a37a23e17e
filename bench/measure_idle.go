package bench

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"
)

// What idle sessions and idle GET streams cost: MeasureIdle opens them and
// reads the process (LocalProbe) or the server's own (RemoteProbe).

// Idle is what idle sessions and GET streams cost, measured in-process
// (server and client side together).
type Idle struct {
	N                   int
	Opened              int
	GoroutinesPerSess   float64 // after initialize, before any GET
	HeapPerSession      float64
	GoroutinesPerStream float64 // open GET streams, over the sessions alone
	HeapPerStream       float64
	// StackPerStream is the goroutine stacks' share (StackInuse) per open
	// GET stream, which HeapPerStream does not count.
	StackPerStream float64
	RSSPerStream   float64
	// RSSPerSession is the server process's resident set per session
	// (MeasureIdleWith with a RemoteProbe: the server's alone).
	RSSPerSession float64
	stackBase     uint64 // StackInuse before the streams opened
	// CPUPerMin is process CPU seconds per minute with the streams idle and
	// the heartbeat on.
	CPUPerMin float64
	// StackAfterWindow is the goroutine stacks per stream at the end of
	// the CPU window, before any GC shrinks them (the heartbeats' writes
	// may have grown them): what the streams' stacks take between
	// collections. 0 without a window.
	StackAfterWindow float64
}

// MeasureIdle initializes n sessions, opens a GET stream on each with a raw
// GET whose body is never read, and measures goroutines, heap, goroutine
// stacks and RSS before and after, then process CPU over window. The plain peer has no sessions:
// it gets n bare GETs, its numbers are net/http's own cost of a held stream.
func MeasureIdle(p *Peer, n int, window time.Duration) (Idle, error) {
	return MeasureIdleWith(p, n, window, LocalProbe)
}

// MeasureIdleWith is MeasureIdle with the server's process read by probe:
// LocalProbe when it runs in this process (the numbers then include the
// clients), RemoteProbe when it runs in another (the server's alone).
func MeasureIdleWith(p *Peer, n int, window time.Duration, probe Probe) (Idle, error) {
	res := Idle{N: n}
	tr := NewTransport(64)
	getTr := NewTransport(0)
	getTr.ResponseHeaderTimeout = 20 * time.Second
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	st0, err := probe()
	if err != nil {
		return res, err
	}
	clients := make([]*Client, n)
	var initErr atomic.Value
	parallel(n, 32, func(i int) {
		c := NewClient(p.URL, tr)
		if p.Sessions {
			if err := c.Initialize(ctx); err != nil {
				initErr.CompareAndSwap(nil, err)
			}
		}
		clients[i] = c
	})
	defer deleteAll(clients)
	if err, ok := initErr.Load().(error); ok {
		return res, err
	}
	st1, err := probe()
	if err != nil {
		return res, err
	}
	bodies := make([]*http.Response, n)
	var getErr atomic.Value
	var opened atomic.Int64
	parallel(n, 128, func(i int) {
		c := &Client{URL: clients[i].URL, SessionID: clients[i].SessionID, HTTP: &http.Client{Transport: getTr}}
		resp, err := c.OpenGet(ctx)
		if err != nil {
			getErr.CompareAndSwap(nil, err)
			return
		}
		opened.Add(1)
		bodies[i] = resp
	})
	defer func() {
		for _, b := range bodies {
			if b != nil {
				b.Body.Close()
			}
		}
		getTr.CloseIdleConnections()
	}()
	res.Opened = int(opened.Load())
	if res.Opened == 0 {
		err, _ := getErr.Load().(error)
		return res, fmt.Errorf("no GET stream opened: %v", err)
	}
	st2, err := probe()
	if err != nil {
		return res, err
	}
	if p.Sessions {
		res.GoroutinesPerSess = float64(st1.Goroutines-st0.Goroutines) / float64(n)
		res.HeapPerSession = (float64(st1.Heap) - float64(st0.Heap)) / float64(n)
		res.RSSPerSession = (st1.RSS - st0.RSS) / float64(n)
	}
	res.setStreams(st1, st2)
	return res, res.measureCPU(probe, window)
}

// setStreams sets the per-stream fields from the server's process before
// (a) and after (b) the streams opened.
func (res *Idle) setStreams(a, b ProcStats) {
	n := float64(res.Opened)
	res.stackBase = a.Stack
	res.GoroutinesPerStream = float64(b.Goroutines-a.Goroutines) / n
	res.HeapPerStream = (float64(b.Heap) - float64(a.Heap)) / n
	res.StackPerStream = (float64(b.Stack) - float64(a.Stack)) / n
	res.RSSPerStream = (b.RSS - a.RSS) / n
}

// measureCPU sets CPUPerMin from the server's process CPU over window
// (none when window is 0), every stream idle.
func (res *Idle) measureCPU(probe Probe, window time.Duration) error {
	if window <= 0 {
		return nil
	}
	a, err := probe()
	if err != nil {
		return err
	}
	time.Sleep(window) // the measurement window, every stream idle
	b, err := probe()
	if err != nil {
		return err
	}
	// Each probe settles the heap (two GCs): the window runs from after
	// the first probe's GCs to before the second's.
	res.CPUPerMin = (b.CPU - a.SettledCPU).Seconds() * float64(time.Minute) / float64(b.At.Sub(a.SettledAt))
	res.StackAfterWindow = (float64(b.StackUnsettled) - float64(res.stackBase)) / float64(res.Opened)
	return nil
}
