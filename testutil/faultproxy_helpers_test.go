package testutil_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/testutil"
)

// faultWait bounds every wait in the fault proxy's tests.
const faultWait = 10 * time.Second

// sseHub is a backend serving, on GET /stream?id=X, an SSE stream that
// starts with the event "hello X" and then carries what send pushes to X,
// until the request's context ends; on /bytes?n=N, N bytes of a fixed
// pattern with a fixed head (no Date), and on anything else a short text
// body naming the backend.
type sseHub struct {
	name string
	url  string

	mu      sync.Mutex
	streams map[string]chan string   // open streams by id
	ended   map[string]chan struct{} // closed when stream id's handler returns
	gets    int                      // GET /stream requests served
}

func startHub(t *testing.T, name string) *sseHub {
	t.Helper()
	h := &sseHub{name: name, streams: make(map[string]chan string), ended: make(map[string]chan struct{})}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	h.url = ts.URL
	return h
}

func (h *sseHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/stream":
		h.stream(w, r)
	case "/bytes":
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header()["Date"] = nil
		w.Header().Set("Content-Length", strconv.Itoa(n))
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(pattern(n))
	default:
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%s %s %s", h.name, r.Method, r.URL.Path)
	}
}

func (h *sseHub) stream(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	ch := make(chan string, 16)
	ended := make(chan struct{})
	h.mu.Lock()
	h.gets++
	h.streams[id], h.ended[id] = ch, ended
	h.mu.Unlock()
	defer close(ended)
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "id: 0\ndata: hello %s\n\n", id)
	w.(http.Flusher).Flush()
	for {
		select {
		case data := <-ch:
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// send pushes an event to stream id, which must be open.
func (h *sseHub) send(t *testing.T, id, data string) {
	t.Helper()
	h.mu.Lock()
	ch := h.streams[id]
	h.mu.Unlock()
	if ch == nil {
		t.Fatalf("backend %s: no stream %q", h.name, id)
	}
	select {
	case ch <- data:
	case <-time.After(faultWait):
		t.Fatalf("backend %s: stream %q does not take events", h.name, id)
	}
}

// waitEnded waits until the backend's handler of stream id has returned
// (its request's context ended: it saw the connection go).
func (h *sseHub) waitEnded(t *testing.T, id string) {
	t.Helper()
	h.mu.Lock()
	ended := h.ended[id]
	h.mu.Unlock()
	if ended == nil {
		t.Fatalf("backend %s: no stream %q", h.name, id)
	}
	select {
	case <-ended:
	case <-time.After(faultWait):
		t.Fatalf("backend %s: stream %q still running %v after the cut", h.name, id, faultWait)
	}
}

func (h *sseHub) getCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets
}

// pattern returns n bytes of a fixed pattern.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// sseStream is an SSE GET through the proxy, read by testutil.SSEReader
// in a goroutine of its own.
type sseStream struct {
	resp   *http.Response
	events chan testutil.Event
	err    chan error // the reader's final error
}

func openStream(t *testing.T, hc *http.Client, base, id string, header map[string]string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/stream?id="+id, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("open stream %s: %v", id, err)
	}
	s := &sseStream{resp: resp, events: make(chan testutil.Event, 16), err: make(chan error, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rd := testutil.NewSSEReader(resp.Body)
		for {
			ev, err := rd.Next()
			if err != nil {
				s.err <- err
				return
			}
			s.events <- ev
		}
	}()
	t.Cleanup(func() {
		resp.Body.Close()
		<-done
	})
	if ev := s.next(t); ev.Data != "hello "+id {
		t.Fatalf("stream %s: first event %+v, want hello", id, ev)
	}
	return s
}

// next returns the stream's next event, failing the test if it ended.
func (s *sseStream) next(t *testing.T) testutil.Event {
	t.Helper()
	select {
	case ev := <-s.events:
		return ev
	case err := <-s.err:
		t.Fatalf("stream ended: %v", err)
	case <-time.After(faultWait):
		t.Fatalf("no event within %v", faultWait)
	}
	return testutil.Event{}
}

// ended waits for the stream to end and returns how it ended.
func (s *sseStream) ended(t *testing.T) error {
	t.Helper()
	select {
	case ev := <-s.events:
		t.Fatalf("event %+v, want the stream to end", ev)
	case err := <-s.err:
		return err
	case <-time.After(faultWait):
		t.Fatalf("stream still open %v after the cut", faultWait)
	}
	return nil
}

// faultClient returns a keep-alive client whose idle connections are
// closed when the test ends.
func faultClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// rawGet sends a GET for target over a new TCP connection to addr and
// reads until the connection ends; it returns what arrived and how the
// reading ended (nil for a clean end of file).
func rawGet(t *testing.T, addr, target string) ([]byte, error) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, faultWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(faultWait))
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: backend\r\nConnection: close\r\n\r\n", target); err != nil {
		t.Fatal(err)
	}
	return io.ReadAll(conn)
}
