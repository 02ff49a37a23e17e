package streamable_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/redis/go-redis/v9"

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
	release <-chan struct{} // a token per StoreStream, or closed for all
	entered chan<- struct{} // a send per StoreStream, as it begins to wait (buffered)
	fail    error
	replays *atomic.Int64
	ended   atomic.Int64 // StoreStream calls returned
}

func (g *gatedLog) StoreStream(ctx context.Context, sessionID, streamID string, messages []json.RawMessage) error {
	defer g.ended.Add(1)
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
	logs    []*gatedLog     // by replica
}

func newBehindRig(t *testing.T, writeTimeout time.Duration, fail error) *behindRig {
	t.Helper()
	return newBehindRigWith(t, streamable.Config{WriteTimeout: writeTimeout}, fail)
}

// newBehindRigWith is newBehindRig with cfg (zero fields take the cluster
// tests' defaults).
func newBehindRigWith(t *testing.T, cfg streamable.Config, fail error) *behindRig {
	t.Helper()
	r := &behindRig{release: make(chan struct{}), entered: make(chan struct{}, 64)}
	r.cl = newConfiguredCluster(t, cfg, redisstore.Options{},
		func(store *redisstore.Store, cfg *streamable.Config) {
			replays := &atomic.Int64{}
			r.replays = append(r.replays, replays)
			log := &gatedLog{EventLog: store.EventLog(sessionstore.EventLogOptions{}),
				release: r.release, entered: r.entered, fail: fail, replays: replays}
			r.logs = append(r.logs, log)
			cfg.EventLog = log
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

// resumeBeforeRecord resumes on c from lastID while the record of lastID's
// response waits: once the resume has found the id not recorded (replays,
// its log's count, moved) and has not answered, land lets the record go;
// it returns the resume's answer.
func resumeBeforeRecord(t *testing.T, ctx context.Context, c *testutil.Client, lastID string, replays *atomic.Int64, land func()) *testutil.Stream {
	t.Helper()
	before := replays.Load()
	resumed := resumeAsync(t, c, lastID)
	testutil.Eventually(t, wait, "the resume to find the id not yet recorded", func() bool { return replays.Load() > before })
	select {
	case s := <-resumed:
		t.Fatalf("the resume answered %d (%s) before the record ended", s.Status, s.Body)
	default:
	}
	land()
	select {
	case s := <-resumed:
		return s
	case <-ctx.Done():
		t.Fatal("the resume did not answer once the record ended")
		return nil
	}
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

			s := resumeBeforeRecord(t, ctx, r.cl.client(tc.replica, c), evs[1].ID, r.replays[tc.replica], func() { r.release <- struct{}{} })
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
// one of its ids, waiting when the record fails, is answered once the
// record is known to have failed (on the replica that wrote it, at once;
// on another, once a write timeout has passed), as any id the log does
// not hold: 400, naming Last-Event-ID.
func TestWholeResponseWhoseRecordFailedIsUnknownToAResume(t *testing.T) {
	for _, tc := range []struct {
		name         string
		replica      int
		writeTimeout time.Duration
	}{
		// Longer than the test: the replica that saw the record fail
		// answers at once.
		{"resume on the same replica", 0, time.Hour},
		{"resume on another replica", 1, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBehindRig(t, tc.writeTimeout, errors.New("the test's log fails"))
			ctx := testutil.Context(t, wait)
			c := r.cl.client(0, nil)
			initializeAt(t, c, "2025-11-25")
			evs := r.call(t, ctx, c)
			s := resumeBeforeRecord(t, ctx, r.cl.client(tc.replica, c), evs[1].ID, r.replays[tc.replica], func() { r.release <- struct{}{} })
			wantStatus(t, "resume", s.Status, http.StatusBadRequest, s.Body)
			if !strings.Contains(string(s.Body), "Last-Event-ID") {
				t.Fatalf("resume body %s; want it to name Last-Event-ID", s.Body)
			}
		})
	}
}

// An id the log cannot hold yet is waited for, not one it cannot hold at
// all: a made-up place in a stream never stored costs a few replays on
// another replica (the poll backs off), and a place past the end of a
// stream that landed is answered at once. Both are 400.
func TestPlaceIDsTheLogCannotReplay(t *testing.T) {
	r := newBehindRig(t, time.Second, nil)
	ctx := testutil.Context(t, wait)
	c := r.cl.client(0, nil)
	initializeAt(t, c, "2025-11-25")
	evs := r.call(t, ctx, c)
	r.release <- struct{}{}
	stream, _, _ := strings.Cut(evs[0].ID, "/")
	for _, tc := range []struct {
		name, id   string
		maxReplays int64
	}{
		{"a place in a stream never stored", "p0123456789abcdef-Nw/~0", 12},
		{"a place past a stored stream's end", stream + "/~9", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := r.replays[1].Load()
			var s *testutil.Stream
			select {
			case s = <-resumeAsync(t, r.cl.client(1, c), tc.id):
			case <-ctx.Done():
				t.Fatal("the resume never answered")
			}
			wantStatus(t, "resume from "+tc.id, s.Status, http.StatusBadRequest, s.Body)
			if n := r.replays[1].Load() - before; n > tc.maxReplays {
				t.Fatalf("%d replays for one resume; want at most %d", n, tc.maxReplays)
			}
		})
	}
}

// A session's records pending behind their writes are bounded: with 16
// pending, its next whole responses are recorded before they are written
// (ids of the log's own), and none of its calls is refused for them, even
// with MaxRequestsPerSession at 1; once they land, responses go behind
// their records again.
func TestBehindRecordsAreBoundedPerSession(t *testing.T) {
	r := newBehindRigWith(t, streamable.Config{WriteTimeout: wait, MaxRequestsPerSession: 1}, nil)
	ctx := testutil.Context(t, 2*wait)
	c := r.cl.client(0, nil)
	initializeAt(t, c, "2025-11-25")
	isPlace := func(ev testutil.Event) bool { return strings.Contains(ev.ID, "/~") }
	for i := range 20 {
		evs := readAll(t, ctx, callWithProgress(t, ctx, c, "burst"))
		if len(evs) != 5 {
			t.Fatalf("call %d: %+v; want the whole response", i, evs)
		}
		if want := i < 16; isPlace(evs[0]) != want {
			t.Fatalf("call %d has ids like %q; want place ids: %v", i, evs[0].ID, want)
		}
	}
	close(r.release)
	testutil.Eventually(t, wait, "the 16 records to land", func() bool { return r.logs[0].ended.Load() == 16 })
	if evs := readAll(t, ctx, callWithProgress(t, ctx, c, "burst")); len(evs) != 5 || !isPlace(evs[0]) {
		t.Fatalf("after the records landed: %+v; want a whole response with place ids", evs)
	}
}

// notNetHTTP hides net/http's own response writer from the Handler, so
// that a resumable request runs on a worker goroutine (runResumable), as
// over HTTP/2.
type notNetHTTP struct{ http.ResponseWriter }

func (w notNetHTTP) Flush()                      { w.ResponseWriter.(http.Flusher).Flush() }
func (w notNetHTTP) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// On a worker goroutine too, a whole response goes out before its record,
// and a resume before the record waits for it.
func TestWholeResponseOnAWorkerGoesOutBeforeItsRecord(t *testing.T) {
	rs := testutil.StartRedisServer(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	store := redisstore.New(rc, redisstore.Options{Prefix: "worker:"})
	release, entered := make(chan struct{}), make(chan struct{}, 4)
	replays := &atomic.Int64{}
	log := &gatedLog{EventLog: store.EventLog(sessionstore.EventLogOptions{}), release: release, entered: entered, replays: replays}
	srv := burstServer()
	h := streamable.New(srv, streamable.Config{Store: store, EventLog: log, WriteTimeout: wait})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(notNetHTTP{w}, r) }))
	t.Cleanup(func() { _ = store.Close(); _ = rc.Close() })
	shutDownAtCleanup(t, h, ts)
	ctx := testutil.Context(t, wait)
	c := testutil.NewClient(ts.URL)
	initializeAt(t, c, "2025-11-25")
	evs := readAll(t, ctx, callWithProgress(t, ctx, c, "burst"))
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the response's record never began")
	}
	if len(evs) != 5 || !strings.HasSuffix(evs[4].ID, "/~4") {
		t.Fatalf("events %+v; want the whole response, with place ids", evs)
	}
	other := testutil.NewClient(ts.URL)
	other.SessionID, other.ProtocolVersion = c.SessionID, c.ProtocolVersion
	s := resumeBeforeRecord(t, ctx, other, evs[1].ID, replays, func() { close(release) })
	wantStatus(t, "resume", s.Status, http.StatusOK, s.Body)
	if got := readAll(t, ctx, s); len(got) != 3 || got[2].ID != evs[4].ID {
		t.Fatalf("resumed %+v; want events 2-4 of %+v", got, evs)
	}
}

