package streamable

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// A 2026-07-28 subscriptions/listen request is served like any request of
// that version (serveModern: its own ephemeral session, the session-era
// request path), and mcp-go's handler for the method does the protocol's
// part: it intersects the client's filter with the server's capabilities,
// records it on the request's session (SetSubscriptionFilter, which
// lifeline's requestSession hands to the stream's listenFeed), subscribes
// the resources asked for, queues the acknowledgement, blocks until the
// request's context ends, and returns the final result.
//
// lifeline does the transport's part. Broadcasts never reach the stream
// through mcp-go: the session is not registered with the MCPServer.
// Instead the Handler's broadcast tap (broadcast.go), a session of its own
// that mcp-go broadcasts to, hands each broadcast to every listenFeed
// (with replicas, to every replica's, over the store), which keeps what
// its filter lets through until the stream's writer takes it:
//   - nothing before the acknowledgement: what arrives first waits in the
//     feed until the writer has written the acknowledgement;
//   - every message is tagged with the subscription id (the listen
//     request's id) in _meta;
//   - nothing dropped: a notification identical to one not yet written
//     (a list change, or an update of the same resource) is coalesced into
//     it, so a feed holds at most 3 + its resource subscriptions;
//   - keep-alive comments every heartbeat interval, and every write under
//     the write timeout (the request's writer, post_writer.go);
//   - ended at once by Shutdown with the final result (shutdown.go).

// listenFeed holds what is bound for one listen stream and not yet
// written.
type listenFeed struct {
	subID json.RawMessage // the listen request's id: the subscription id
	wake  chan struct{}   // one value when pending grows

	mu      sync.Mutex
	filter  mcp.SubscriptionFilter
	uris    map[string]struct{}       // filter.ResourceSubscriptions
	active  bool                      // mcp-go has recorded the filter
	pending []mcp.JSONRPCNotification // oldest first
	keys    map[string]struct{}       // coalescing keys of pending

	acked bool // the writer has written the acknowledgement (writer-owned)
}

func newListenFeed(id json.RawMessage) *listenFeed {
	return &listenFeed{subID: id, wake: make(chan struct{}, 1)}
}

// setFilter records the filter mcp-go established (the zero filter when
// the stream ends: nothing more is taken).
func (f *listenFeed) setFilter(filter mcp.SubscriptionFilter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.filter = filter
	f.active = !filter.IsEmpty()
	f.uris = make(map[string]struct{}, len(filter.ResourceSubscriptions))
	for _, u := range filter.ResourceSubscriptions {
		f.uris[u] = struct{}{}
	}
}

func (f *listenFeed) currentFilter() (mcp.SubscriptionFilter, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.filter, f.active
}

// offer keeps n for the stream if its filter asks for it, coalesced into
// an identical one not yet written, and wakes the writer.
func (f *listenFeed) offer(n mcp.JSONRPCNotification) {
	f.mu.Lock()
	key, ok := f.wants(n)
	if ok {
		if _, dup := f.keys[key]; !dup {
			if f.keys == nil {
				f.keys = make(map[string]struct{})
			}
			f.keys[key] = struct{}{}
			f.pending = append(f.pending, n)
		}
	}
	f.mu.Unlock()
	if ok {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
}

// wants reports whether the filter asks for n, and its coalescing key.
// Callers hold f.mu.
func (f *listenFeed) wants(n mcp.JSONRPCNotification) (string, bool) {
	if !f.active {
		return "", false
	}
	switch n.Method {
	case string(mcp.MethodNotificationToolsListChanged):
		return n.Method, f.filter.ToolsListChanged
	case string(mcp.MethodNotificationPromptsListChanged):
		return n.Method, f.filter.PromptsListChanged
	case string(mcp.MethodNotificationResourcesListChanged):
		return n.Method, f.filter.ResourcesListChanged
	case mcp.MethodNotificationResourceUpdated:
		uri, _ := n.Params.AdditionalFields["uri"].(string)
		if _, ok := f.uris[uri]; ok {
			return n.Method + "\x00" + uri, true
		}
	}
	// Opt-in is absolute (SEP-2575): nothing outside the filter's
	// vocabulary reaches a listen stream.
	return "", false
}

// take returns what is pending, oldest first, and empties the feed.
func (f *listenFeed) take() []mcp.JSONRPCNotification {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.pending
	f.pending = nil
	clear(f.keys)
	return out
}

// tag returns n with the subscription id added to its _meta (a copy: the
// same broadcast goes to many streams).
func (f *listenFeed) tag(n mcp.JSONRPCNotification) mcp.JSONRPCNotification {
	meta := make(map[string]any, len(n.Params.Meta)+1)
	for k, v := range n.Params.Meta {
		meta[k] = v
	}
	meta[mcp.MetaKeySubscriptionID] = f.subID
	n.Params.Meta = meta
	return n
}

// listenSet is the Handler's open listen streams, at most
// Config.MaxListenStreams.
type listenSet struct {
	mu    sync.Mutex
	feeds map[*listenFeed]struct{}
}

// open adds a feed for the listen request id, or returns the 503 past the
// cap.
func (l *listenSet) open(id json.RawMessage, limit int) (*listenFeed, *failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.feeds) >= limit {
		return nil, errTooManyListenStreams(limit, DefaultRetryAfter)
	}
	if l.feeds == nil {
		l.feeds = make(map[*listenFeed]struct{})
	}
	f := newListenFeed(id)
	l.feeds[f] = struct{}{}
	return f, nil
}

func (l *listenSet) close(f *listenFeed) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.feeds, f)
}

func (l *listenSet) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.feeds)
}

// offer hands n to every open feed.
func (l *listenSet) offer(n mcp.JSONRPCNotification) {
	l.mu.Lock()
	feeds := make([]*listenFeed, 0, len(l.feeds))
	for f := range l.feeds {
		feeds = append(feeds, f)
	}
	l.mu.Unlock()
	for _, f := range feeds {
		f.offer(n)
	}
}

// serveListen serves a subscriptions/listen request on sess, its own
// ephemeral session: the request's writer also writes what its feed takes.
func (h *Handler) serveListen(w http.ResponseWriter, r *http.Request, sess *session, env *envelope, body []byte, feed *listenFeed) {
	h.ensureTap()
	h.runRequestOn(w, r, sess, env, body, nil, feed)
}

// sendFeed writes what the feed holds, tagged, in one write. Called by the
// writer once the acknowledgement is out.
func (p *postStream) sendFeed() {
	notes := p.feed.take()
	if len(notes) == 0 {
		return
	}
	batch := make([][]byte, 0, len(notes))
	for _, n := range notes {
		if b := p.h.encodeNotification(p.sess.id, p.feed.tag(n)); b != nil {
			batch = append(batch, b)
		}
	}
	if len(batch) > 0 {
		p.send(batch...)
	}
}

// SetSubscriptionFilter implements server.SessionWithSubscriptionFilter:
// mcp-go records a listen stream's filter through it.
func (r *requestSession) SetSubscriptionFilter(filter mcp.SubscriptionFilter) {
	if r.feed != nil {
		r.feed.setFilter(filter)
	}
}

// SubscriptionFilter implements server.SessionWithSubscriptionFilter.
func (r *requestSession) SubscriptionFilter() (mcp.SubscriptionFilter, bool) {
	if r.feed != nil {
		return r.feed.currentFilter()
	}
	return mcp.SubscriptionFilter{}, false
}
