package testutil

import (
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lifeline-mcp/lifeline/internal/demotools"
	"github.com/lifeline-mcp/lifeline/streamable"
)

// A strict reader drops an event the stream ends inside (its id must not
// become a resume cursor); the lenient one returns what arrived.
func TestStrictSSEReaderDropsAnEventCutShort(t *testing.T) {
	const body = "id: 1\ndata: {\"a\":1}\n\nid: 2\ndata: {\"a\""
	strict := NewStrictSSEReader(strings.NewReader(body))
	if ev, err := strict.Next(); err != nil || ev.ID != "1" {
		t.Fatalf("strict: first event %+v, %v; want id 1", ev, err)
	}
	if ev, err := strict.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("strict: the cut event gave %+v, %v; want io.ErrUnexpectedEOF", ev, err)
	}
	lenient := NewSSEReader(strings.NewReader(body))
	_, _ = lenient.Next()
	if ev, err := lenient.Next(); err != nil || ev.ID != "2" {
		t.Errorf("lenient: the cut event gave %+v, %v; want id 2 as far as it got", ev, err)
	}
	// A stream that ends between events ends cleanly for both.
	if _, err := NewStrictSSEReader(strings.NewReader("data: x\n\n")).Next(); err != nil {
		t.Errorf("strict: a whole event: %v", err)
	}
}

// The note book counts what was sent, received once, lost, duplicated and
// unexpected, whatever the order of arrivals and results.
func TestNoteBookCounts(t *testing.T) {
	b := newNoteBook()
	b.arrived("a", 0) // before its call's result
	b.expect("a", 3)
	b.arrived("a", 1)
	b.arrived("a", 1) // duplicate
	b.arrived("a", 5) // past what was sent
	b.arrived("x", 0) // a call that never answered
	b.arrived("a", maxNoteSeq)
	sent, received, lost, dup, unexpected := b.tally()
	if sent != 3 || received != 2 || lost != 1 || dup != 1 || unexpected != 2 {
		t.Errorf("tally = sent %d received %d lost %d dup %d unexpected %d; want 3 2 1 1 2", sent, received, lost, dup, unexpected)
	}
	if got := b.absent(10); len(got) != 1 || got[0] != "a: 2" {
		t.Errorf("absent = %q, want [a: 2]", got)
	}
	b.expect("a", 7) // a second result for a tag changes nothing
	if s, _, _, _, _ := b.tally(); s != 3 {
		t.Errorf("sent = %d after a second expect, want 3", s)
	}
}

// A client whose session is deleted re-initializes at its next call (once,
// counted), and the call and its notifications still arrive.
func TestResumingClientReinitializesOnAGoneSession(t *testing.T) {
	h := streamable.New(demotools.NewServer("resumer-test", "1"), streamable.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	defer func() { _ = h.Close() }()
	c := NewResumingClient(ResumingClientConfig{URL: ts.URL, Logf: t.Logf})
	defer c.Close()
	ctx := Context(t, wait)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	Eventually(t, wait, "the GET stream opened", func() bool { return c.LastEventID() != "" })
	if _, err := c.Notify(ctx, 3, 8); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitDelivered(ctx); err != nil {
		t.Fatal(err)
	}
	first := c.SessionID()
	if code, err := c.Delete(ctx); err != nil || code != 200 {
		t.Fatalf("DELETE = %d, %v", code, err)
	}
	if _, err := c.Progress(ctx, 2, 0); err != nil {
		t.Fatalf("a call after the session was deleted: %v", err)
	}
	if c.SessionID() == first {
		t.Fatal("the client kept the deleted session")
	}
	Eventually(t, wait, "the GET stream reopened on the new session", func() bool {
		conns := c.GetConns()
		return len(conns) > 1 && conns[len(conns)-1].Ended.IsZero()
	})
	if _, err := c.Notify(ctx, 4, 8); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitDelivered(ctx); err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Reinits != 1 || st.Calls != 3 || st.Failures != 0 || st.NotesSent != 3+4+4 || st.NotesLost != 0 || st.NotesDuplicated != 0 {
		t.Errorf("stats %+v; want 1 re-initialization, 3 calls, 11 notifications sent and none lost", st)
	}
}
