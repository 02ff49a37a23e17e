package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Latency is a distribution summary.
type Latency struct {
	N        int
	P50, P99 time.Duration
}

func summarize(d []time.Duration) Latency {
	if len(d) == 0 {
		return Latency{}
	}
	slices.Sort(d)
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] }
	return Latency{N: len(d), P50: at(0.50), P99: at(0.99)}
}

// Throughput is the result of a tools/call load.
type Throughput struct {
	RPS     float64
	Lat     Latency
	Errors  int
	FirstEr string
	// Short is how many SSE calls got fewer than 3 progress notifications
	// (counted in Errors too), Lost how many notifications they missed.
	Short, Lost int
}

// MeasureThroughput runs conc clients, each on its own session, calling
// tools/call (echo as JSON, or the progress tool answered as SSE) for dur or
// until maxReq calls in total, whichever comes first. A Modern peer's
// clients make sessionless 2026-07-28 calls instead.
func MeasureThroughput(p *Peer, conc int, sse bool, dur time.Duration, maxReq int) (Throughput, error) {
	url := p.JSONURL
	tool, args := ToolEcho, map[string]any{"text": "x"}
	if sse {
		url, tool, args = p.URL, ToolProgress, map[string]any{}
	}
	tr := NewTransport(conc)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	clients := make([]*Client, conc)
	for i := range clients {
		clients[i] = NewClient(url, tr)
		clients[i].Modern = p.Modern
		if p.Modern {
			continue
		}
		if err := clients[i].Initialize(ctx); err != nil {
			return Throughput{}, err
		}
	}
	defer deleteAll(clients)
	var (
		count    atomic.Int64
		errs     atomic.Int64
		short    atomic.Int64
		lost     atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
		lats     = make([][]time.Duration, conc)
	)
	start := time.Now()
	deadline := start.Add(dur)
	for i, c := range clients {
		wg.Go(func() {
			l := make([]time.Duration, 0, 1024)
			for time.Now().Before(deadline) && count.Add(1) <= int64(maxReq) {
				t0 := time.Now()
				_, prog, err := c.CallTool(ctx, tool, args, sse)
				if err == nil && sse && prog != 3 {
					err = fmt.Errorf("%d progress notifications, want 3", prog)
					if prog < 3 {
						short.Add(1)
						lost.Add(int64(3 - prog))
					}
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				l = append(l, time.Since(t0))
			}
			lats[i] = l
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lats...)
	t := Throughput{RPS: float64(len(all)) / elapsed.Seconds(), Lat: summarize(all), Errors: int(errs.Load()),
		Short: int(short.Load()), Lost: int(lost.Load())}
	if s, ok := firstErr.Load().(string); ok {
		t.FirstEr = s
	}
	return t, nil
}

func deleteAll(clients []*Client) {
	parallel(len(clients), 32, func(i int) {
		if clients[i].SessionID != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, _ = clients[i].Delete(ctx)
			cancel()
		}
	})
}

func parallel(n, workers int, fn func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, workers) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		})
	}
	wg.Wait()
}

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

// settle collects garbage twice and returns the goroutine count, HeapAlloc
// and StackInuse.
func settle() (goroutines int, heap, stack uint64) {
	runtime.GC()
	time.Sleep(100 * time.Millisecond)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return runtime.NumGoroutine(), ms.HeapAlloc, ms.StackInuse
}

func rss() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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

// Lifecycle holds DELETE-to-close and notification delivery latencies.
type Lifecycle struct {
	DeleteClose  Latency
	DeleteReturn Latency
	NotClosed    int // streams still open Timeout after their DELETE
	Timeout      time.Duration
	Notify       Latency
	NotifyTried  int
}

// MeasureDeleteClose opens n sessions with a GET stream read to its end, and
// for each sends DELETE and waits until the stream has closed (EOF), up to
// timeout. It stops after three streams that did not close.
func MeasureDeleteClose(p *Peer, n int, timeout time.Duration) (Lifecycle, error) {
	res := Lifecycle{Timeout: timeout}
	tr := NewTransport(n)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	var closes, returns []time.Duration
	for i := 0; i < n && res.NotClosed < 3; i++ {
		c := NewClient(p.URL, tr)
		if err := c.Initialize(ctx); err != nil {
			return res, err
		}
		resp, err := c.OpenGet(ctx)
		if err != nil {
			return res, err
		}
		done := make(chan time.Time, 1)
		go func() {
			_ = ReadSSE(resp.Body, func([]byte) bool { return true })
			done <- time.Now()
		}()
		t0 := time.Now()
		if _, err := c.Delete(ctx); err != nil {
			resp.Body.Close()
			<-done
			return res, err
		}
		returns = append(returns, time.Since(t0))
		select {
		case t := <-done:
			closes = append(closes, t.Sub(t0))
		case <-time.After(timeout):
			res.NotClosed++
			resp.Body.Close()
			<-done
		}
		resp.Body.Close()
	}
	res.DeleteClose, res.DeleteReturn = summarize(closes), summarize(returns)
	return res, nil
}

