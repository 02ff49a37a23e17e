package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// wait bounds every wait in these tests: a broken helper fails, not hangs.
const wait = 10 * time.Second

// recv takes one value from ch, failing the test if none comes in time.
func recv[T any](t *testing.T, what string, ch <-chan T) (v T) {
	t.Helper()
	select {
	case v = <-ch:
	case <-time.After(wait):
		t.Fatalf("no %s within %v", what, wait)
	}
	return v
}

func TestSSEReader(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []Event
	}{
		{"named event", "event: note\ndata: {\"a\":1}\n\n", []Event{{Name: "note", Data: `{"a":1}`}}},
		{"unnamed event", "data: x\n\n", []Event{{Name: "message", Data: "x"}}},
		{"no space after colon", "event:e\ndata:x\n\n", []Event{{Name: "e", Data: "x"}}},
		{"multi-line data", "data: one\ndata:\ndata: three\n\n", []Event{{Name: "message", Data: "one\n\nthree"}}},
		{"comment", ": keep-alive\n\n", []Event{{Comment: "keep-alive"}}},
		{"comment between events", "data: a\n\n: ping\ndata: b\n\n", []Event{
			{Name: "message", Data: "a"}, {Comment: "ping"}, {Name: "message", Data: "b"}}},
		{"CRLF", "event: e\r\ndata: one\r\ndata: two\r\n\r\n: c\r\n\r\n", []Event{
			{Name: "e", Data: "one\ntwo"}, {Comment: "c"}}},
		{"event at EOF", "data: a\n\nevent: last\ndata: tail\n", []Event{
			{Name: "message", Data: "a"}, {Name: "last", Data: "tail"}}},
		{"unnamed event at EOF", "data: tail\n", []Event{{Name: "message", Data: "tail"}}},
		{"last line unterminated", "data: a\ndata: b", []Event{{Name: "message", Data: "a\nb"}}},
		{"comment unterminated", ": bye", []Event{{Comment: "bye"}}},
		{"blank lines only", "\n\r\n\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := NewSSEReader(strings.NewReader(tc.in))
			var got []Event
			ev, err := rd.Next()
			for ; err == nil; ev, err = rd.Next() {
				got = append(got, ev)
			}
			if !errors.Is(err, io.EOF) || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("events %q\n got %+v, %v\nwant %+v, EOF", tc.in, got, err, tc.want)
			}
			for i, ev := range got {
				if ev.IsComment() != (tc.want[i].Comment != "") {
					t.Errorf("event %d %+v: IsComment %v", i, ev, ev.IsComment())
				}
			}
			if _, err := rd.Next(); !errors.Is(err, io.EOF) {
				t.Fatalf("Next after the end: %v, want io.EOF", err)
			}
		})
	}
}

func TestBarrierReleasesAllTogether(t *testing.T) {
	const n = 8
	ctx := Context(t, wait)
	b := NewBarrier(n)
	var arrived atomic.Int64
	after := make(chan int64, n)
	party := func() {
		arrived.Add(1)
		if err := b.Wait(ctx); err != nil {
			t.Error(err)
		}
		after <- arrived.Load()
	}
	for range n - 1 {
		go party()
	}
	Eventually(t, wait, "n-1 parties to arrive", func() bool { return arrived.Load() == n-1 })
	if len(after) != 0 {
		t.Fatalf("a party returned with only %d of %d arrived", <-after, n)
	}
	go party()
	for i := range n {
		if got := recv(t, "release", after); got != n {
			t.Fatalf("party %d returned having seen %d arrivals, want %d", i, got, n)
		}
	}
}

// Parties that give up when ctx ends get its error, and must not race on
// the count while others arrive (run with -race).
func TestBarrierWaitEndsWithContext(t *testing.T) {
	const n = 4
	b := NewBarrier(n + 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	errs := make(chan error, n)
	for range n {
		go func() { errs <- b.Wait(ctx) }()
	}
	for range n {
		err := recv(t, "Wait to give up", errs)
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), " of 5 arrived") {
			t.Fatalf("Wait = %v, want a deadline error naming the count", err)
		}
	}
}

func TestEventually(t *testing.T) {
	var calls atomic.Int64
	Eventually(t, wait, "the third poll", func() bool { return calls.Add(1) == 3 })
	if calls.Load() != 3 {
		t.Fatalf("cond called %d times, want 3", calls.Load())
	}
}

// seen is a request the fake server got.
type seen struct {
	Header http.Header
	Body   []byte
	Msg    Message
}

func record(r *http.Request) seen {
	body, _ := io.ReadAll(r.Body)
	s := seen{Header: r.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &s.Msg)
	return s
}

// serve starts a loopback server for h and returns a client for it.
func serve(t *testing.T, h http.HandlerFunc) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL)
	c.HTTP = srv.Client()
	return c
}

func writeJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, body)
}

