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
	// Elapsed is how long the calls took, from the first's start to the
	// last's end.
	Elapsed time.Duration
}

// MeasureThroughput runs conc clients, each on its own session, calling
// tools/call (echo as JSON, or the progress tool answered as SSE) for dur or
// until maxReq calls in total, whichever comes first. A Modern peer's
// clients make sessionless 2026-07-28 calls instead. It is StartCallers,
// Run and Close in one.
func MeasureThroughput(p *Peer, conc int, sse bool, dur time.Duration, maxReq int) (Throughput, error) {
	c, err := StartCallers(p, conc, sse)
	if err != nil {
		return Throughput{}, err
	}
	defer c.Close()
	return c.Run(dur, maxReq), nil
}

// Callers are conc clients of one peer, each on a session of its own
// (none for a Modern peer), ready to call tools/call: what
// MeasureThroughput sets up before it measures and ends after, for a
// caller that wants neither inside what it measures.
type Callers struct {
	clients []*Client
	tr      *http.Transport
	tool    string
	args    map[string]any
	sse     bool
}

// StartCallers makes conc clients of p and, in the session era,
// initializes a session for each. On an error the sessions opened so far
// are ended.
func StartCallers(p *Peer, conc int, sse bool) (*Callers, error) {
	url := p.JSONURL
	c := &Callers{tool: ToolEcho, args: map[string]any{"text": "x"}, sse: sse, tr: NewTransport(conc)}
	if sse {
		url, c.tool, c.args = p.URL, ToolProgress, map[string]any{}
	}
	ctx := context.Background()
	c.clients = make([]*Client, conc)
	for i := range c.clients {
		c.clients[i] = NewClient(url, c.tr)
		c.clients[i].Modern = p.Modern
		if p.Modern {
			continue
		}
		if err := c.clients[i].Initialize(ctx); err != nil {
			c.clients = c.clients[:i+1] // the ones made so far
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close ends the callers' sessions (a DELETE each, bounded) and closes
// their idle connections. It is called once, after the last Run.
func (c *Callers) Close() {
	deleteAll(c.clients)
	c.tr.CloseIdleConnections()
}

// Run has every caller call tools/call in a loop for dur or until maxReq
// calls in total, whichever comes first, and returns the throughput and
// latency of the calls answered; it may be run more than once.
func (c *Callers) Run(dur time.Duration, maxReq int) Throughput {
	ctx := context.Background()
	var (
		count    atomic.Int64
		errs     atomic.Int64
		short    atomic.Int64
		lost     atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
		lats     = make([][]time.Duration, len(c.clients))
	)
	start := time.Now()
	deadline := start.Add(dur)
	for i, cl := range c.clients {
		wg.Go(func() {
			l := make([]time.Duration, 0, 1024)
			for time.Now().Before(deadline) && count.Add(1) <= int64(maxReq) {
				t0 := time.Now()
				_, prog, err := cl.CallTool(ctx, c.tool, c.args, c.sse)
				if err == nil && c.sse && prog != 3 {
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
		Short: int(short.Load()), Lost: int(lost.Load()), Elapsed: elapsed}
	if s, ok := firstErr.Load().(string); ok {
		t.FirstEr = s
	}
	return t
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
	d, _ := ProcessCPU()
	return d
}

// ProcessCPU is this process's CPU time so far, user and system.
func ProcessCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
