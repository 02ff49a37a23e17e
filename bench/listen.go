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
	res := Idle{N: n}
	tr := NewTransport(0)
	tr.ResponseHeaderTimeout = 20 * time.Second
	ctx := context.Background()
	g1, h1, s1 := settle()
	r1 := rss()
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
	g2, h2, s2 := settle()
	r2 := rss()
	res.GoroutinesPerStream = float64(g2-g1) / float64(res.Opened)
	res.HeapPerStream = (float64(h2) - float64(h1)) / float64(res.Opened)
	res.StackPerStream = (float64(s2) - float64(s1)) / float64(res.Opened)
	res.RSSPerStream = (r2 - r1) / float64(res.Opened)
	if window > 0 {
		c0 := cpuTime()
		time.Sleep(window)
		res.CPUPerMin = (cpuTime() - c0).Seconds() * float64(time.Minute) / float64(window)
	}
	return res, nil
}
