package streamable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// initializeAt initializes c at protocol version v (testutil's Initialize
// always asks for the latest).
func initializeAt(t *testing.T, c *testutil.Client, v string) {
	t.Helper()
	ctx := testutil.Context(t, wait)
	resp, err := c.Call(ctx, "initialize", map[string]any{
		"protocolVersion": v,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "resume-test", "version": "1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "initialize", resp.Status, http.StatusOK, resp.Body)
	c.SessionID = resp.Header.Get("Mcp-Session-Id")
	c.ProtocolVersion = v
	if ack, err := c.Notify(ctx, "notifications/initialized", nil); err != nil || ack.Status != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %v %+v", err, ack)
	}
}

// openResume opens c's GET stream with Last-Event-ID lastID, retrying
// (bounded) while the server still holds the old stream (409), as a
// client does. It returns the last answer.
func openResume(t *testing.T, c *testutil.Client, lastID string) *testutil.Stream {
	t.Helper()
	c.Header = map[string]string{"Last-Event-ID": lastID}
	defer func() { c.Header = nil }()
	for attempt := 1; ; attempt++ {
		s, err := c.OpenStream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		// Each 409 comes after the server's conflict grace: the loop is
		// paced by the server, and bounded.
		if s.Status != http.StatusConflict || attempt == 10 {
			return s
		}
	}
}

func notify(t *testing.T, r *rig, sessionID, data string) {
	t.Helper()
	if err := r.mcp.SendNotificationToSpecificClient(sessionID, "notifications/message",
		map[string]any{"level": "info", "data": data}); err != nil {
		t.Fatalf("send %s: %v", data, err)
	}
}

func isLog(m testutil.Message) bool { return m.Method == "notifications/message" }

// logData returns the data of a notifications/message.
func logData(t *testing.T, m testutil.Message) string {
	t.Helper()
	var p struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatalf("params %s: %v", m.Params, err)
	}
	return p.Data
}

