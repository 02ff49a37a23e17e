package streamable_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// What the event log keeps for resumption: a session's events purged with
// it (DELETE, expiry), and ids past the log's bound or refused by it.

// DELETE purges the session's events: a resume afterwards gets 404 (the
// session is gone) and the log no longer holds its ids.
func TestDeletePurgesTheSessionsEvents(t *testing.T) {
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, EventLog: log})
	ctx := testutil.Context(t, wait)
	c := r.session()
	s, ev := streamWithOneEvent(t, ctx, r, c)
	replayable := func() error {
		_, err := log.ReplayEventsAfter(ctx, c.SessionID, logPart(ev.ID), func(string, json.RawMessage) error { return nil })
		return err
	}
	if err := replayable(); err != nil {
		t.Fatalf("before DELETE the log holds the id: %v", err)
	}
	s.Close()
	if resp, err := c.Delete(ctx); err != nil || resp.Status != http.StatusOK {
		t.Fatalf("DELETE: %v %+v", err, resp)
	}
	if err := replayable(); !errors.Is(err, sessionstore.ErrUnknownEventID) {
		t.Fatalf("after DELETE the log still replays the session's events (err %v)", err)
	}
	rs := openResume(t, c, ev.ID)
	wantStatus(t, "resume after DELETE", rs.Status, http.StatusNotFound, rs.Body)
}

// Expiry purges the session's events, as DELETE does.
func TestExpiryPurgesTheSessionsEvents(t *testing.T) {
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{})
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, IdleTTL: testIdleTTL, EventLog: log})
	ctx := testutil.Context(t, wait)
	c := r.session()
	s, ev := streamWithOneEvent(t, ctx, r, c)
	s.Close()
	testutil.Eventually(t, wait, "the idle session to expire", func() bool {
		return r.h.Stats().Sessions == 0
	})
	_, err := log.ReplayEventsAfter(ctx, c.SessionID, logPart(ev.ID), func(string, json.RawMessage) error { return nil })
	if !errors.Is(err, sessionstore.ErrUnknownEventID) {
		t.Fatalf("after expiry the log still replays the session's events (err %v)", err)
	}
	rs := openResume(t, c, ev.ID)
	wantStatus(t, "resume after expiry", rs.Status, http.StatusNotFound, rs.Body)
}

// An id the log has dropped (past its per-stream bound) is expired: a
// fresh stream, like an unknown one; the latest id still resumes.
func TestResumeFromAnIDPastTheLogsBoundOpensAFreshStream(t *testing.T) {
	opts := sessionstore.EventLogOptions{MaxStreamEvents: 5}
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{EventLogOptions: opts})
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, EventLog: log})
	ctx := testutil.Context(t, wait)
	c := r.session()
	s := r.stream(c)
	var ids []string
	for i := range 10 {
		notify(t, r, c.SessionID, fmt.Sprint("n-", i))
		ev, err := s.NextMessageEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.ID)
	}
	s.Close()
	old := openResume(t, c, ids[0])
	wantStatus(t, "resume from a dropped id", old.Status, http.StatusOK, old.Body)
	old.Close()
	testutil.Eventually(t, wait, "the fresh stream to end", func() bool { return r.h.Stats().GetStreams == 0 })
	latest := openResume(t, c, ids[len(ids)-2])
	wantStatus(t, "resume from a kept id", latest.Status, http.StatusOK, latest.Body)
	m, err := latest.NextMatching(ctx, isLog)
	if err != nil || logData(t, m) != "n-9" {
		t.Fatalf("replay: %+v %v", m, err)
	}
}

// A message the log refuses (it is full) still goes out, without an id.
func TestMessageTheLogRefusesGoesWithoutAnID(t *testing.T) {
	log := sessionstore.NewMemoryEventLog(sessionstore.MemoryEventLogOptions{MaxTotalBytes: 2 << 10})
	r := newRig(t, streamable.Config{HeartbeatInterval: streamable.Disabled, EventLog: log})
	ctx := testutil.Context(t, wait)
	c := r.session()
	s := r.stream(c)
	withID, without := 0, 0
	for i := range 20 {
		notify(t, r, c.SessionID, fmt.Sprint("n-", i))
		ev, err := s.NextMessageEvent(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := ev.Message(); logData(t, m) != fmt.Sprint("n-", i) {
			t.Fatalf("message %d is %s", i, ev.Data)
		}
		if ev.ID != "" {
			withID++
		} else {
			without++
		}
	}
	if withID == 0 || without == 0 {
		t.Fatalf("%d with an id, %d without: want the log to fill up within the test", withID, without)
	}
}
