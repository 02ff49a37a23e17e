package testutil_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

func TestFaultProxyCutAfterBytes(t *testing.T) {
	hub := startHub(t, "a")
	const size = 200_000
	whole, err := rawGet(t, testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}}).Addr(),
		fmt.Sprintf("/bytes?n=%d", size))
	if err != nil || len(whole) < size {
		t.Fatalf("uncut: %d bytes, %v", len(whole), err)
	}
	for _, mode := range []testutil.CutMode{testutil.CutFIN, testutil.CutRST} {
		for _, n := range []int64{1, 100, int64(len(whole) - size + 10), 40_000, 150_000} {
			t.Run(fmt.Sprintf("%v/%d", mode, n), func(t *testing.T) {
				p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}, Cut: mode})
				p.Arm(testutil.Fault{After: n})
				got, err := rawGet(t, p.Addr(), fmt.Sprintf("/bytes?n=%d", size))
				if int64(len(got)) != n {
					t.Errorf("client got %d bytes, want exactly %d", len(got), n)
				}
				if string(got) != string(whole[:len(got)]) {
					t.Errorf("client got bytes that differ from the uncut answer's")
				}
				switch mode {
				case testutil.CutFIN:
					if err != nil {
						t.Errorf("FIN cut: read ended with %v, want end of file", err)
					}
				case testutil.CutRST:
					if !errors.Is(err, syscall.ECONNRESET) {
						t.Errorf("RST cut: read ended with %v, want connection reset", err)
					}
				}
				if st := p.Stats(); st.Cuts != 1 || st.Down != n || st.Requests != 1 {
					t.Errorf("stats %+v, want 1 cut, 1 request, %d bytes down", st, n)
				}
			})
		}
	}
}

func TestFaultProxyCutAtOnceBeforeTheBackend(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	p.Arm(testutil.Fault{Match: func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet }, Times: 2})
	hc := faultClient(t)
	for i := range 3 {
		resp, err := hc.Get(p.URL() + "/stream?id=s" + strconv.Itoa(i))
		if i < 2 {
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %d: got %s, want the connection cut", i, resp.Status)
			}
			continue
		}
		if err != nil {
			t.Fatalf("GET %d (the fault used up): %v", i, err)
		}
		resp.Body.Close()
	}
	if got := hub.getCount(); got != 1 {
		t.Errorf("backend served %d GETs, want 1: a fault with After 0 cuts before the request reaches it", got)
	}
	if st := p.Stats(); st.Cuts != 2 {
		t.Errorf("stats %+v, want 2 cuts", st)
	}
}

func TestFaultProxyCutAll(t *testing.T) {
	for _, mode := range []testutil.CutMode{testutil.CutFIN, testutil.CutRST} {
		t.Run(mode.String(), func(t *testing.T) {
			hub := startHub(t, "a")
			p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}, Cut: mode})
			hc := faultClient(t)
			s1 := openStream(t, hc, p.URL(), "s1", nil)
			s2 := openStream(t, hc, p.URL(), "s2", nil)
			hub.send(t, "s1", "one")
			if ev := s1.next(t); ev.Data != "one" {
				t.Fatalf("s1 got %+v", ev)
			}
			if n := p.CutAll(); n != 2 {
				t.Fatalf("CutAll cut %d, want 2", n)
			}
			for _, s := range []*sseStream{s1, s2} {
				if err := s.ended(t); err == nil || errors.Is(err, io.EOF) {
					t.Errorf("stream ended with %v, want an error (a dropped connection, not a clean end)", err)
				}
			}
			hub.waitEnded(t, "s1")
			hub.waitEnded(t, "s2")
			testutil.Eventually(t, faultWait, "both connections ended", func() bool { return p.Stats().Live == 0 })
			if st := p.Stats(); st.Cuts != 2 || st.Conns != 2 {
				t.Errorf("stats %+v, want 2 connections, 2 cuts", st)
			}
			if n := p.CutAll(); n != 0 {
				t.Errorf("second CutAll cut %d, want 0", n)
			}
		})
	}
}

func TestFaultProxyCutMatching(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	hc := faultClient(t)
	doomed := openStream(t, hc, p.URL(), "doomed", map[string]string{"X-Fault": "cut"})
	spared := openStream(t, hc, p.URL(), "spared", nil)
	n := p.Cut(func(ci testutil.ConnInfo) bool {
		return ci.Method == http.MethodGet && http.Header(ci.Header).Get("X-Fault") == "cut"
	})
	if n != 1 {
		t.Fatalf("Cut cut %d, want 1", n)
	}
	if err := doomed.ended(t); err == nil {
		t.Errorf("the matching stream ended cleanly, want an error")
	}
	hub.waitEnded(t, "doomed")
	hub.send(t, "spared", "still here")
	if ev := spared.next(t); ev.Data != "still here" {
		t.Errorf("the other stream got %+v", ev)
	}
}