// MeasureNotify opens one session with a GET stream and n times calls the
// notify tool, timing from the call until the notifications/message event
// arrives on the GET stream (waiting at most timeout for each; it stops after
// five that did not arrive).
func MeasureNotify(p *Peer, n int, timeout time.Duration) (Latency, int, error) {
	tr := NewTransport(4)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	c := NewClient(p.URL, tr)
	if err := c.Initialize(ctx); err != nil {
		return Latency{}, 0, err
	}
	defer func() { _, _ = c.Delete(ctx) }()
	_, _, _ = c.Call(ctx, "logging/setLevel", map[string]any{"level": "debug"})
	resp, err := c.OpenGet(ctx)
	if err != nil {
		return Latency{}, 0, err
	}
	events := make(chan time.Time, 64)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		_ = ReadSSE(resp.Body, func(data []byte) bool {
			if bytes.Contains(data, []byte(`"notifications/message"`)) {
				select {
				case events <- time.Now():
				default:
				}
			}
			return true
		})
	}()
	defer func() { resp.Body.Close(); <-readerDone }()
	var lats []time.Duration
	missed, tried := 0, 0
	for range n {
		if missed >= 5 {
			break
		}
		tried++
		for len(events) > 0 {
			<-events
		}
		t0 := time.Now()
		if _, _, err := c.CallTool(ctx, ToolNotify, map[string]any{}, false); err != nil {
			return summarize(lats), tried, err
		}
		select {
		case t := <-events:
			lats = append(lats, t.Sub(t0))
		case <-time.After(timeout):
			missed++
		}
	}
	return summarize(lats), tried, nil
}

// Stalled is the stalled-reader result.
type Stalled struct {
	DeleteReturned time.Duration // Cap+ when it did not return within Cap
	Released       time.Duration // until the process's goroutines were back to before the GET; Cap+ when never
	Cap            time.Duration
	Status         int
}

// MeasureStalled opens a GET stream on a raw connection with a small receive
// buffer and never reads past its headers, floods the session with
// notifications so the server's write blocks, then times DELETE (capped at
// limit) and the release of every goroutine the stream held.
func MeasureStalled(p *Peer, limit time.Duration) (Stalled, error) {
	res := Stalled{Cap: limit}
	tr := NewTransport(4)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	c := NewClient(p.URL, tr)
	if err := c.Initialize(ctx); err != nil {
		return res, err
	}
	_, _, _ = c.Call(ctx, "logging/setLevel", map[string]any{"level": "debug"})
	g0, _, _ := settle()
	host := strings.TrimPrefix(p.URL, "http://")
	host, path, _ := strings.Cut(host, "/")
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /%s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n\r\n",
		path, host, c.SessionID, ProtocolVersion)
	br := bufio.NewReaderSize(conn, 1024)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	status, err := br.ReadString('\n')
	if err != nil || !strings.Contains(status, " 200 ") {
		return res, fmt.Errorf("stalled GET: %q %v", status, err)
	}
	// The client stops reading here. 256 notifications of 32 KiB (8 MiB)
	// outgrow both socket buffers and stay within lifeline's queue.
	fctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, _, _ = c.CallTool(fctx, ToolFlood, map[string]any{"count": 256, "size": 32 << 10}, false)
	cancel()
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	dctx, dcancel := context.WithTimeout(ctx, limit)
	defer dcancel()
	res.Status, err = c.Delete(dctx)
	if err != nil {
		res.DeleteReturned = limit + 1
	} else {
		res.DeleteReturned = time.Since(t0)
	}
	res.Released = limit + 1
	for time.Since(t0) < limit {
		if runtime.NumGoroutine() <= g0 {
			res.Released = time.Since(t0)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return res, nil
}

// MeasureChurn runs initialize + DELETE cycles from workers clients for dur.
func MeasureChurn(p *Peer, workers int, dur time.Duration, maxCycles int) (float64, error) {
	tr := NewTransport(workers)
	defer tr.CloseIdleConnections()
	ctx := context.Background()
	var count atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	deadline := start.Add(dur)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			c := NewClient(p.URL, tr)
			for time.Now().Before(deadline) && count.Load() < int64(maxCycles) {
				if err := c.InitializeOnly(ctx); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if st, err := c.Delete(ctx); err != nil || st/100 != 2 {
					firstErr.CompareAndSwap(nil, fmt.Errorf("DELETE: %d %v", st, err))
					return
				}
				count.Add(1)
			}
		})
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	return float64(count.Load()) / time.Since(start).Seconds(), nil
}