func initServer(t *testing.T, sessionID string) (*Client, chan seen) {
	got := make(chan seen, 4)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		s := record(r)
		got <- s
		switch s.Msg.Method {
		case "initialize":
			if sessionID != "" {
				w.Header().Set("Mcp-Session-Id", sessionID)
			}
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q}}`, s.Msg.ID, ProtocolVersion))
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		default:
			http.Error(w, "unexpected", http.StatusBadRequest)
		}
	})
	return c, got
}

func TestInitialize(t *testing.T) {
	NoLeaks(t)
	c, got := initServer(t, "sess-1")
	c.SessionID = "stale"
	m, err := c.Initialize(Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	if c.SessionID != "sess-1" || c.ProtocolVersion != ProtocolVersion || !strings.Contains(string(m.Result), ProtocolVersion) {
		t.Fatalf("after Initialize: session %q, version %q, result %s", c.SessionID, c.ProtocolVersion, m.Result)
	}
	init := recv(t, "initialize", got)
	if init.Msg.Method != "initialize" || !init.Msg.IsRequest() || string(init.Msg.ID) != string(m.ID) {
		t.Fatalf("first request %s, answer id %s", init.Body, m.ID)
	}
	if h := init.Header; h.Get("Mcp-Session-Id") != "" || h.Get("Content-Type") != "application/json" ||
		h.Get("Accept") != "application/json, text/event-stream" {
		t.Fatalf("initialize headers %v", h)
	}
	ack := recv(t, "notifications/initialized", got)
	if ack.Msg.Method != "notifications/initialized" || !ack.Msg.IsNotification() {
		t.Fatalf("second request %s", ack.Body)
	}
	if h := ack.Header; h.Get("Mcp-Session-Id") != "sess-1" || h.Get("MCP-Protocol-Version") != ProtocolVersion {
		t.Fatalf("notifications/initialized headers %v", h)
	}
}

func TestInitializeWithoutSessionID(t *testing.T) {
	NoLeaks(t)
	c, got := initServer(t, "")
	if _, err := c.Initialize(Context(t, wait)); err == nil || !strings.Contains(err.Error(), "Mcp-Session-Id") {
		t.Fatalf("Initialize = %v, want an error about Mcp-Session-Id", err)
	}
	recv(t, "initialize", got)
	if len(got) != 0 {
		t.Fatalf("notifications/initialized was sent without a session: %s", (<-got).Body)
	}
}

func TestDo(t *testing.T) {
	NoLeaks(t)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		s := record(r)
		switch s.Msg.Method {
		case "json":
			writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"via":"json"}}`, s.Msg.ID))
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			fmt.Fprintf(w, ": working\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"+
				"data: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"via\":\"sse\"}}\n\n", s.Msg.ID)
		}
	})
	call := func(method string) *Response {
		resp, err := c.Call(Context(t, wait), method, nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := call("json")
	if resp.Status != http.StatusOK || resp.IsSSE() || len(resp.Events) != 0 || len(resp.Messages) != 1 ||
		!strings.Contains(string(resp.Body), `"via":"json"`) {
		t.Fatalf("JSON answer %+v", resp)
	}
	if m, err := resp.Last(); err != nil || string(m.ID) != "1" || string(m.Result) != `{"via":"json"}` {
		t.Fatalf("JSON message %+v, %v", m, err)
	}

	resp = call("sse")
	if resp.Status != http.StatusOK || !resp.IsSSE() || len(resp.Body) != 0 {
		t.Fatalf("SSE answer %+v", resp)
	}
	if len(resp.Events) != 3 || !resp.Events[0].IsComment() || resp.Events[0].Comment != "working" ||
		resp.Events[1].Name != "message" || resp.Events[2].Name != "message" {
		t.Fatalf("SSE events %+v", resp.Events)
	}
	if len(resp.Messages) != 2 || resp.Messages[0].Method != "notifications/progress" ||
		string(resp.Messages[1].ID) != "2" || string(resp.Messages[1].Result) != `{"via":"sse"}` {
		t.Fatalf("SSE messages %+v", resp.Messages)
	}
}

// streamServer serves a GET stream that writes what the test sends on
// frames and ends when end is closed; POSTs are recorded and accepted.
type streamServer struct {
	c      *Client
	frames chan string
	end    chan struct{}
	posts  chan seen
}

func newStreamServer(t *testing.T) *streamServer {
	ss := &streamServer{frames: make(chan string), end: make(chan struct{}), posts: make(chan seen, 8)}
	ss.c = serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			ss.posts <- record(r)
			w.WriteHeader(http.StatusAccepted)
			return
		}
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc.Flush()
		for {
			select {
			case f := <-ss.frames:
				io.WriteString(w, f)
				rc.Flush()
			case <-ss.end:
				return
			case <-r.Context().Done():
				return
			}
		}
	})
	ss.c.SessionID = "s1"
	return ss
}