func TestFaultProxyMidEvent(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	hc := faultClient(t)
	s := openStream(t, hc, p.URL(), "s", nil)
	for _, d := range []string{"one", "two"} {
		hub.send(t, "s", d)
		if ev := s.next(t); ev.Data != d {
			t.Fatalf("got %+v, want %s", ev, d)
		}
	}
	// The next event is cut in its data line: the reader never gets it.
	if n := p.ArmConns(nil, testutil.Fault{After: 1, MidEvent: true}); n != 1 {
		t.Fatalf("ArmConns armed %d, want 1", n)
	}
	hub.send(t, "s", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"three"}}`)
	if err := s.ended(t); err == nil {
		t.Errorf("stream ended cleanly, want an error")
	}
	hub.waitEnded(t, "s")

	// On the wire: the client got "data:" and part of the value, not the
	// line's end.
	p2 := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	p2.Arm(testutil.Fault{After: 1, MidEvent: true})
	conn, err := net.DialTimeout("tcp", p2.Addr(), faultWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(faultWait))
	fmt.Fprintf(conn, "GET /stream?id=raw HTTP/1.1\r\nHost: backend\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("body ended with %v, want unexpected EOF", err)
	}
	const full = "id: 0\ndata: hello raw\n\n"
	if !strings.HasPrefix(full, string(body)) || !strings.HasPrefix(string(body), "id: 0\ndata:") ||
		len(body) >= len(full)-2 {
		t.Errorf("body %q, want a part of %q ending inside its data line", body, full)
	}
	t.Logf("cut event on the wire: %q", body)
}

func TestFaultProxyStall(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})

	// A stall after N bytes: exactly N arrive, the rest after Resume.
	const size, n = 100_000, 5_000
	p.Arm(testutil.Fault{After: n, Stall: true})
	conn, err := net.DialTimeout("tcp", p.Addr(), faultWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(faultWait))
	fmt.Fprintf(conn, "GET /bytes?n=%d HTTP/1.1\r\nHost: backend\r\nConnection: close\r\n\r\n", size)
	head := make([]byte, n)
	if _, err := io.ReadFull(conn, head); err != nil {
		t.Fatalf("first %d bytes: %v", n, err)
	}
	testutil.Eventually(t, faultWait, "the connection stalled", func() bool { return p.Stats().Stalls == 1 })
	_ = conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if k, err := conn.Read(make([]byte, 1)); k != 0 || !isTimeout(err) {
		t.Fatalf("while stalled: read %d bytes, %v; want nothing", k, err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(faultWait))
	if got := p.Resume(nil); got != 1 {
		t.Fatalf("Resume resumed %d, want 1", got)
	}
	rest, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(string(head)), strings.NewReader(string(rest)))), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != string(pattern(size)) {
		t.Fatalf("body after resume: %d bytes, %v; want the %d sent", len(body), err, size)
	}

	// Stall and Resume on a live stream.
	hc := faultClient(t)
	s := openStream(t, hc, p.URL(), "s", nil)
	conn.Close()
	isStream := func(ci testutil.ConnInfo) bool { return strings.HasPrefix(ci.Target, "/stream") }
	if got := p.Stall(isStream); got != 1 {
		t.Fatalf("Stall stalled %d, want 1", got)
	}
	hub.send(t, "s", "held")
	select {
	case ev := <-s.events:
		t.Fatalf("event %+v through a stalled connection", ev)
	case <-time.After(50 * time.Millisecond):
	}
	p.Resume(isStream)
	if ev := s.next(t); ev.Data != "held" {
		t.Fatalf("after Resume got %+v", ev)
	}
	// A stalled connection can be cut.
	p.Stall(isStream)
	p.Cut(isStream)
	if err := s.ended(t); err == nil {
		t.Errorf("stalled then cut stream ended cleanly")
	}
}

// isTimeout reports whether err is a deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestFaultProxyRandomCutsReproducible(t *testing.T) {
	hub := startHub(t, "a")
	const size, conns = 300_000, 8
	whole, err := rawGet(t, testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}}).Addr(),
		fmt.Sprintf("/bytes?n=%d", size))
	if err != nil {
		t.Fatal(err)
	}
	total := int64(len(whole)) // head and body
	run := func(seed uint64) []int64 {
		cfg := testutil.FaultProxyConfig{Backends: []string{hub.url},
			Random: testutil.RandomCuts{Seed: seed, MeanBytes: 60_000, MinBytes: 500}}
		p := testutil.StartFaultProxy(t, cfg)
		var got []int64
		cuts := int64(0)
		for i := range conns {
			b, _ := rawGet(t, p.Addr(), fmt.Sprintf("/bytes?n=%d", size))
			got = append(got, int64(len(b)))
			at, _ := cfg.Random.At(i)
			if at <= total {
				cuts++
			}
			if want := min(at, total); int64(len(b)) != want {
				t.Errorf("seed %d conn %d: got %d bytes, want %d (cut at %d, whole answer %d)", seed, i, len(b), want, at, total)
			}
		}
		if st := p.Stats(); st.Cuts != cuts || st.Conns != conns {
			t.Errorf("seed %d: stats %+v, want %d connections, %d cuts", seed, st, conns, cuts)
		}
		return got
	}
	a, b, c := run(1), run(1), run(2)
	t.Logf("seed 1: %v; seed 2: %v", a, c)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("same seed, different cuts: %v and %v", a, b)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 1 and 2 cut at the same bytes: %v", a)
	}
}

func TestFaultProxyRoundRobin(t *testing.T) {
	var urls []string
	for _, name := range []string{"a", "b", "c"} {
		urls = append(urls, startHub(t, name).url)
	}
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: urls})
	get := func() string {
		b, err := rawGet(t, p.Addr(), "/who")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(b))), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		return strings.Fields(string(body))[0]
	}
	var got []string
	for range 6 {
		got = append(got, get())
	}
	if want := "a b c a b c"; strings.Join(got, " ") != want {
		t.Errorf("backends %v, want %s", got, want)
	}
	p.Pin(2)
	if b := get(); b != "c" {
		t.Errorf("after Pin(2): backend %s, want c", b)
	}
}

func TestFaultProxyKeepAlive(t *testing.T) {
	hub := startHub(t, "a")
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{hub.url}})
	hc := faultClient(t)
	do := func(method, path string) (reused bool, err error) {
		ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
			GotConn: func(ci httptrace.GotConnInfo) { reused = ci.Reused }})
		ctx, cancel := context.WithTimeout(ctx, faultWait)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, p.URL()+path, strings.NewReader("body"))
		resp, err := hc.Do(req)
		if err != nil {
			return reused, err
		}
		defer resp.Body.Close()
		_, err = io.ReadAll(resp.Body)
		return reused, err
	}
	if _, err := do(http.MethodPost, "/one"); err != nil {
		t.Fatal(err)
	}
	if reused, err := do(http.MethodPost, "/two"); err != nil || !reused {
		t.Fatalf("second request: reused %v, %v; want the kept-alive connection", reused, err)
	}
	var mu sync.Mutex
	var seen []int
	p.Arm(testutil.Fault{After: 100, Match: func(ci testutil.ConnInfo) bool {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, ci.Requests)
		return ci.Method == http.MethodGet
	}})
	if reused, err := do(http.MethodGet, "/bytes?n=10000"); err == nil || !reused {
		t.Fatalf("GET on the kept-alive connection: reused %v, %v; want it cut", reused, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != "[3]" {
		t.Errorf("the fault saw requests %v, want [3] (the third on the connection)", seen)
	}
	if reused, err := do(http.MethodGet, "/bytes?n=10000"); err != nil || reused {
		t.Fatalf("GET after the cut: reused %v, %v; want a new connection", reused, err)
	}
	if st := p.Stats(); st.Conns != 2 || st.Requests != 4 || st.Cuts != 1 {
		t.Errorf("stats %+v, want 2 connections, 4 requests, 1 cut", st)
	}
}

func TestFaultProxyCloseJoinsEverything(t *testing.T) {
	testutil.NoLeaks(t)
	hub := startHub(t, "a")
	p, err := testutil.NewFaultProxy(testutil.FaultProxyConfig{Backends: []string{hub.url}})
	if err != nil {
		t.Fatal(err)
	}
	hc := faultClient(t)
	live := openStream(t, hc, p.URL(), "live", nil)
	stalled := openStream(t, hc, p.URL(), "stalled", nil)
	p.Stall(func(ci testutil.ConnInfo) bool { return strings.Contains(ci.Target, "stalled") })
	// A FIN-cut connection whose client never closes: the proxy drains it.
	conn, err := net.DialTimeout("tcp", p.Addr(), faultWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /stream?id=raw HTTP/1.1\r\nHost: backend\r\n\r\n")
	_ = conn.SetReadDeadline(time.Now().Add(faultWait))
	if _, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil {
		t.Fatal(err)
	}
	p.Cut(func(ci testutil.ConnInfo) bool { return strings.Contains(ci.Target, "raw") })

	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(faultWait):
		t.Fatalf("Close did not return within %v", faultWait)
	}
	for _, s := range []*sseStream{live, stalled} {
		if err := s.ended(t); err == nil {
			t.Errorf("stream ended cleanly by Close, want an error")
		}
	}
	if st := p.Stats(); st.Live != 0 {
		t.Errorf("after Close: %d live connections", st.Live)
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Errorf("the proxy still accepts after Close")
	}
	p.Close() // idempotent
}

func TestFaultProxyConfigErrors(t *testing.T) {
	for _, cfg := range []testutil.FaultProxyConfig{
		{},
		{Backends: []string{"no-port"}},
		{Backends: []string{"127.0.0.1:1"}, Cut: 7},
		{Backends: []string{"127.0.0.1:1"}, Random: testutil.RandomCuts{MeanBytes: -1}},
	} {
		if p, err := testutil.NewFaultProxy(cfg); err == nil {
			p.Close()
			t.Errorf("NewFaultProxy(%+v) succeeded, want an error", cfg)
		}
	}
	// A backend that refuses: the client's connection is closed, counted.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{addr}})
	if _, err := rawGet(t, p.Addr(), "/"); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read through a proxy to a dead backend: %v", err)
	}
	testutil.Eventually(t, faultWait, "the dial error counted", func() bool { return p.Stats().DialErrors == 1 })
}
