package testutil_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// proxyWait bounds every wait in the proxy's tests.
const proxyWait = 10 * time.Second

// echoed is what a test backend answers: its name and what it received.
type echoed struct {
	Backend   string `json:"backend"`
	Path      string `json:"path"`
	SessionID string `json:"session_id"`
	Protocol  string `json:"protocol"`
	Body      string `json:"body"`
}

// echoBackend serves, until the test ends, a backend that answers every
// request with an echoed JSON body and its name in Mcp-Session-Id, and
// counts the requests it served.
func echoBackend(t *testing.T, name string, served *atomic.Int64) string {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if served != nil {
			served.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "from-"+name)
		_ = json.NewEncoder(w).Encode(echoed{Backend: name, Path: r.URL.Path,
			SessionID: r.Header.Get("Mcp-Session-Id"), Protocol: r.Header.Get("MCP-Protocol-Version"), Body: string(body)})
	}))
	t.Cleanup(ts.Close)
	return ts.URL
}

// httpClient returns a client whose idle connections are closed when the
// test ends.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// post sends a POST through the proxy with MCP headers and decodes the echo.
func post(ctx context.Context, hc *http.Client, url, sessionID, body string) (echoed, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return echoed{}, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Mcp-Session-Id", sessionID)
	req.Header.Set("MCP-Protocol-Version", testutil.ProtocolVersion)
	resp, err := hc.Do(req)
	if err != nil {
		return echoed{}, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return echoed{}, resp.Header, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	var e echoed
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		return echoed{}, resp.Header, err
	}
	return e, resp.Header, nil
}

// serveProxy serves p on a loopback server closed, with p, when the test
// ends.
func serveProxy(t *testing.T, p *testutil.RoundRobinProxy) string {
	ts := httptest.NewServer(p)
	t.Cleanup(func() {
		p.Close()
		ts.Close()
		p.Close()
	})
	return ts.URL
}

func TestRoundRobinProxyTakesTurnsAndPins(t *testing.T) {
	names := []string{"a", "b", "c"}
	var backends []string
	for _, n := range names {
		backends = append(backends, echoBackend(t, n, nil))
	}
	p, err := testutil.NewRoundRobinProxy(backends...)
	if err != nil {
		t.Fatal(err)
	}
	base := serveProxy(t, p)
	hc := httpClient(t)
	ctx := testutil.Context(t, proxyWait)

	var got []string
	send := func() {
		t.Helper()
		body := fmt.Sprintf(`{"n":%d}`, len(got))
		e, h, err := post(ctx, hc, base+"/mcp", "session-1", body)
		if err != nil {
			t.Fatal(err)
		}
		// Request headers, path and body reach the backend; response
		// headers come back.
		if e.Path != "/mcp" || e.SessionID != "session-1" || e.Protocol != testutil.ProtocolVersion || e.Body != body {
			t.Fatalf("backend %s received %+v", e.Backend, e)
		}
		if h.Get("Mcp-Session-Id") != "from-"+e.Backend {
			t.Fatalf("response Mcp-Session-Id %q from backend %s", h.Get("Mcp-Session-Id"), e.Backend)
		}
		got = append(got, e.Backend)
	}
	for range 6 {
		send()
	}
	p.Pin(2) // the next goes to c, then a, b, ...
	send()
	send()
	p.Pin(0)
	p.Pin(1) // the later pin wins
	send()
	send()
	p.Pin(1) // pinning the backend that is next anyway changes nothing
	send()
	send()
	want := "a b c a b c c a b c b c"
	if strings.Join(got, " ") != want {
		t.Fatalf("backends in turn: %s, want %s", strings.Join(got, " "), want)
	}
}

