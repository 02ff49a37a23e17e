package streamable_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

func isPing(m testutil.Message) bool { return m.IsRequest() && m.Method == "ping" }

func notPing(m testutil.Message) bool { return !isPing(m) }

// Before 2025-11-25 (which opens with a priming event:
// TestGetStreamPrimingAndRetryBy2025_11_25) the stream opens with a comment.
func TestGetStreamOpensWithComment(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled})
	c := r.client()
	initializeAt(t, c, "2025-06-18")
	s := r.stream(c)
	ev, err := s.Next(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	if !ev.IsComment() {
		t.Fatalf("first item on the stream is %+v, want a comment", ev)
	}
	if got := s.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("Content-Type %q", got)
	}
}

func TestHeartbeatPingsHaveUniqueIDsAndPongsGet202(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	seen := map[string]bool{}
	for range 5 {
		m, err := s.NextMatching(ctx, isPing)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(m.ID)] {
			t.Fatalf("ping id %s sent twice", m.ID)
		}
		seen[string(m.ID)] = true
		resp, err := c.Reply(ctx, m.ID, map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "pong", resp.Status, http.StatusAccepted, resp.Body)
	}
}

func TestUnknownResponseIDGets400(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	ctx := testutil.Context(t, wait)
	for _, id := range []string{`999999`, `"ping-1"`} {
		resp, err := c.Reply(ctx, json.RawMessage(id), map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		wantRPCError(t, "response with id "+id, resp.Status, http.StatusBadRequest, resp.Body, "no request with id")
	}
}

func TestSecondGetGets409WhileFirstIsLive(t *testing.T) {
	// A 100 ms heartbeat leaves the answering client ample time for each
	// pong on a loaded machine.
	r := newRig(t, streamable.Config{HeartbeatInterval: 100 * time.Millisecond})
	c := r.session()
	first := r.stream(c)
	// The first stream's client answers pings, so the conflicting GET
	// probes it; the pong proves it alive.
	first.AnswerPings(true)
	testutil.Eventually(t, wait, "a pong", func() bool { return first.Pongs() > 0 })
	second, err := c.OpenStream(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantRPCError(t, "second GET", second.Status, http.StatusConflict, second.Body, "Only one SSE stream")
	// A client that never answers pings is never cut off for it, and its
	// stream keeps the slot too.
	c2 := r.session()
	r.stream(c2)
	conflict, err := c2.OpenStream(testutil.Context(t, wait))
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "second GET, non-answering client", conflict.Status, http.StatusConflict, conflict.Body)
	select {
	case <-first.Ended():
		t.Fatal("the live first stream was closed by the conflicting GET")
	default:
	}
}

func TestReconnectAfterClientCloseWithinOneSecond(t *testing.T) {
	r := newRig(t, streamable.Config{HeartbeatInterval: time.Hour})
	c := r.session()
	for i := range 20 {
		s, err := c.OpenStream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wantStatus(t, "GET", s.Status, http.StatusOK, s.Body)
		if _, err := s.Next(testutil.Context(t, wait)); err != nil {
			t.Fatal(err)
		}
		s.Close()
		start := time.Now()
		next, err := c.OpenStream(testutil.Context(t, wait))
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		wantStatus(t, "reconnect", next.Status, http.StatusOK, next.Body)
		if took > time.Second {
			t.Fatalf("reconnect %d took %v, want under 1 s", i, took)
		}
		next.Close()
	}
	r.quiesce()
}

func TestSilentClientStreamIsTakenOverWithinFourIntervals(t *testing.T) {
	const interval = 100 * time.Millisecond
	r := newRig(t, streamable.Config{HeartbeatInterval: interval})
	c := r.session()
	first := r.stream(c)
	ctx := testutil.Context(t, wait)
	// GET #1 answers one ping, then goes silent with its connection open.
	ping, err := first.NextMatching(ctx, isPing)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil || resp.Status != http.StatusAccepted {
		t.Fatalf("pong: %v %+v", err, resp)
	}
	start := time.Now()
	second, err := c.OpenStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(second.Close)
	took := time.Since(start)
	wantStatus(t, "GET #2", second.Status, http.StatusOK, second.Body)
	if took > 4*interval {
		t.Fatalf("GET #2 took %v, want within four intervals (%v)", took, 4*interval)
	}
	select {
	case <-first.Ended():
	case <-ctx.Done():
		t.Fatal("GET #1 was not ended by the takeover")
	}
}

func TestSilentClientStreamIsClosedByLiveness(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	ping, err := s.NextMatching(ctx, isPing)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Reply(ctx, ping.ID, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Ended():
	case <-ctx.Done():
		t.Fatal("a stream whose client stopped answering pings was not closed")
	}
	r.quiesce()
	// The session survives; the client reconnects.
	again := r.stream(c)
	if _, err := again.Next(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestNeverAnsweringClientIsNeverCutOff(t *testing.T) {
	r := newRig(t, streamable.Config{})
	c := r.session()
	s := r.stream(c)
	ctx := testutil.Context(t, wait)
	for range 30 {
		if _, err := s.NextMatching(ctx, isPing); err != nil {
			t.Fatalf("stream of a client that never answers pings ended: %v", err)
		}
	}
	if got := r.h.Stats().GetStreams; got != 1 {
		t.Fatalf("GetStreams = %d, want 1", got)
	}
}