// A record that fails because its session ended for good (a DELETE right
// after the call, on a replica whose store is its own: the record ends
// with the session) is not logged or counted as refused: the session's
// log is purged with it, and nothing of it is lost. (Fails if such a
// failure is reported as a refused record.)
func TestBehindRecordEndingWithItsSessionIsNotARefusal(t *testing.T) {
	rs := testutil.StartRedisServer(t)
	rc := redis.NewClient(&redis.Options{Addr: rs.Addr(), ContextTimeoutEnabled: true})
	store := redisstore.New(rc, redisstore.Options{Prefix: "quiet:"})
	entered := make(chan struct{}, 4)
	log := &gatedLog{EventLog: store.EventLog(sessionstore.EventLogOptions{}), release: make(chan struct{}), entered: entered, replays: &atomic.Int64{}}
	var logs lockedBuffer
	h := streamable.New(burstServer(), streamable.Config{EventLog: log, WriteTimeout: wait,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ts := httptest.NewServer(h)
	t.Cleanup(func() { _ = store.Close(); _ = rc.Close() })
	shutDownAtCleanup(t, h, ts)
	ctx := testutil.Context(t, wait)
	c := testutil.NewClient(ts.URL)
	initializeAt(t, c, "2025-11-25")
	if evs := readAll(t, ctx, callWithProgress(t, ctx, c, "burst")); len(evs) != 5 {
		t.Fatalf("events %+v; want the whole response", evs)
	}
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the response's record never began")
	}
	// The DELETE ends the session's context, which ends the pending
	// record (it fails), and waits for it.
	resp, err := c.Delete(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, "DELETE", resp.Status, http.StatusOK, resp.Body)
	if log.ended.Load() != 1 {
		t.Fatalf("%d records ended by the DELETE's answer; want the pending one", log.ended.Load())
	}
	if out := logs.String(); strings.Contains(out, "refused a response written before its record") {
		t.Fatalf("a record that ended with its session was logged as refused:\n%s", out)
	}
}