// TestRoundRobinProxyConcurrent: requests in flight together still take one
// turn each, so every backend serves exactly its share; a Pin racing them
// is safe, and takes effect for the next request once they are done.
func TestRoundRobinProxyConcurrent(t *testing.T) {
	const perBackend = 40
	served := make([]atomic.Int64, 3)
	var backends []string
	for i := range served {
		backends = append(backends, echoBackend(t, fmt.Sprint(i), &served[i]))
	}
	p, err := testutil.NewRoundRobinProxy(backends...)
	if err != nil {
		t.Fatal(err)
	}
	base := serveProxy(t, p)
	hc := httpClient(t)
	ctx := testutil.Context(t, proxyWait)

	var wg sync.WaitGroup
	errs := make(chan error, perBackend*len(backends))
	for range perBackend * len(backends) {
		wg.Go(func() {
			if _, _, err := post(ctx, hc, base+"/mcp", "s", "{}"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range served {
		if n := served[i].Load(); n != perBackend {
			t.Errorf("backend %d served %d requests, want %d", i, n, perBackend)
		}
	}

	// Pins racing requests: the race detector checks them; every request
	// is still served.
	var pins sync.WaitGroup
	for i := range 30 {
		pins.Go(func() { p.Pin(i % len(backends)) })
		wg.Go(func() {
			if _, _, err := post(ctx, hc, base+"/mcp", "s", "{}"); err != nil {
				t.Error(err)
			}
		})
	}
	pins.Wait()
	wg.Wait()
	p.Pin(1)
	if e, _, err := post(ctx, hc, base+"/mcp", "s", "{}"); err != nil || e.Backend != "1" {
		t.Fatalf("after Pin(1): backend %q, %v", e.Backend, err)
	}
}

// TestRoundRobinProxyStreams: an SSE event reaches the client while the
// backend's response is still open, so the proxy does not buffer.
func TestRoundRobinProxyStreams(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		case <-time.After(proxyWait):
			return
		}
		fmt.Fprint(w, "data: second\n\n")
	}))
	t.Cleanup(ts.Close)
	base := testutil.StartRoundRobinProxy(t, ts.URL)
	ctx := testutil.Context(t, proxyWait)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	events := make(chan testutil.Event, 2)
	readErr := make(chan error, 1)
	go func() {
		rd := testutil.NewSSEReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				readErr <- err
				return
			}
			events <- ev
		}
	}()
	next := func(what string) testutil.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case err := <-readErr:
			t.Fatalf("%s: stream ended: %v", what, err)
		case <-time.After(proxyWait):
			t.Fatalf("%s: nothing within %v", what, proxyWait)
		}
		return testutil.Event{}
	}
	if ev := next("the first event, before the backend finishes"); ev.Data != "first" {
		t.Fatalf("first event %+v", ev)
	}
	close(release)
	if ev := next("the second event"); ev.Data != "second" {
		t.Fatalf("second event %+v", ev)
	}
	select {
	case err := <-readErr:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("stream ended with %v, want EOF", err)
		}
	case <-time.After(proxyWait):
		t.Fatal("the stream did not end after the backend's response did")
	}
}

// TestRoundRobinProxyCloseCutsStreams: a stream left open through the proxy
// does not hold up the end of the test: StartRoundRobinProxy's cleanup
// cuts it, and the backend sees its request end.
func TestRoundRobinProxyCloseCutsStreams(t *testing.T) {
	opened := make(chan struct{})
	backendDone := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(backendDone)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": open\n\n")
		w.(http.Flusher).Flush()
		close(opened)
		select {
		case <-r.Context().Done():
		case <-time.After(proxyWait):
		}
	}))
	t.Cleanup(ts.Close)
	hc := httpClient(t)

	var body io.ReadCloser
	finished := make(chan bool, 1)
	go func() {
		finished <- t.Run("stream left open", func(t *testing.T) {
			base := testutil.StartRoundRobinProxy(t, ts.URL)
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/mcp", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body = resp.Body
			<-opened // the backend flushed before this, and has not finished
		})
	}()
	select {
	case ok := <-finished:
		if !ok {
			t.Fatal("the subtest failed")
		}
	case <-time.After(proxyWait):
		t.Fatalf("the proxy's cleanup did not end within %v with a stream open", proxyWait)
	}
	defer body.Close()
	select {
	case <-backendDone:
	case <-time.After(proxyWait):
		t.Fatal("the backend's request did not end when the proxy closed")
	}
	// The client's body ends: the proxy dropped the connection.
	readDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, body)
		readDone <- err
	}()
	select {
	case <-readDone:
	case <-time.After(proxyWait):
		t.Fatal("the client's stream did not end when the proxy closed")
	}
}

func TestRoundRobinProxyErrors(t *testing.T) {
	for _, backends := range [][]string{
		nil,
		{"127.0.0.1:8080"},
		{"ftp://127.0.0.1:21"},
		{"http://"},
		{"http://127.0.0.1:8081", "http://[::1"},
	} {
		if _, err := testutil.NewRoundRobinProxy(backends...); err == nil {
			t.Errorf("NewRoundRobinProxy(%q) succeeded", backends)
		}
	}

	p, err := testutil.NewRoundRobinProxy("http://127.0.0.1:1", "http://127.0.0.1:2")
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{-1, 2} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Pin(%d) with 2 backends did not panic", i)
				}
			}()
			p.Pin(i)
		}()
	}

	// A backend that is down gets the client a 502 naming the proxy.
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	base := testutil.StartRoundRobinProxy(t, down.URL)
	ctx := testutil.Context(t, proxyWait)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), "round-robin proxy") {
		t.Fatalf("backend down: %d %q, want 502 from the proxy", resp.StatusCode, b)
	}
}

// Two replicas behind a round-robin proxy: requests alternate between
// them, and Pin sends the next one to a chosen replica.
func ExampleRoundRobinProxy() {
	replica := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s got session %s", name, r.Header.Get("Mcp-Session-Id"))
		}))
	}
	a, b := replica("a"), replica("b")
	defer a.Close()
	defer b.Close()

	p, err := testutil.NewRoundRobinProxy(a.URL, b.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	front := httptest.NewServer(p)
	defer front.Close()
	defer p.Close() // runs first: ends what is still in flight

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	get := func() {
		req, _ := http.NewRequest(http.MethodGet, front.URL+"/mcp", nil)
		req.Header.Set("Mcp-Session-Id", "s1")
		resp, err := hc.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Println(string(body))
	}
	get()
	get()
	get()
	p.Pin(1)
	get()
	get()
	// Output:
	// a got session s1
	// b got session s1
	// a got session s1
	// b got session s1
	// a got session s1
}
