package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/lifeline-mcp/lifeline/sessionstore"
	"github.com/lifeline-mcp/lifeline/sessionstore/redisstore"
	"github.com/lifeline-mcp/lifeline/streamable"
	"github.com/lifeline-mcp/lifeline/testutil"
)

// gatedLog is a replica's Redis event log whose StoreStream (the record of
// a response written whole, after its write) waits for a token on release
// and then fails with fail, when set; it counts its replays.
type gatedLog struct {
	*redisstore.EventLog
	release <-chan struct{}
	entered chan<- struct{} // a send per StoreStream, as it begins to wait
	fail    error
	replays *atomic.Int64
}

func (g *gatedLog) StoreStream(ctx context.Context, sessionID, streamID string, messages []json.RawMessage) error {
	select {
	case g.entered <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	if g.fail != nil {
		return g.fail
	}
	return g.EventLog.StoreStream(ctx, sessionID, streamID, messages)
}

func (g *gatedLog) ReplayEventsAfter(ctx context.Context, sessionID, lastEventID string, send func(string, json.RawMessage) error) (string, error) {
	g.replays.Add(1)
	return g.EventLog.ReplayEventsAfter(ctx, sessionID, lastEventID, send)
}

// behindRig is three replicas on one redis-server, each with a gatedLog on
// its store, serving the "burst" tool (burstServer's).
type behindRig struct {
	cl      *cluster
	release chan struct{}
	entered chan struct{}
	replays []*atomic.Int64 // by replica
}

func newBehindRig(t *testing.T, writeTimeout time.Duration, fail error) *behindRig {
	t.Helper()
	r := &behindRig{release: make(chan struct{}), entered: make(chan struct{})}
	r.cl = newConfiguredCluster(t, streamable.Config{WriteTimeout: writeTimeout}, redisstore.Options{},
		func(store *redisstore.Store, cfg *streamable.Config) {
			replays := &atomic.Int64{}
			r.replays = append(r.replays, replays)
			cfg.EventLog = &gatedLog{EventLog: store.EventLog(sessionstore.EventLogOptions{}),
				release: r.release, entered: r.entered, fail: fail, replays: replays}
		},
		func(s *server.MCPServer) { s.AddTool(mcp.NewTool("burst"), burst) })
	return r
}

// call calls "burst" on replica 0 and reads its whole response, which
// must come while its record waits on the gate: a priming event, three
// progress notifications and the answer, each with an id of its place.
func (r *behindRig) call(t *testing.T, ctx context.Context, c *testutil.Client) []testutil.Event {
	t.Helper()
	evs := readAll(t, ctx, callWithProgress(t, ctx, c, "burst"))
	select {
	case <-r.entered:
	case <-ctx.Done():
		t.Fatal("the response's record never began")
	}
	if len(evs) != 5 || !evs[0].IsPriming() {
		t.Fatalf("events %+v; want the priming event, 3 progress notifications and the answer", evs)
	}
	stream, _, _ := strings.Cut(evs[0].ID, "/")
	for k, ev := range evs {
		if want := stream + "/~" + strconv.Itoa(k); ev.ID != want {
			t.Fatalf("event %d has id %q; want %q (its place in the stream)", k, ev.ID, want)
		}
	}
	if m, err := evs[4].Message(); err != nil || string(m.ID) != "7" {
		t.Fatalf("last event %+v (%v); want the answer to 7", evs[4], err)
	}
	return evs
}

// resumeAsync opens a GET with Last-Event-ID lastID on c, answering on
// the returned channel.
func resumeAsync(t *testing.T, c *testutil.Client, lastID string) <-chan *testutil.Stream {
	t.Helper()
	c.Header = map[string]string{"Last-Event-ID": lastID}
	out := make(chan *testutil.Stream, 1)
	go func() {
		s, err := c.OpenStream(context.Background())
		if err != nil {
			s = &testutil.Stream{Status: -1, Body: []byte(err.Error())}
		} else {
			t.Cleanup(s.Close)
		}
		out <- s
	}()
	return out
}

// A response written whole on the Redis log goes out before its record
// lands: the client has all of it while the record waits. A resume from
// one of its ids that comes before the record landed, on the replica that
// wrote it or on another, waits for the record and is then sent the rest,
// under the same ids. (Fails if the response waits for its record, if its
// ids are not its places, or if a resume answers the id unknown before
// the record lands.)
func TestWholeResponseGoesOutBeforeItsRecord(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replica int
	}{{"resume on the same replica", 0}, {"resume on another replica", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBehindRig(t, wait, nil)
			ctx := testutil.Context(t, wait)
			c := r.cl.client(0, nil)
			initializeAt(t, c, "2025-11-25")
			evs := r.call(t, ctx, c)

			resumed := resumeAsync(t, r.cl.client(tc.replica, c), evs[1].ID)
			testutil.Eventually(t, wait, "the resume to find the id not yet recorded", func() bool {
				return r.replays[tc.replica].Load() > 0
			})
			select {
			case s := <-resumed:
				t.Fatalf("the resume answered %d (%s) before the record landed", s.Status, s.Body)
			default:
			}
			r.release <- struct{}{}
			var s *testutil.Stream
			select {
			case s = <-resumed:
			case <-ctx.Done():
				t.Fatal("the resume did not answer once the record landed")
			}
			wantStatus(t, "resume", s.Status, http.StatusOK, s.Body)
			got := readAll(t, ctx, s)
			if len(got) != 3 || got[0].ID != evs[2].ID || got[1].ID != evs[3].ID || got[2].ID != evs[4].ID ||
				got[0].Data != evs[2].Data || got[2].Data != evs[4].Data {
				t.Fatalf("resumed %+v; want events 2-4 of %+v", got, evs)
			}
		})
	}
}

// A response whose record fails: the client has it whole; a resume from
// one of its ids is answered, once the record is known to have failed (on
// another replica, once a write timeout has passed), as any id the log
// does not hold: 400, naming Last-Event-ID.
func TestWholeResponseWhoseRecordFailedIsUnknownToAResume(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replica int
	}{{"resume on the same replica", 0}, {"resume on another replica", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBehindRig(t, 300*time.Millisecond, errors.New("the test's log fails"))
			ctx := testutil.Context(t, wait)
			c := r.cl.client(0, nil)
			initializeAt(t, c, "2025-11-25")
			evs := r.call(t, ctx, c)
			resumed := resumeAsync(t, r.cl.client(tc.replica, c), evs[1].ID)
			r.release <- struct{}{}
			var s *testutil.Stream
			select {
			case s = <-resumed:
			case <-ctx.Done():
				t.Fatal("the resume never answered")
			}
			wantStatus(t, "resume", s.Status, http.StatusBadRequest, s.Body)
			if !strings.Contains(string(s.Body), "Last-Event-ID") {
				t.Fatalf("resume body %s; want it to name Last-Event-ID", s.Body)
			}
		})
	}
}