// A GET stream cut while notifications flow, then resumed with the last
// id the client received, after more were sent while it was away: every
// notification arrives, once, in order, and each carries an id.
func TestResumedGetStreamLosesNoneAndDoublesNone(t *testing.T) {
	for _, mode := range []testutil.CutMode{testutil.CutFIN, testutil.CutRST} {
		t.Run(mode.String(), func(t *testing.T) {
			r := newRig(t, streamable.Config{})
			proxy := testutil.StartFaultProxy(t, testutil.FaultProxyConfig{Backends: []string{r.ts.URL}, Cut: mode})
			c := testutil.NewClient(proxy.URL())
			ctx := testutil.Context(t, wait)
			if _, err := c.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			const total = 300
			got := make([]string, 0, total)
			ids := map[string]bool{}
			lastID := ""
			take := func(ev testutil.Event) {
				t.Helper()
				m, err := ev.Message()
				if err != nil {
					t.Fatal(err)
				}
				if !isLog(m) {
					if ev.ID != "" {
						t.Fatalf("a ping carries id %q: pings are not recorded", ev.ID)
					}
					return
				}
				if ev.ID == "" || ids[ev.ID] {
					t.Fatalf("notification %s has id %q (seen before: %v)", logData(t, m), ev.ID, ids[ev.ID])
				}
				ids[ev.ID] = true
				lastID = ev.ID
				got = append(got, logData(t, m))
			}

			s := r.stream(c)
			sent := make(chan struct{})
			go func() {
				defer close(sent)
				for i := range total / 2 {
					if err := r.mcp.SendNotificationToSpecificClient(c.SessionID, "notifications/message",
						map[string]any{"level": "info", "data": fmt.Sprint("n-", i)}); err != nil {
						t.Errorf("send %d: %v", i, err)
						return
					}
				}
			}()
			// Cut the stream after the first few notifications, while the
			// rest are being sent.
			for len(got) < 10 {
				ev, err := s.NextMessageEvent(ctx)
				if err != nil {
					t.Fatal(err)
				}
				take(ev)
			}
			if n := proxy.Cut(func(ci testutil.ConnInfo) bool { return ci.Method == http.MethodGet }); n != 1 {
				t.Fatalf("cut %d GET connections, want 1", n)
			}
			// What reached the client before the cut is read; its last id
			// is the cursor.
			for {
				ev, err := s.NextMessageEvent(ctx)
				if err != nil {
					if ctx.Err() != nil {
						t.Fatal(err)
					}
					break
				}
				take(ev)
			}
			<-sent
			before := len(got)
			// The second half is sent while the client is away.
			for i := total / 2; i < total; i++ {
				notify(t, r, c.SessionID, fmt.Sprint("n-", i))
			}

			rs := openResume(t, c, lastID)
			wantStatus(t, "resuming GET", rs.Status, http.StatusOK, rs.Body)
			for len(got) < total {
				ev, err := rs.NextMessageEvent(ctx)
				if err != nil {
					t.Fatalf("after %d of %d notifications (%d before the cut): %v", len(got), total, before, err)
				}
				take(ev)
			}
			// Nothing more than each once: the next notification is the
			// sentinel.
			notify(t, r, c.SessionID, "end")
			ev, err := rs.NextMessageEvent(ctx)
			for err == nil {
				m, _ := ev.Message()
				if isLog(m) {
					break
				}
				ev, err = rs.NextMessageEvent(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := ev.Message(); logData(t, m) != "end" {
				t.Fatalf("after all %d notifications got %q, want the sentinel: a duplicate", total, logData(t, m))
			}
			for i, d := range got {
				if want := fmt.Sprint("n-", i); d != want {
					t.Fatalf("notification %d is %q, want %q (%d before the cut)", i, d, want, before)
				}
			}
			t.Logf("%d notifications before the cut, %d after", before, total-before)
		})
	}
}

// On 2025-11-25 the GET stream opens with a priming event (an id, empty
// data) and a retry field, and a resume from the priming id replays
// everything sent after it. Earlier versions get neither, only ids.
func TestGetStreamPrimingAndRetryBy2025_11_25(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled})
	ctx := testutil.Context(t, wait)

	c := r.session() // 2025-11-25
	s := r.stream(c)
	ev, err := s.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !ev.IsPriming() || ev.Retry != "1000" {
		t.Fatalf("first event on a 2025-11-25 stream is %+v, want a priming event (id, empty data) with retry 1000", ev)
	}
	notify(t, r, c.SessionID, "after-priming")
	if m, err := s.NextMatching(ctx, isLog); err != nil || logData(t, m) != "after-priming" {
		t.Fatalf("live: %v %+v", err, m)
	}
	s.Close()
	rs := openResume(t, c, ev.ID)
	wantStatus(t, "resume from the priming id", rs.Status, http.StatusOK, rs.Body)
	first, err := rs.Next(ctx)
	if err != nil || !first.IsPriming() || first.ID != ev.ID || first.Retry != "1000" {
		t.Fatalf("a resumed stream opens with %+v (%v), want the priming event of the client's cursor %q", first, err, ev.ID)
	}
	if m, err := rs.NextMatching(ctx, isLog); err != nil || logData(t, m) != "after-priming" {
		t.Fatalf("replay from the priming id: %v %+v", err, m)
	}

	for _, v := range []string{"2025-06-18", "2025-03-26"} {
		t.Run(v, func(t *testing.T) {
			c := r.client()
			initializeAt(t, c, v)
			s := r.stream(c)
			ev, err := s.Next(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !ev.IsComment() || ev.Comment != "stream open" || ev.Retry != "" || ev.ID != "" {
				t.Fatalf("first event on a %s stream is %+v, want the opening comment, no priming, no retry", v, ev)
			}
			notify(t, r, c.SessionID, "x")
			m, err := s.NextMessageEvent(ctx)
			if err != nil || m.ID == "" {
				t.Fatalf("a %s notification: %+v (%v), want an id", v, m, err)
			}
		})
	}
}

// A Last-Event-ID that the session's log does not hold (malformed, never
// issued, too long) opens a fresh stream, which goes on live: a client
// takes an error for its session's end (the Go SDK's does).
func TestResumeWithUnknownEventIDOpensAFreshStream(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled})
	ctx := testutil.Context(t, wait)
	c := r.session()
	for i, id := range []string{"nope", "1-1-999", strings.Repeat("9", 300)} {
		s := openResume(t, c, id)
		wantStatus(t, "GET with Last-Event-ID "+id[:min(len(id), 10)], s.Status, http.StatusOK, s.Body)
		notify(t, r, c.SessionID, fmt.Sprint("live-", i))
		if m, err := s.NextMatching(ctx, isLog); err != nil || logData(t, m) != fmt.Sprint("live-", i) {
			t.Fatalf("the fresh stream: %+v %v", m, err)
		}
		s.Close()
		testutil.Eventually(t, wait, "the stream to end", func() bool { return r.h.Stats().GetStreams == 0 })
	}
}

// An id issued to another session is unknown to this one: a fresh stream,
// with none of the other session's events.
func TestResumeWithAnotherSessionsEventIDIsRefused(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled})
	ctx := testutil.Context(t, wait)
	a, b := r.session(), r.session()
	sa := r.stream(a)
	notify(t, r, a.SessionID, "secret")
	ev, err := sa.NextMessageEvent(ctx)
	if err != nil || ev.ID == "" {
		t.Fatalf("session A: %+v %v", ev, err)
	}
	notify(t, r, a.SessionID, "secret-2")
	s := openResume(t, b, ev.ID)
	wantStatus(t, "B resuming A's id", s.Status, http.StatusOK, s.Body)
	// B's stream gets only its own: the first message on it is B's.
	notify(t, r, b.SessionID, "b-only")
	if m, err := s.NextMatching(ctx, isLog); err != nil || logData(t, m) != "b-only" {
		t.Fatalf("B's stream: %+v %v", m, err)
	}
}

