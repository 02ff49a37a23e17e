package testutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of ResumingClientConfig.
const (
	DefaultCallTimeout   = 30 * time.Second
	DefaultMinBackoff    = 50 * time.Millisecond
	DefaultMaxBackoff    = time.Second
	DefaultCallAttempts  = 5
	DefaultResumeRetries = 50
)

// getConnHistory bounds how many GET connections a ResumingClient
// remembers (GetConns).
const getConnHistory = 64

// ResumingClientConfig configures a ResumingClient.
type ResumingClientConfig struct {
	// URL is the MCP endpoint.
	URL string
	// Name tells this client's notifications apart from another's (it
	// starts every lifeline_notify_session tag); "c" when empty.
	Name string
	// CallTimeout is how long a tool call may take, resumes included,
	// before it counts as hung (DefaultCallTimeout).
	CallTimeout time.Duration
	// MinBackoff and MaxBackoff bound the wait before a reconnect or a
	// retry: it starts at MinBackoff (or the stream's retry field) and
	// doubles up to MaxBackoff (DefaultMinBackoff, DefaultMaxBackoff).
	MinBackoff, MaxBackoff time.Duration
	// CallAttempts bounds the attempts of one call: a call whose request
	// got no answer at all (a transport error, 503, a 404 that made the
	// client re-initialize) is sent again as a new request, at most this
	// many times in all (DefaultCallAttempts).
	CallAttempts int
	// ResumeRetries bounds the GETs that resume one call's cut POST
	// stream (DefaultResumeRetries).
	ResumeRetries int
	// Logf, when set, is told about reconnects, resumes and failures.
	Logf func(format string, args ...any)
}

// ResumingClient is a raw MCP client that survives cuts and replica
// restarts the way the 2025-11-25 specification lets a client: it keeps
// the session's GET stream open and resumes it with Last-Event-ID after
// every cut (reconnecting with bounded backoff), resumes a tool call's
// POST stream cut before its final response with a GET carrying the last
// event id seen on it, answers the server's pings, and initializes a new
// session when the server answers 404 (counted). It counts what it sees
// (Stats) and checks the demo tools' notifications for loss and
// duplicates: lifeline_notify_session's by their tag and seq, a call's
// own by their content. It is not an SDK: it speaks just enough MCP for
// soak and fault tests. Its methods are safe for concurrent use.
type ResumingClient struct {
	cfg ResumingClientConfig
	hc  *http.Client

	initMu  sync.Mutex // serializes initializations
	nextID  atomic.Int64
	nextTag atomic.Int64

	mu       sync.Mutex
	sess     clientSession
	getConns []GetConn
	notes    noteBook
	stats    ResumingStats

	life    context.Context // ends with Close; bounds the GET loop and replies
	stop    context.CancelFunc
	wg      sync.WaitGroup // the GET loop and ping replies
	closeMu sync.Mutex     // orders a reply's wg.Add before Close's Wait
	closed  bool           // under closeMu
}

// clientSession is the session a ResumingClient uses: its id, version and
// generation (one more at each initialize), and its GET stream's cursor.
type clientSession struct {
	id, version string
	gen         int
	lastGetID   string
}

// ResumingStats counts what a ResumingClient did and saw.
type ResumingStats struct {
	Calls      int64 // tool calls made
	Failures   int64 // calls that ended without a result (an error answer, an unresumable cut, attempts spent)
	Hung       int64 // calls with no final answer within CallTimeout
	Retries    int64 // requests sent again after getting no answer at all
	Reinits    int64 // initializations after the first (a 404 said the session was gone)
	Resumes    int64 // GETs that resumed a cut POST stream
	Reconnects int64 // GET stream connections after the first

	NotesSent       int64 // notifications the server said it sent (tool results), or a call's expected ones
	NotesReceived   int64 // distinct expected notifications received
	NotesLost       int64 // sent and not received (GET ones as of the Stats call)
	NotesDuplicated int64 // received more than once
	NotesUnexpected int64 // received but from a call that never answered (a retried request's first run)
	NotesRefused    int64 // notifications lifeline_notify_session said the server refused (queue full)
}

// GetConn describes one GET stream connection.
type GetConn struct {
	Opened     time.Time // when its 200 arrived
	Resumed    bool      // it carried Last-Event-ID
	FirstEvent time.Time // when its first message event arrived; zero if none
	LastEvent  time.Time // when its last message event arrived; zero if none
	Ended      time.Time // when it ended; zero while it is open
}

// NewResumingClient returns a client for cfg.URL; Start initializes it.
func NewResumingClient(cfg ResumingClientConfig) *ResumingClient {
	if cfg.Name == "" {
		cfg.Name = "c"
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.CallAttempts <= 0 {
		cfg.CallAttempts = DefaultCallAttempts
	}
	if cfg.ResumeRetries <= 0 {
		cfg.ResumeRetries = DefaultResumeRetries
	}
	return &ResumingClient{cfg: cfg, hc: &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}}, notes: newNoteBook()}
}

