package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// ListenFilter is what every idle listen stream subscribes to.
var ListenFilter = map[string]any{"toolsListChanged": true}

// MeasureListenIdle opens n 2026-07-28 subscriptions/listen streams on p
// (each on its own connection), reads each one's acknowledgement and then
// never reads again, and measures goroutines, heap, goroutine stacks and
// RSS before and after, then process CPU over window, as MeasureIdle does
// for GET streams. There are no sessions, so the session fields stay 0.
func MeasureListenIdle(p *Peer, n int, window time.Duration) (Idle, error) {
	return MeasureListenIdleWith(p, n, window, LocalProbe)
}

// MeasureListenIdleWith is MeasureListenIdle with the server's process
// read by probe (MeasureIdleWith).
func MeasureListenIdleWith(p *Peer, n int, window time.Duration, probe Probe) (Idle, error) {
	res := Idle{N: n}
	tr := NewTransport(0)
	tr.ResponseHeaderTimeout = 20 * time.Second
	ctx := context.Background()
	st1, err := probe()
	if err != nil {
		return res, err
	}
	streams := make([]*Listen, n)
	var openErr atomic.Value
	var opened atomic.Int64
	parallel(n, 128, func(i int) {
		c := NewClient(p.URL, tr)
		c.Modern = true
		l, err := c.OpenListen(ctx, ListenFilter)
		if err != nil {
			openErr.CompareAndSwap(nil, err)
			return
		}
		streams[i] = l
		opened.Add(1)
	})
	defer func() {
		for _, l := range streams {
			if l != nil {
				l.Close()
			}
		}
		tr.CloseIdleConnections()
	}()
	res.Opened = int(opened.Load())
	if res.Opened == 0 {
		err, _ := openErr.Load().(error)
		return res, fmt.Errorf("no listen stream opened: %v", err)
	}
	st2, err := probe()
	if err != nil {
		return res, err
	}
	res.setStreams(st1, st2)
	return res, res.measureCPU(probe, window)
}