// With DisableEventLog, streams carry no ids and Last-Event-ID is
// ignored: a fresh stream.
func TestDisableEventLogSendsNoIDsAndIgnoresLastEventID(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, DisableEventLog: true})
	ctx := testutil.Context(t, wait)
	c := r.session()
	s := openResume(t, c, "1-1-1")
	wantStatus(t, "GET with Last-Event-ID, log off", s.Status, http.StatusOK, s.Body)
	ev, err := s.Next(ctx)
	if err != nil || !ev.IsComment() || ev.Retry != "" {
		t.Fatalf("opening %+v (%v), want the comment", ev, err)
	}
	notify(t, r, c.SessionID, "x")
	ev, err = s.NextMessageEvent(ctx)
	if err != nil || ev.ID != "" {
		t.Fatalf("%+v (%v), want no id", ev, err)
	}
}

// A message whose write fails (the client stopped reading: the write times
// out) is in the log and carried over: the client that resumes from the
// last event it received gets it once, from the replay, and the carry-over
// does not send it again; every message arrives exactly once, in order.
func TestResumeAfterAFailedWriteDeliversTheCarriedMessageOnce(t *testing.T) {
	big := sessionstore.EventLogOptions{MaxStreamBytes: 64 << 20, MaxSessionBytes: 64 << 20, MaxStreamEvents: 10000}
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{EventLogOptions: big})
	r := newRig(t, streamable.Config{WriteTimeout: 200 * time.Millisecond, EventLog: log})
	c := r.session()
	sr := stallStream(t, r, c)
	testutil.Eventually(t, wait, "the stalled stream's handler to exit", func() bool {
		return r.h.Stats().GetStreams == 0
	})
	ctx := testutil.Context(t, wait)
	body, err := sr.ReadBody(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	var order []int
	lastID := ""
	take := func(ev testutil.Event) {
		m, err := ev.Message()
		if err != nil || !notPing(m) {
			return // a ping, or the event cut short (a client discards it)
		}
		seq := seqOf(t, m)
		got[seq]++
		order = append(order, seq)
		if ev.ID == "" {
			t.Fatalf("message %d has no id", seq)
		}
		lastID = ev.ID
	}
	rd := testutil.NewSSEReader(bytes.NewReader(body))
	for {
		ev, err := rd.Next()
		if err != nil {
			break
		}
		if ev.HasMessage() {
			take(ev)
		}
	}
	onStalled := len(order)
	if onStalled == 0 || onStalled == floodCount {
		t.Fatalf("%d messages reached the stalled client; the test needs some, not all", onStalled)
	}
	if r.h.Stats().QueuedMessages == 0 {
		t.Fatal("nothing carried over or queued")
	}
	s := openResume(t, c, lastID)
	wantStatus(t, "resume", s.Status, http.StatusOK, s.Body)
	readResumed(t, ctx, s, take, &order, got, onStalled)
	// And nothing after: the next message is a new one.
	notify(t, r, c.SessionID, "end")
	m, err := s.NextMatching(ctx, isLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(m.Params), `"end"`) {
		t.Fatalf("after all %d messages got %s, want the sentinel: a duplicate", floodCount, m.Params)
	}
}

// readResumed reads s, a resumed stream, handing each event to take until
// have reports floodCount messages, then requires each of them once, in
// order (onStalled of them reached the stream that was cut).
func readResumed(t *testing.T, ctx context.Context, s *testutil.Stream, take func(testutil.Event), order *[]int, got map[int]int, onStalled int) {
	t.Helper()
	for len(*order) < floodCount {
		ev, err := s.NextMessageEvent(ctx)
		if err != nil {
			t.Fatalf("after %d of %d messages (%d on the stalled stream): %v", len(*order), floodCount, onStalled, err)
		}
		take(ev)
	}
	for i, seq := range *order {
		if seq != i || got[seq] != 1 {
			t.Fatalf("message %d is seq %d, seen %d times (%d reached the stalled stream): order %v",
				i, seq, got[seq], onStalled, (*order)[max(0, i-3):min(len(*order), i+4)])
		}
	}
}

// logPart is the event log's id inside an SSE id ("<stream>/<log id>").
func logPart(sseID string) string {
	_, id, _ := strings.Cut(sseID, "/")
	return id
}

// streamWithOneEvent opens c's GET stream on r, has one notification sent
// to the session and returns the stream with the event that carried it,
// which has an id.
func streamWithOneEvent(t *testing.T, ctx context.Context, r *rig, c *testutil.Client) (*testutil.Stream, testutil.Event) {
	t.Helper()
	s := r.stream(c)
	notify(t, r, c.SessionID, "one")
	ev, err := s.NextMessageEvent(ctx)
	if err != nil || ev.ID == "" {
		t.Fatalf("the first notification's event: %+v %v", ev, err)
	}
	return s, ev
}