// Start initializes a session (bounded by ctx) and starts keeping its GET
// stream open until Close.
func (c *ResumingClient) Start(ctx context.Context) error {
	if err := c.reinit(ctx, -1); err != nil {
		return err
	}
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed || c.stop != nil {
		return errors.New("resuming client: Start after Close or a second Start")
	}
	c.life, c.stop = context.WithCancel(context.Background())
	c.wg.Add(1)
	go c.getLoop(c.life)
	return nil
}

// Close stops the GET stream and waits for every goroutine of the client.
// It does not end the session.
func (c *ResumingClient) Close() {
	c.closeMu.Lock()
	was, stop := c.closed, c.stop
	c.closed = true
	c.closeMu.Unlock()
	if was {
		return
	}
	if stop != nil {
		stop()
	}
	c.wg.Wait()
	c.hc.CloseIdleConnections()
}

// SessionID returns the current session's id.
func (c *ResumingClient) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.id
}

// LastEventID returns the id of the last event the GET stream received
// (the cursor it would resume from).
func (c *ResumingClient) LastEventID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess.lastGetID
}

// GetConns returns the GET stream's connections, oldest first (the last
// 64).
func (c *ResumingClient) GetConns() []GetConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]GetConn(nil), c.getConns...)
}

// Stats returns the counters; NotesLost counts the GET notifications not
// received yet (see WaitDelivered).
func (c *ResumingClient) Stats() ResumingStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	sent, got, lost, dup, unexpected := c.notes.tally()
	s.NotesSent += sent
	s.NotesReceived += got
	s.NotesLost += lost
	s.NotesDuplicated += dup
	s.NotesUnexpected += unexpected
	return s
}

// Missing describes up to limit calls whose GET notifications have not all
// arrived: "tag: seq seq ...", for a failure message.
func (c *ResumingClient) Missing(limit int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notes.absent(limit)
}

// WaitDelivered waits until every GET notification the server said it
// sent has arrived, or ctx ends (then it returns ctx's error and Stats
// counts the missing ones as lost).
func (c *ResumingClient) WaitDelivered(ctx context.Context) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		c.mu.Lock()
		_, _, lost, _, _ := c.notes.tally()
		c.mu.Unlock()
		if lost == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d notifications not delivered: %w", lost, ctx.Err())
		case <-tick.C:
		}
	}
}

func (c *ResumingClient) logf(format string, args ...any) {
	if c.cfg.Logf != nil {
		c.cfg.Logf(c.cfg.Name+": "+format, args...)
	}
}

func (c *ResumingClient) session() clientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess
}

// reinit initializes a new session unless the session of generation gen
// was already replaced (another goroutine saw the 404 first). gen -1: the
// first initialization.
func (c *ResumingClient) reinit(ctx context.Context, gen int) error {
	c.initMu.Lock()
	defer c.initMu.Unlock()
	if cur := c.session(); gen >= 0 && cur.gen != gen {
		return nil
	}
	backoff := c.cfg.MinBackoff
	var last error
	for range c.cfg.CallAttempts {
		raw := NewClient(c.cfg.URL)
		raw.HTTP = c.hc
		if _, err := raw.Initialize(ctx); err == nil {
			c.mu.Lock()
			c.sess = clientSession{id: raw.SessionID, version: raw.ProtocolVersion, gen: c.sess.gen + 1}
			if gen >= 0 {
				c.stats.Reinits++
			}
			c.mu.Unlock()
			if gen >= 0 {
				c.logf("re-initialized: the session was gone")
			}
			return nil
		} else {
			last = err
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			break
		}
		backoff = min(2*backoff, c.cfg.MaxBackoff)
	}
	return fmt.Errorf("initialize: %w", last)
}

// newRequest builds a request for the session s.
func (c *ResumingClient) newRequest(ctx context.Context, s clientSession, method string, body []byte) (*http.Request, error) {
	raw := Client{URL: c.cfg.URL, SessionID: s.id, ProtocolVersion: s.version}
	return raw.NewRequest(ctx, method, body)
}

// reply answers a request the server sent on a stream: pings with an
// empty result, anything else with "method not found". It runs on its own
// goroutine (joined by Close), bounded by CallTimeout.
func (c *ResumingClient) reply(s clientSession, m Message) {
	c.closeMu.Lock()
	defer c.closeMu.Unlock()
	if c.closed || c.life == nil {
		return
	}
	life := c.life
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		msg := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		if m.Method == "ping" {
			msg["result"] = map[string]any{}
		} else {
			msg["error"] = map[string]any{"code": -32601, "message": "the resuming client answers only pings"}
		}
		body, err := json.Marshal(msg)
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(life, c.cfg.CallTimeout)
		defer cancel()
		req, err := c.newRequest(ctx, s, http.MethodPost, body)
		if err != nil {
			return
		}
		if resp, err := c.hc.Do(req); err == nil {
			drainClose(resp)
		}
	}()
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errGone says the server answered 404: the session is gone.
var errGone = errors.New("the session is gone (404)")

// Delete ends the current session (DELETE) and returns the status.
func (c *ResumingClient) Delete(ctx context.Context) (int, error) {
	req, err := c.newRequest(ctx, c.session(), http.MethodDelete, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("DELETE: %w", err)
	}
	drainClose(resp)
	return resp.StatusCode, nil
}