// openStream serves a fake stream endpoint and opens its GET stream.
func openStream(t *testing.T) (*streamServer, *Stream, context.Context) {
	t.Helper()
	ss := newStreamServer(t)
	ctx := Context(t, wait)
	s, err := ss.c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if s.Status != http.StatusOK {
		t.Fatalf("GET status %d", s.Status)
	}
	return ss, s, ctx
}

func (ss *streamServer) send(t *testing.T, frame string) {
	t.Helper()
	select {
	case ss.frames <- frame:
	case <-time.After(wait):
		t.Fatalf("the stream handler did not take %q", frame)
	}
}

func TestStream(t *testing.T) {
	NoLeaks(t)
	ss, s, ctx := openStream(t)
	s.AnswerPings(true)
	ss.send(t, ": hi\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n1\"}\n\n")
	ss.send(t, "data: {\"jsonrpc\":\"2.0\",\"method\":\"n2\"}\n\n")
	if ev, err := s.Next(ctx); err != nil || ev.Comment != "hi" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	for _, want := range []string{"n1", "n2"} {
		if m, err := s.NextMessage(ctx); err != nil || m.Method != want {
			t.Fatalf("message %+v, %v; want %s", m, err, want)
		}
	}
	ss.send(t, "data: {\"jsonrpc\":\"2.0\",\"id\":\"ping-7\",\"method\":\"ping\"}\n\n")
	if m, err := s.NextMessage(ctx); err != nil || m.Method != "ping" {
		t.Fatalf("ping %+v, %v", m, err)
	}
	pong := recv(t, "the pong", ss.posts)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(pong.Body, &fields); err != nil || len(fields) != 3 || string(fields["jsonrpc"]) != `"2.0"` ||
		string(fields["id"]) != `"ping-7"` || string(fields["result"]) != "{}" || pong.Header.Get("Mcp-Session-Id") != "s1" {
		t.Fatalf("pong %s (headers %v), %v", pong.Body, pong.Header, err)
	}
	Eventually(t, wait, "Pongs to count the answer", func() bool { return s.Pongs() == 1 })
	s.AnswerPings(false)
	ss.send(t, "data: {\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"n3\"}\n\n")
	for _, want := range []string{"ping", "n3"} {
		if m, err := s.NextMessage(ctx); err != nil || m.Method != want {
			t.Fatalf("with AnswerPings(false): %+v, %v; want %s", m, err, want)
		}
	}
	if len(ss.posts) != 0 || s.Pongs() != 1 {
		t.Fatalf("a ping was answered with AnswerPings(false): %d pongs", s.Pongs())
	}
	select {
	case <-s.Ended():
		t.Fatal("Ended before the server ended the stream")
	default:
	}
	close(ss.end)
	recv(t, "Ended", s.Ended())
	if ev, err := s.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Next after the end: %+v, %v; want io.EOF", ev, err)
	}
}

func TestStreamCloseJoinsReader(t *testing.T) {
	NoLeaks(t)
	ss, s, ctx := openStream(t)
	ss.send(t, "data: {\"jsonrpc\":\"2.0\",\"method\":\"n\"}\n\n")
	if _, err := s.NextMessage(ctx); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	recv(t, "Close to return", closed)
	recv(t, "Ended after Close", s.Ended())
	if _, err := s.Next(ctx); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("Next after Close: %v, want a cancellation error", err)
	}
}

func TestPostStreamJSON(t *testing.T) {
	NoLeaks(t)
	c := serve(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}`+"\n", record(r).Msg.ID))
	})
	ctx := Context(t, wait)
	s, err := c.PostStream(ctx, map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m, err := s.NextMessage(ctx); s.Status != http.StatusOK || err != nil || string(m.ID) != "5" || string(m.Result) != `{"ok":true}` {
		t.Fatalf("status %d, message %+v, %v", s.Status, m, err)
	}
	if ev, err := s.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("second Next %+v, %v; want io.EOF", ev, err)
	}
	recv(t, "Ended", s.Ended())
}

func TestDialStalled(t *testing.T) {
	NoLeaks(t)
	writeErr := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		err := rc.Flush() // the status goes out; then 8 MiB that cannot
		if err == nil {
			err = rc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
		}
		if err == nil {
			_, err = w.Write(make([]byte, 8<<20))
		}
		if err == nil {
			err = rc.Flush()
		}
		writeErr <- err
	}))
	t.Cleanup(srv.Close)
	ctx := Context(t, wait)
	sr, err := DialStalled(ctx, srv.URL+"/mcp?x=1", http.MethodGet, map[string]string{"Accept": "text/event-stream"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if status, err := sr.Status(ctx); err != nil || status != "HTTP/1.1 200 OK" {
		t.Fatalf("Status = %q, %v", status, err)
	}
	err = recv(t, "the server's write to fail", writeErr)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("server write to a stalled reader: %v, want a timeout", err)

	}
	if err := sr.Close(); err != nil {
		t.Fatal(err)
	}
}
